//! Real MCP servers through corvid-mcp: the third-party `@modelcontextprotocol/server-everything`
//! over stdio and streamable HTTP, and a small faulty server written with the official SDK
//! (`tests/mcp`, installed by `tests/run.sh`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use corvid_mcp::{Launch, McpServers, ServerConfig, Status, parse_servers};
use corvid_protocol::{Provenance, ToolKind, ToolResource};
use corvid_tools::{ApprovalNeed, Tool, ToolContext, ToolSource};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// `tests/mcp`, where the servers and their `node_modules` live; missing packages fail the test.
fn servers_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp");
    let everything = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        everything.is_file(),
        "the MCP tests need {}: run `bash tests/run.sh` (it installs it) or `cd tests/mcp && npm ci`",
        everything.display()
    );
    dir.canonicalize().unwrap()
}

fn everything_js() -> String {
    servers_dir()
        .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
        .display()
        .to_string()
}

fn configs(value: Value) -> Vec<ServerConfig> {
    let mut warnings = Vec::new();
    let configs = parse_servers(&value, &mut warnings).unwrap();
    assert_eq!(warnings, Vec::<String>::new());
    configs
}

fn launch() -> Launch {
    Launch {
        env_filter: Default::default(),
        env: Arc::new(|name| std::env::var(name).ok()),
        cwd: servers_dir(),
    }
}

fn started(value: Value) -> McpServers {
    McpServers::start(
        configs(value),
        launch(),
        Duration::from_secs(60),
        Default::default(),
    )
}

fn tool_ctx() -> ToolContext {
    ToolContext {
        call_id: "c1".into(),
        cwd: servers_dir(),
        fs: Arc::new(corvid_tools::LocalFs),
        cancel: CancellationToken::new(),
        shell_timeout: Duration::from_secs(10),
        shell: Default::default(),
        live_output: None,
    }
}

fn tool(servers: &McpServers, name: &str) -> Arc<dyn Tool> {
    let tools = servers.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    tools
        .iter()
        .find(|t| t.name() == name)
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "no tool {name} in {names:?}; servers: {:?}",
                servers.reports()
            )
        })
}

#[tokio::test]
async fn server_everything_over_stdio_lists_its_tools_and_answers_calls() {
    let servers = started(json!({
        "everything": {"command": "node", "args": [everything_js(), "stdio"]}
    }));
    servers.settled().await;
    assert_eq!(servers.reports()[0].status, Status::Ready);

    let echo = tool(&servers, "mcp__everything__echo");
    assert_eq!(
        echo.provenance(),
        Provenance::Mcp {
            server_id: "everything".into()
        }
    );
    assert_eq!(echo.display_name(), "Echo Tool (everything)");
    // Its `readOnlyHint` is a claim the user has not said to believe (`trustHints`).
    assert_eq!(echo.kind(), ToolKind::Other);
    assert_eq!(
        echo.parameters()["properties"]["message"]["type"],
        json!("string")
    );
    assert_eq!(echo.parameters()["required"], json!(["message"]));
    let ctx = tool_ctx();
    assert!(matches!(
        echo.approval(&json!({"message": "hi"}), &ctx).await,
        ApprovalNeed::Execute(_)
    ));
    let out = echo
        .execute(json!({"message": "hi"}), ctx.clone())
        .await
        .unwrap();
    assert_eq!(out.text, "Echo: hi");

    let sum = tool(&servers, "mcp__everything__get-sum");
    let out = sum
        .execute(json!({"a": 2, "b": 3}), ctx.clone())
        .await
        .unwrap();
    assert!(out.text.contains('5'), "{}", out.text);

    let image = tool(&servers, "mcp__everything__get-tiny-image");
    let out = image.execute(json!({}), ctx.clone()).await.unwrap();
    assert_eq!(
        out.text,
        "Here's the image you requested:\nThe image above is the MCP logo."
    );
    let media: Vec<(&str, bool)> = out
        .images
        .iter()
        .map(|i| {
            (
                i.media_type.as_str(),
                i.data_base64.starts_with("iVBORw0KGgo"),
            )
        })
        .collect();
    assert_eq!(media, vec![("image/png", true)]);

    let links = tool(&servers, "mcp__everything__get-resource-links");
    let out = links
        .execute(json!({"count": 2}), ctx.clone())
        .await
        .unwrap();
    let kinds: Vec<String> = out
        .resources
        .iter()
        .map(|r| match r {
            ToolResource::Link { name, .. } => name.clone(),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(kinds, vec!["Blob Resource 1", "Text Resource 2"]);

    // Not read-only, and the server is not trusted: the call asks.
    let toggle = tool(&servers, "mcp__everything__toggle-simulated-logging");
    assert!(matches!(
        toggle.approval(&json!({}), &ctx).await,
        ApprovalNeed::Execute(_)
    ));
}

#[tokio::test]
async fn a_trusted_server_never_asks_and_tool_filters_apply() {
    let servers = started(json!({
        "everything": {
            "command": "node", "args": [everything_js()], "trust": true,
            "includeTools": ["echo", "toggle-simulated-logging", "get-sum"],
            "excludeTools": ["get-sum"]
        }
    }));
    servers.settled().await;
    assert_eq!(
        servers.reports()[0].tools,
        [
            "mcp__everything__echo",
            "mcp__everything__toggle-simulated-logging"
        ]
    );
    let toggle = tool(&servers, "mcp__everything__toggle-simulated-logging");
    assert_eq!(
        toggle.approval(&json!({}), &tool_ctx()).await,
        ApprovalNeed::None
    );
}

#[tokio::test]
async fn a_missing_command_fails_its_server_with_a_message_naming_it() {
    let servers = started(json!({
        "broken": {"command": "corvid-no-such-mcp-server"},
        "everything": {"command": "node", "args": [everything_js()]}
    }));
    servers.settled().await;
    let reports = servers.reports();
    match &reports[0].status {
        Status::Failed(message) => assert!(
            message.starts_with("MCP server `broken` could not start")
                && message.contains("corvid-no-such-mcp-server"),
            "{message}"
        ),
        other => panic!("expected a failure, got {other:?}"),
    }
    assert_eq!(reports[1].status, Status::Ready);
}

fn faulty(timeout_ms: u64) -> McpServers {
    let script = servers_dir()
        .join("faulty_server.mjs")
        .display()
        .to_string();
    started(json!({"faulty": {"command": "node", "args": [script], "timeout": timeout_ms}}))
}

#[tokio::test]
async fn a_server_that_exits_during_a_call_fails_the_call_and_is_restarted_on_next_use() {
    let servers = faulty(30_000);
    servers.settled().await;
    let ctx = tool_ctx();
    let err = tool(&servers, "mcp__faulty__crash")
        .execute(json!({}), ctx.clone())
        .await
        .unwrap_err();
    assert!(
        err.message
            .starts_with("MCP server `faulty` stopped during the call to `crash`"),
        "{}",
        err.message
    );
    let out = tool(&servers, "mcp__faulty__ping")
        .execute(json!({}), ctx)
        .await
        .unwrap();
    assert_eq!(out.text, "pong");
    assert_eq!(servers.reports()[0].status, Status::Ready);
}

#[tokio::test]
async fn a_call_that_hangs_past_the_timeout_fails_naming_the_server() {
    let servers = faulty(3_000);
    servers.settled().await;
    let err = tool(&servers, "mcp__faulty__hang")
        .execute(json!({}), tool_ctx())
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        "MCP server `faulty` tool `hang` did not answer within 3000 ms (the server's `timeout`)"
    );
    let out = tool(&servers, "mcp__faulty__ping")
        .execute(json!({}), tool_ctx())
        .await
        .unwrap();
    assert_eq!(out.text, "pong");
}

/// Processes whose environment holds `marker`.
fn processes_with(marker: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == marker.as_bytes()))
        })
        .collect()
}

#[tokio::test]
async fn dropping_the_servers_stops_their_processes() {
    let marker = format!("CORVID_MCP_TEST_MARKER={}", std::process::id());
    let (name, value) = marker.split_once('=').unwrap();
    let servers = started(json!({
        "everything": {"command": "node", "args": [everything_js()], "env": {name: value}}
    }));
    servers.settled().await;
    assert_eq!(processes_with(&marker).len(), 1);
    drop(servers);
    for _ in 0..100 {
        if processes_with(&marker).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "server processes still running: {:?}",
        processes_with(&marker)
    );
}

/// server-everything in its streamable HTTP mode on a free local port, once it listens.
async fn http_everything() -> (tokio::process::Child, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = tokio::process::Command::new("node")
        .args([everything_js().as_str(), "streamableHttp"])
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stderr));
    while let Some(line) = lines.next_line().await.unwrap() {
        if line.contains("listening on port") {
            tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
            return (child, port);
        }
    }
    panic!("server-everything (streamableHttp) exited before listening");
}

#[tokio::test]
async fn server_everything_over_streamable_http_lists_its_tools_and_answers_calls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (_server, port) = http_everything().await;
    let servers = McpServers::start(
        configs(json!({
            "web": {"httpUrl": format!("http://127.0.0.1:{port}/mcp"),
                    "headers": {"X-Corvid-Test": "${CORVID_TEST_HEADER:-plain}"}}
        })),
        launch(),
        Duration::from_secs(60),
        Default::default(),
    );
    servers.settled().await;
    assert_eq!(
        servers.reports()[0].status,
        Status::Ready,
        "{:?}",
        servers.reports()
    );
    let echo = tool(&servers, "mcp__web__echo");
    assert_eq!(
        echo.provenance(),
        Provenance::Mcp {
            server_id: "web".into()
        }
    );
    let out = echo
        .execute(json!({"message": "over http"}), tool_ctx())
        .await
        .unwrap();
    assert_eq!(out.text, "Echo: over http");
}

#[tokio::test]
async fn a_tool_list_change_is_picked_up_before_the_next_turn() {
    let servers = faulty(30_000);
    servers.settled().await;
    let ctx = tool_ctx();
    let out = tool(&servers, "mcp__faulty__grow")
        .execute(json!({}), ctx.clone())
        .await
        .unwrap();
    assert_eq!(out.text, "added");
    // The notification may trail the call's answer; the next turn's wait picks it up.
    for _ in 0..100 {
        servers.settled().await;
        if servers
            .tools()
            .iter()
            .any(|t| t.name() == "mcp__faulty__grown")
        {
            let out = tool(&servers, "mcp__faulty__grown")
                .execute(json!({}), ctx)
                .await
                .unwrap();
            assert_eq!(out.text, "grown");
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the new tool never appeared: {:?}", servers.reports());
}
