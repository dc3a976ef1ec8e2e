//! Which fields of an incoming request corvid does not understand and so ignores.
//!
//! Clients send fields from newer protocol versions or their own extensions; a prompt must not
//! fail because of them (they are accepted), but a user debugging an editor integration should
//! see what was dropped. Only computed when debug logging is on, so the hot path pays nothing.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The methods whose ignored fields are logged, with the typed request each one becomes.
pub(crate) fn log_ignored(line: &str) {
    if !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    let Ok(message) = serde_json::from_str::<Value>(line) else {
        return;
    };
    let (Some(method), Some(params)) = (
        message.get("method").and_then(Value::as_str),
        message.get("params"),
    ) else {
        return;
    };
    let ignored = match method {
        "session/prompt" => ignored_by::<agent_client_protocol::v1::schema::PromptRequest>(params),
        _ => return,
    };
    if !ignored.is_empty() {
        tracing::debug!(method, fields = ?ignored, "ignored request fields corvid does not know");
    }
}

/// The paths (`prompt[0].foo`) present in `raw` that `T` drops when it reads and writes it
/// back, sorted; empty when `raw` is not a valid `T` (the request's own error says why).
pub(crate) fn ignored_by<T: DeserializeOwned + Serialize>(raw: &Value) -> Vec<String> {
    let Ok(typed) = serde_json::from_value::<T>(raw.clone()) else {
        return Vec::new();
    };
    let Ok(kept) = serde_json::to_value(typed) else {
        return Vec::new();
    };
    let mut ignored = Vec::new();
    missing(raw, &kept, String::new(), &mut ignored);
    ignored.sort();
    ignored
}

fn missing(raw: &Value, kept: &Value, at: String, out: &mut Vec<String>) {
    match (raw, kept) {
        (Value::Object(raw), Value::Object(kept)) => {
            for (key, value) in raw {
                let path = if at.is_empty() {
                    key.clone()
                } else {
                    format!("{at}.{key}")
                };
                match kept.get(key) {
                    Some(kept_value) => missing(value, kept_value, path, out),
                    // A null the type leaves out carries nothing that was lost.
                    None if value.is_null() => {}
                    None => out.push(path),
                }
            }
        }
        (Value::Array(raw), Value::Array(kept)) => {
            for (i, (value, kept_value)) in raw.iter().zip(kept).enumerate() {
                missing(value, kept_value, format!("{at}[{i}]"), out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::PromptRequest;
    use serde_json::json;

    #[test]
    fn unknown_fields_of_a_prompt_and_its_blocks_are_named_and_known_ones_are_not() {
        let raw = json!({
            "sessionId": "s1",
            "prompt": [
                {"type": "text", "text": "hi", "sparkle": 3},
                {"type": "text", "text": "there"}
            ],
            "clientTraceId": "abc",
            "_meta": {"x": 1}
        });
        assert_eq!(
            ignored_by::<PromptRequest>(&raw),
            vec!["clientTraceId".to_owned(), "prompt[0].sparkle".to_owned()]
        );
    }

    #[test]
    fn a_prompt_without_extra_fields_ignores_nothing() {
        let raw = json!({"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}]});
        assert_eq!(ignored_by::<PromptRequest>(&raw), Vec::<String>::new());
    }

    #[test]
    fn a_request_that_is_not_a_prompt_at_all_reports_nothing() {
        assert_eq!(
            ignored_by::<PromptRequest>(&json!({"x": 1})),
            Vec::<String>::new()
        );
    }
}
