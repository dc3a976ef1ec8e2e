//! Whether telemetry is on, and how: the `telemetry` block of the user's own settings file and
//! `CORVID_ENABLE_TELEMETRY`. A project's file is never read here: a repository must not make
//! corvid send its sessions anywhere (the core warns that a project's block is ignored). Where
//! the export goes is the standard `OTEL_EXPORTER_OTLP_*` environment, read by the exporter.

use std::collections::BTreeMap;

use serde_json::Value;

/// Env var that turns telemetry on (`1`, `true`) or off (`0`, `false`) over the settings.
pub const ENABLE_ENV: &str = "CORVID_ENABLE_TELEMETRY";

/// The telemetry set-up of a run that exports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    /// `telemetry.logPrompts`: prompt text, tool input and tool output go out too.
    pub log_prompts: bool,
    /// `telemetry.prices`: per model, what a million tokens cost (for `corvid.cost`).
    pub prices: BTreeMap<String, Price>,
}

/// A model's prices in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    /// Input read from the provider's cache (default: the input price).
    pub cached_input: f64,
}

impl Price {
    /// What a response with these counts cost; `cached` is part of `input`.
    pub fn cost(&self, input: u64, cached: u64, output: u64) -> f64 {
        let fresh = input.saturating_sub(cached);
        (fresh as f64 * self.input
            + cached as f64 * self.cached_input
            + output as f64 * self.output)
            / 1_000_000.0
    }
}

/// The set-up from the user's settings text (`None` when there is no file) and the
/// environment: `Ok(None)` when telemetry is off, `Err` naming the key or variable that is
/// wrong (telemetry then stays off; the caller warns).
pub fn resolve(
    user_settings: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<Config>, String> {
    let block = match user_settings {
        Some(text) => telemetry_block(text)?,
        None => None,
    };
    let from_file = match &block {
        Some(b) => flag(b, "enabled")?,
        None => false,
    };
    let enabled = match env(ENABLE_ENV).as_deref().map(str::trim) {
        None | Some("") => from_file,
        Some("1" | "true") => true,
        Some("0" | "false") => false,
        Some(other) => {
            return Err(format!(
                "{ENABLE_ENV}={other} is not understood; use 1 to turn telemetry on or 0 to \
                 turn it off (telemetry stays off)"
            ));
        }
    };
    if !enabled {
        return Ok(None);
    }
    let Some(block) = block else {
        return Ok(Some(Config::default()));
    };
    Ok(Some(Config {
        log_prompts: flag(&block, "logPrompts")?,
        prices: prices(&block)?,
    }))
}

/// A warning for each OTLP protocol variable corvid cannot honour (`http/json` is not built
/// in; anything else is a typo): the exporter then falls back to `http/protobuf`, which the
/// user should know before looking for their data on a grpc port.
pub fn protocol_warnings(env: impl Fn(&str) -> Option<String>) -> Vec<String> {
    [
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    ]
    .into_iter()
    .filter_map(|name| {
        let value = env(name)?;
        match value.trim() {
            "" | "http/protobuf" | "grpc" => None,
            other => Some(format!(
                "{name}={other} is not supported; use http/protobuf or grpc (exporting with \
                 http/protobuf)"
            )),
        }
    })
    .collect()
}

/// Whether a signal's exporter (`TRACES` or `METRICS`) speaks grpc to an `https` endpoint,
/// by the standard variables (the signal's own first). The OTLP crate then connects with TLS
/// but trusts no root unless told: corvid gives it the system's.
pub fn grpc_over_tls(signal: &str, env: impl Fn(&str) -> Option<String>) -> bool {
    let read = |what: &str| {
        env(&format!("OTEL_EXPORTER_OTLP_{signal}_{what}"))
            .or_else(|| env(&format!("OTEL_EXPORTER_OTLP_{what}")))
            .map(|v| v.trim().to_ascii_lowercase())
    };
    read("PROTOCOL").as_deref() == Some("grpc")
        && read("ENDPOINT").is_some_and(|e| e.starts_with("https://"))
}

/// Whether the user named the service (`OTEL_SERVICE_NAME`, or `service.name` in
/// `OTEL_RESOURCE_ATTRIBUTES`): corvid calls itself `corvid` only when they did not.
pub fn service_named_by_user(env: impl Fn(&str) -> Option<String>) -> bool {
    let named = env("OTEL_SERVICE_NAME").is_some_and(|n| !n.trim().is_empty());
    let in_attributes = env("OTEL_RESOURCE_ATTRIBUTES").is_some_and(|attrs| {
        attrs
            .split(',')
            .filter_map(|pair| pair.split_once('='))
            .any(|(key, value)| key.trim() == "service.name" && !value.trim().is_empty())
    });
    named || in_attributes
}

/// The `telemetry` object of a settings file (JSON with comments); a file the core cannot
/// read either is reported by the core, so it only means "no block" here.
fn telemetry_block(text: &str) -> Result<Option<serde_json::Map<String, Value>>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Ok(Value::Object(mut root)) = json5::from_str::<Value>(text) else {
        return Ok(None);
    };
    match root.remove("telemetry") {
        None => Ok(None),
        Some(Value::Object(block)) => Ok(Some(block)),
        Some(_) => Err("settings key `telemetry` must be an object (telemetry stays off)".into()),
    }
}

fn flag(block: &serde_json::Map<String, Value>, key: &str) -> Result<bool, String> {
    match block.get(key) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(format!(
            "settings key `telemetry.{key}` must be true or false (telemetry stays off)"
        )),
    }
}

fn prices(block: &serde_json::Map<String, Value>) -> Result<BTreeMap<String, Price>, String> {
    let wrong = |model: &str| {
        format!(
            "settings key `telemetry.prices.{model}` must be an object like {{\"input\": 3, \
             \"output\": 15, \"cachedInput\": 0.3}} in dollars per million tokens (telemetry \
             stays off)"
        )
    };
    let Some(table) = block.get("prices") else {
        return Ok(BTreeMap::new());
    };
    let Value::Object(table) = table else {
        return Err(
            "settings key `telemetry.prices` must be an object keyed by model name \
                    (telemetry stays off)"
                .into(),
        );
    };
    let mut out = BTreeMap::new();
    for (model, entry) in table {
        let number = |key: &str| match entry.get(key) {
            Some(v) => v.as_f64().filter(|n| n.is_finite() && *n >= 0.0),
            None => None,
        };
        let (Some(input), Some(output)) = (number("input"), number("output")) else {
            return Err(wrong(model));
        };
        let cached_input = match entry.get("cachedInput") {
            None => input,
            Some(_) => number("cachedInput").ok_or_else(|| wrong(model))?,
        };
        out.insert(
            model.clone(),
            Price {
                input,
                output,
                cached_input,
            },
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |key| {
            pairs
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn telemetry_is_off_without_the_setting_or_the_variable() {
        assert_eq!(resolve(None, env(&[])), Ok(None));
        assert_eq!(resolve(Some(r#"{"ui": {}}"#), env(&[])), Ok(None));
        assert_eq!(
            resolve(Some(r#"{"telemetry": {"logPrompts": true}}"#), env(&[])),
            Ok(None)
        );
    }

    #[test]
    fn the_variable_turns_telemetry_on_and_off_over_the_settings() {
        assert_eq!(
            resolve(None, env(&[(ENABLE_ENV, "1")])),
            Ok(Some(Config::default()))
        );
        let on = r#"{"telemetry": {"enabled": true, "logPrompts": true}}"#;
        assert_eq!(resolve(Some(on), env(&[(ENABLE_ENV, "0")])), Ok(None));
        assert_eq!(
            resolve(Some(on), env(&[])),
            Ok(Some(Config {
                log_prompts: true,
                prices: BTreeMap::new()
            }))
        );
        assert!(
            resolve(Some(on), env(&[(ENABLE_ENV, "yes")]))
                .unwrap_err()
                .contains(ENABLE_ENV)
        );
    }

    #[test]
    fn prices_are_read_per_model_and_price_the_cached_input_apart() {
        let text = r#"{
            // comments are fine
            "telemetry": {"enabled": true, "prices": {
                "m": {"input": 2, "output": 8, "cachedInput": 0.5},
                "n": {"input": 1, "output": 4}
            }}
        }"#;
        let config = resolve(Some(text), env(&[])).unwrap().unwrap();
        let m = config.prices["m"];
        assert_eq!(m.cost(1_000_000, 500_000, 1_000_000), 1.0 + 0.25 + 8.0);
        assert_eq!(config.prices["n"].cached_input, 1.0);
    }

    #[test]
    fn a_protocol_corvid_cannot_speak_is_named_in_a_warning() {
        assert!(protocol_warnings(env(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")])).is_empty());
        let warnings = protocol_warnings(env(&[
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"),
        ]));
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].starts_with("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json"));
    }

    #[test]
    fn grpc_to_an_https_endpoint_is_told_apart_per_signal() {
        let tls = |pairs: &[(&str, &str)], signal: &str| {
            let pairs: Vec<(String, String)> = pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            grpc_over_tls(signal, |key: &str| {
                pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
            })
        };
        let https = ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector:4317");
        let grpc = ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc");
        assert!(tls(&[https, grpc], "TRACES"));
        assert!(!tls(&[https], "TRACES"));
        let plain = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4317");
        assert!(!tls(&[plain, grpc], "TRACES"));
        let metrics_plain = (
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
            "http://localhost:4317",
        );
        assert!(tls(&[https, grpc, metrics_plain], "TRACES"));
        assert!(!tls(&[https, grpc, metrics_plain], "METRICS"));
        let traces_http = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf");
        assert!(!tls(&[https, grpc, traces_http], "TRACES"));
    }

    #[test]
    fn the_service_is_called_corvid_unless_the_user_named_it() {
        assert!(!service_named_by_user(env(&[])));
        assert!(!service_named_by_user(env(&[("OTEL_SERVICE_NAME", " ")])));
        assert!(!service_named_by_user(env(&[(
            "OTEL_RESOURCE_ATTRIBUTES",
            "team=tools,service.version=2"
        )])));
        assert!(service_named_by_user(env(&[(
            "OTEL_SERVICE_NAME",
            "agent"
        )])));
        assert!(service_named_by_user(env(&[(
            "OTEL_RESOURCE_ATTRIBUTES",
            "team=tools, service.name=agent"
        )])));
    }

    #[test]
    fn a_wrong_value_names_its_key_and_keeps_telemetry_off() {
        for (text, key) in [
            (r#"{"telemetry": true}"#, "`telemetry`"),
            (r#"{"telemetry": {"enabled": "yes"}}"#, "telemetry.enabled"),
            (
                r#"{"telemetry": {"enabled": true, "prices": {"m": {"input": -1, "output": 1}}}}"#,
                "telemetry.prices.m",
            ),
        ] {
            let err = resolve(Some(text), env(&[])).unwrap_err();
            assert!(err.contains(key), "{err}");
        }
    }
}
