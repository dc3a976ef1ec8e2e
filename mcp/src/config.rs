//! Server configurations: the `mcpServers` settings block (the shape Claude Code, Gemini CLI
//! and Qwen Code users already have) and the `mcpServers` an ACP client sends.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};

/// How long a call may take when the server's `timeout` is not set.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// One configured MCP server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// The key under `mcpServers` (the `<server>` of `mcp__<server>__<tool>`).
    pub name: String,
    pub transport: Transport,
    /// How long one call (and the start-up handshake) may take.
    pub timeout: Duration,
    /// `enabled: false` (or `disabled: true`) keeps it configured but never started.
    pub enabled: bool,
    /// `trust: true`: its calls never ask for approval (and its tools' hints are believed).
    pub trust: bool,
    /// `trustHints: true`: its tools' annotations are believed, so a tool claiming
    /// `readOnlyHint` runs like a read (unasked, in plan mode, in read-only subagents).
    /// Without it (or `trust`) a hint is a claim, and the tool is treated as one that acts.
    /// Only the user's settings and an editor may set it.
    pub trust_hints: bool,
    /// `includeTools`: only these tools (by the server's own names), when set.
    pub include_tools: Option<Vec<String>>,
    /// `excludeTools`: never these tools; wins over `includeTools`.
    pub exclude_tools: Vec<String>,
}

impl ServerConfig {
    /// The environment variables its settings reference (`${VAR}`, `$VAR`), so settings
    /// loading can refuse a project's server that would be handed the model keys.
    pub fn variables(&self) -> Vec<String> {
        let texts: Vec<&str> = match &self.transport {
            Transport::Stdio {
                command, args, env, ..
            } => std::iter::once(command.as_str())
                .chain(args.iter().map(String::as_str))
                .chain(env.iter().map(|(_, Redacted(v))| v.as_str()))
                .collect(),
            Transport::Http { url, headers } => std::iter::once(url.as_str())
                .chain(headers.iter().map(|(_, Redacted(v))| v.as_str()))
                .collect(),
        };
        texts
            .into_iter()
            .flat_map(crate::expand::references)
            .collect()
    }
}

/// How corvid reaches a server.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Added to the (filtered) environment corvid passes on; values may hold `${VAR}`.
        env: Vec<(String, Redacted)>,
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint.
    Http {
        url: String,
        /// Sent with every request; values may hold `${VAR}`.
        headers: Vec<(String, Redacted)>,
    },
}

/// A value that may be a secret (an API token in a header or the environment): it is never
/// shown by `Debug`, so it cannot reach a log line or a recording by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct Redacted(pub String);

impl fmt::Debug for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// A configuration entry that cannot be used; `key` is its full settings path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("settings key `{key}` {message}")]
pub struct ConfigError {
    pub key: String,
    pub message: String,
}

/// Parses a `mcpServers` object; unknown keys become warnings, anything unusable an error
/// naming its key. Servers come in name order, the same on every start.
pub fn parse_servers(
    value: &Value,
    warnings: &mut Vec<String>,
) -> Result<Vec<ServerConfig>, ConfigError> {
    let servers = match value {
        Value::Null => return Ok(Vec::new()),
        Value::Object(servers) => servers,
        other => return Err(wrong("mcpServers", "an object of servers by name", other)),
    };
    // Sorted here: whether JSON objects keep their order depends on crate features.
    let mut sorted: Vec<_> = servers.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    sorted
        .into_iter()
        .map(|(name, entry)| parse_server(name, entry, warnings))
        .collect()
}

fn parse_server(
    name: &str,
    entry: &Value,
    warnings: &mut Vec<String>,
) -> Result<ServerConfig, ConfigError> {
    let at = |k: &str| format!("mcpServers.{name}.{k}");
    let Value::Object(obj) = entry else {
        return Err(wrong(&format!("mcpServers.{name}"), "an object", entry));
    };
    if name.trim().is_empty() {
        return Err(ConfigError {
            key: "mcpServers".into(),
            message: "has a server with an empty name".into(),
        });
    }
    let mut config = ServerConfig {
        name: name.to_owned(),
        transport: Transport::Stdio {
            command: String::new(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
        },
        timeout: DEFAULT_CALL_TIMEOUT,
        enabled: true,
        trust: false,
        trust_hints: false,
        include_tools: None,
        exclude_tools: Vec::new(),
    };
    let (mut command, mut args, mut env, mut cwd) = (None, Vec::new(), Vec::new(), None);
    let (mut url, mut headers, mut kind) = (None, Vec::new(), None);
    for (k, v) in obj {
        let key = at(k);
        match k.as_str() {
            "command" => command = Some(string(&key, v)?),
            "args" => args = strings(&key, v)?,
            "env" => env = pairs(&key, v)?,
            "cwd" => cwd = Some(PathBuf::from(string(&key, v)?)),
            "url" | "httpUrl" => url = Some(string(&key, v)?),
            "headers" => headers = pairs(&key, v)?,
            "type" | "transport" => kind = Some(string(&key, v)?),
            "timeout" => {
                let ms = v
                    .as_u64()
                    .filter(|ms| *ms > 0)
                    .ok_or_else(|| wrong(&key, "a whole number of milliseconds above 0", v))?;
                config.timeout = Duration::from_millis(ms);
            }
            "enabled" => config.enabled = boolean(&key, v)?,
            "disabled" => config.enabled = !boolean(&key, v)?,
            "trust" => config.trust = boolean(&key, v)?,
            "trustHints" => config.trust_hints = boolean(&key, v)?,
            "includeTools" => config.include_tools = Some(strings(&key, v)?),
            "excludeTools" => config.exclude_tools = strings(&key, v)?,
            // Descriptions and editor hints configure nothing here.
            "description" | "autoApprove" | "alwaysAllow" => {}
            _ => warnings.push(format!("unknown settings key `{key}` (ignored)")),
        }
    }
    config.transport = match (command, url, kind.as_deref()) {
        (_, _, Some("sse")) => {
            return Err(ConfigError {
                key: at("type"),
                message: "is `sse`, which corvid does not support: use the server's streamable HTTP endpoint (`httpUrl`)".into(),
            });
        }
        (Some(_), Some(_), _) => {
            return Err(ConfigError {
                key: format!("mcpServers.{name}"),
                message: "sets both `command` and `url`; a server is either a command (stdio) or a URL (streamable HTTP)".into(),
            });
        }
        (Some(command), None, _) if !command.trim().is_empty() => Transport::Stdio {
            command,
            args,
            env,
            cwd,
        },
        (None, Some(url), _) if !url.trim().is_empty() => Transport::Http { url, headers },
        _ => {
            return Err(ConfigError {
                key: format!("mcpServers.{name}"),
                message:
                    "needs a `command` (stdio server) or a `url`/`httpUrl` (streamable HTTP server)"
                        .into(),
            });
        }
    };
    Ok(config)
}

/// The `mcpServers` of an ACP `session/new` or `session/load`, as the client sent them
/// (`{name, command, args, env: [{name, value}]}` or `{type: "http", name, url, headers}`).
/// Editors' servers are trusted like the user's own settings: the user configured them there.
pub fn parse_acp_servers(values: &[Value]) -> Result<Vec<ServerConfig>, ConfigError> {
    values
        .iter()
        .enumerate()
        .map(|(i, value)| {
            let key = format!("mcpServers[{i}]");
            let Value::Object(obj) = value else {
                return Err(wrong(&key, "an object", value));
            };
            let name = match obj.get("name") {
                Some(Value::String(name)) if !name.trim().is_empty() => name.clone(),
                _ => {
                    return Err(ConfigError {
                        key,
                        message: "needs a non-empty `name`".into(),
                    });
                }
            };
            let mut entry = Map::new();
            for (k, v) in obj {
                match k.as_str() {
                    "name" | "_meta" => {}
                    "env" | "headers" => {
                        entry.insert(k.clone(), name_value_list(&format!("{key}.{k}"), v)?);
                    }
                    _ => {
                        entry.insert(k.clone(), v.clone());
                    }
                }
            }
            let mut ignored = Vec::new();
            parse_server(&name, &Value::Object(entry), &mut ignored)
        })
        .collect()
}

/// ACP's `[{name, value}]` lists as the settings' `{name: value}` object.
fn name_value_list(key: &str, value: &Value) -> Result<Value, ConfigError> {
    let Value::Array(items) = value else {
        return Err(wrong(key, "a list of {name, value} objects", value));
    };
    let mut out = Map::new();
    for item in items {
        match (item.get("name"), item.get("value")) {
            (Some(Value::String(n)), Some(v @ Value::String(_))) => {
                out.insert(n.clone(), v.clone());
            }
            _ => {
                return Err(wrong(
                    &format!("{key}[]"),
                    "a {name, value} object of strings",
                    item,
                ));
            }
        }
    }
    Ok(Value::Object(out))
}

fn string(key: &str, v: &Value) -> Result<String, ConfigError> {
    v.as_str()
        .map(str::to_owned)
        .ok_or_else(|| wrong(key, "a string", v))
}

fn boolean(key: &str, v: &Value) -> Result<bool, ConfigError> {
    v.as_bool().ok_or_else(|| wrong(key, "true or false", v))
}

fn strings(key: &str, v: &Value) -> Result<Vec<String>, ConfigError> {
    let Value::Array(items) = v else {
        return Err(wrong(key, "a list of strings", v));
    };
    items
        .iter()
        .map(|item| string(&format!("{key}[]"), item))
        .collect()
}

fn pairs(key: &str, v: &Value) -> Result<Vec<(String, Redacted)>, ConfigError> {
    let Value::Object(obj) = v else {
        return Err(wrong(key, "an object of names to strings", v));
    };
    obj.iter()
        .map(|(name, value)| {
            Ok((
                name.clone(),
                Redacted(string(&format!("{key}.{name}"), value)?),
            ))
        })
        .collect()
}

/// A wrong JSON type; the value itself is not shown (it may be a secret).
fn wrong(key: &str, expected: &str, found: &Value) -> ConfigError {
    let found = corvid_tools::type_name(found);
    ConfigError {
        key: key.to_owned(),
        message: format!("must be {expected}, found {found}"),
    }
}
