//! `mcpServers` as users paste it from Claude Code, Gemini CLI or Qwen Code, and as ACP clients
//! send it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use corvid_mcp::config::{DEFAULT_CALL_TIMEOUT, Redacted};
use corvid_mcp::{ServerConfig, Transport, parse_acp_servers, parse_servers};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn parse(value: Value) -> (Vec<ServerConfig>, Vec<String>) {
    let mut warnings = Vec::new();
    let servers = parse_servers(&value, &mut warnings).unwrap();
    (servers, warnings)
}

fn error(value: Value) -> String {
    parse_servers(&value, &mut Vec::new())
        .unwrap_err()
        .to_string()
}

#[test]
fn a_gemini_style_block_parses_stdio_and_http_servers_with_their_options() {
    let (servers, warnings) = parse(json!({
        "files": {
            "command": "npx", "args": ["-y", "@scope/files"], "env": {"TOKEN": "${FILES_TOKEN}"},
            "cwd": "tools", "timeout": 30000, "trust": true,
            "includeTools": ["read"], "excludeTools": ["write"], "description": "files"
        },
        "web": {"httpUrl": "https://mcp.example/mcp", "headers": {"Authorization": "Bearer ${KEY}"}},
        "claude": {"type": "http", "url": "http://127.0.0.1:9/mcp"},
        "off": {"command": "x", "disabled": true, "colour": "blue"}
    }));
    assert_eq!(
        warnings,
        ["unknown settings key `mcpServers.off.colour` (ignored)"]
    );
    let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["claude", "files", "off", "web"]);
    assert_eq!(
        servers[1],
        ServerConfig {
            name: "files".into(),
            transport: Transport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "@scope/files".into()],
                env: vec![("TOKEN".into(), Redacted("${FILES_TOKEN}".into()))],
                cwd: Some("tools".into()),
            },
            timeout: Duration::from_millis(30_000),
            enabled: true,
            trust: true,
            trust_hints: false,
            include_tools: Some(vec!["read".into()]),
            exclude_tools: vec!["write".into()],
        }
    );
    assert_eq!(
        servers[3].transport,
        Transport::Http {
            url: "https://mcp.example/mcp".into(),
            headers: vec![("Authorization".into(), Redacted("Bearer ${KEY}".into()))],
        }
    );
    assert_eq!(servers[3].timeout, DEFAULT_CALL_TIMEOUT);
    assert!(matches!(servers[0].transport, Transport::Http { .. }));
    assert!(!servers[2].enabled);
}

#[test]
fn secrets_in_headers_and_env_never_show_in_debug_output() {
    let (servers, _) = parse(json!({
        "web": {"url": "https://x/mcp", "headers": {"Authorization": "Bearer sk-live-123"}},
        "cli": {"command": "srv", "env": {"API_KEY": "sk-live-456"}}
    }));
    let shown = format!("{servers:?}");
    assert!(!shown.contains("sk-live"), "{shown}");
    assert!(shown.contains("Authorization") && shown.contains("<redacted>"));
}

#[test]
fn unusable_entries_are_errors_naming_their_key() {
    assert_eq!(
        error(json!({"a": {"args": ["x"]}})),
        "settings key `mcpServers.a` needs a `command` (stdio server) or a `url`/`httpUrl` \
         (streamable HTTP server)"
    );
    assert_eq!(
        error(json!({"a": {"command": "x", "url": "http://h/mcp"}})),
        "settings key `mcpServers.a` sets both `command` and `url`; a server is either a command \
         (stdio) or a URL (streamable HTTP)"
    );
    assert!(error(json!({"a": {"type": "sse", "url": "http://h/sse"}})).contains("`sse`"));
    assert_eq!(
        error(json!({"a": {"command": "x", "timeout": 0}})),
        "settings key `mcpServers.a.timeout` must be a whole number of milliseconds above 0, \
         found a number"
    );
    assert_eq!(
        error(json!({"a": {"command": "x", "env": {"K": 5}}})),
        "settings key `mcpServers.a.env.K` must be a string, found a number"
    );
    assert_eq!(
        error(json!(["a"])),
        "settings key `mcpServers` must be an object of servers by name, found an array"
    );
}

#[test]
fn acp_session_servers_use_name_value_lists() {
    let servers = parse_acp_servers(&[
        json!({"name": "files", "command": "/bin/files", "args": ["--ro"],
               "env": [{"name": "TOKEN", "value": "t"}]}),
        json!({"type": "http", "name": "web", "url": "https://x/mcp",
               "headers": [{"name": "Authorization", "value": "Bearer t"}]}),
    ])
    .unwrap();
    assert_eq!(
        servers[0].transport,
        Transport::Stdio {
            command: "/bin/files".into(),
            args: vec!["--ro".into()],
            env: vec![("TOKEN".into(), Redacted("t".into()))],
            cwd: None,
        }
    );
    assert_eq!(
        (servers[1].name.as_str(), &servers[1].transport),
        (
            "web",
            &Transport::Http {
                url: "https://x/mcp".into(),
                headers: vec![("Authorization".into(), Redacted("Bearer t".into()))],
            }
        )
    );
    let err = parse_acp_servers(&[json!({"command": "x"})]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "settings key `mcpServers[0]` needs a non-empty `name`"
    );
}
