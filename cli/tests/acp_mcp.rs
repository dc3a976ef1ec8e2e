//! End to end: the official ACP client (`tests/acp/client.mjs`) opens a session of the real
//! `corvid --acp` with an `mcpServers` stdio entry for `@modelcontextprotocol/server-everything`
//! (`tests/mcp`); the mock model calls its `echo` and `get-tiny-image`. Missing installs fail
//! these tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Stdio;

use common::{
    assert_gone, client_dir, everything_js, faulty_js, processes_with, require_client, text_turn,
    turn,
};
use corvid_testkit::{MockServer, ScriptedResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// One batch: `echo`, and `get-tiny-image` (whose card must show the image).
fn echo_and_image_calls() -> ScriptedResponse {
    ScriptedResponse::sse(turn(
        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_echo",
               "type": "function", "function": {"name": "mcp__everything__echo",
               "arguments": "{\"message\":\"from the editor\"}"}},
              {"index": 1, "id": "call_img", "type": "function",
               "function": {"name": "mcp__everything__get-tiny-image", "arguments": "{}"}}]}),
        "tool_calls",
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editors_stdio_mcp_server_gives_the_session_a_callable_tool_and_stops_with_it() {
    require_client();
    let project = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    // The first request waits for the server's tools (no timing in tests).
    std::fs::write(
        home.path().join("settings.json"),
        json!({"mcp": {"startupTimeoutMs": 120_000}}).to_string(),
    )
    .unwrap();
    let marker_value = format!("acp-{}", std::process::id());
    // `trustHints`: the editor's user believes its read-only hints, so `echo` runs unasked.
    let entry = json!({"name": "everything", "command": "node", "args": [everything_js()],
                       "trustHints": true,
                       "env": [{"name": "CORVID_MCP_ACP_E2E", "value": marker_value}]});
    let server = MockServer::start().await;
    server.push(echo_and_image_calls());
    server.push(text_turn("The server echoed."));

    let output = tokio::process::Command::new("node")
        .arg(client_dir().join("client.mjs"))
        .args(["--cwd", project.path().to_str().unwrap(), "--timeout", "60"])
        .args([
            "--mcp-server",
            &entry.to_string(),
            "--prompt",
            "echo something",
        ])
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_corvid"))
        .arg("--acp")
        .current_dir(project.path())
        .env("CORVID_HOME", home.path())
        .env("OPENAI_BASE_URL", server.url())
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_MODEL", "mock-model")
        .env_remove("ANTHROPIC_API_KEY")
        .env("CORVID_EMIT_TOOL_USE_SUMMARIES", "0")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "client failed ({}):\n{stdout}",
        output.status
    );
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();

    let init = lines.iter().find(|l| l["kind"] == "initialize").unwrap();
    assert_eq!(
        init["response"]["agentCapabilities"]["mcpCapabilities"]["http"],
        true
    );
    let requests = server.requests();
    let offered: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(offered.contains(&"mcp__everything__echo"), "{offered:?}");

    let cards: Vec<&Value> = lines
        .iter()
        .filter(|l| l["kind"] == "update" && l["update"]["toolCallId"] == "call_echo")
        .map(|l| &l["update"])
        .collect();
    let first = cards.first().expect("a card for the MCP call");
    assert_eq!(
        first["_meta"],
        json!({"toolName": "mcp__everything__echo", "provenance": "mcp", "serverId": "everything",
               "phase": "preparing"})
    );
    let last = cards.last().unwrap();
    assert_eq!(last["status"], "completed");
    assert_eq!(
        last["content"][0]["content"]["text"],
        "Echo: from the editor"
    );
    assert_eq!(
        (
            last["_meta"]["provenance"].clone(),
            last["_meta"]["serverId"].clone()
        ),
        (json!("mcp"), json!("everything"))
    );
    let image_card = lines
        .iter()
        .filter(|l| l["kind"] == "update" && l["update"]["toolCallId"] == "call_img")
        .map(|l| &l["update"])
        .next_back()
        .expect("a card for the image call");
    let content = image_card["content"].as_array().unwrap();
    let kinds: Vec<(&str, &str)> = content
        .iter()
        .map(|c| {
            let block = &c["content"];
            (
                block["type"].as_str().unwrap(),
                block["mimeType"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(kinds, vec![("text", ""), ("image", "image/png")]);
    assert!(
        content[1]["content"]["data"]
            .as_str()
            .unwrap()
            .starts_with("iVBORw0KGgo")
    );
    // mock-model is not a vision model: the editor got the image, the model a note instead.
    let told = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == "call_img")
        .map(|m| m["content"].clone());
    assert_eq!(
        told,
        Some(json!(
            "Here's the image you requested:\nThe image above is the MCP logo.\n\
             [1 image(s) left out: model mock-model does not accept images]"
        ))
    );
    let answer = lines.iter().find(|l| l["kind"] == "response").unwrap();
    assert_eq!(answer["response"]["stopReason"], "end_turn");

    // The client closed the connection and corvid exited: the server is gone with it.
    assert_gone(&format!("CORVID_MCP_ACP_E2E={marker_value}")).await;
}

/// Sends one JSON-RPC message to `corvid --acp` and reads the next line it answers.
async fn request(
    stdin: &mut tokio::process::ChildStdin,
    stdout: &mut tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    message: Value,
) -> Value {
    use tokio::io::AsyncWriteExt;
    stdin
        .write_all(format!("{message}\n").as_bytes())
        .await
        .unwrap();
    let line = stdout.next_line().await.unwrap().expect("an answer");
    serde_json::from_str(&line).unwrap()
}

async fn stopped_by(signal: nix::sys::signal::Signal) {
    let project = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let marker_value = format!("{signal}-{}", std::process::id());
    let mut corvid = tokio::process::Command::new(env!("CARGO_BIN_EXE_corvid"))
        .args(["--acp", "--demo"])
        .current_dir(project.path())
        .env("CORVID_HOME", home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = corvid.stdin.take().unwrap();
    let mut stdout =
        tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(corvid.stdout.take().unwrap()));
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": 1}});
    request(&mut stdin, &mut stdout, init).await;
    // A server that keeps running after its stdin ends: only a kill stops it.
    let entry = json!({"name": "stubborn", "command": "node", "args": [faulty_js()],
                       "env": [{"name": "FAULTY_IGNORE_STDIN_END", "value": "1"},
                               {"name": "CORVID_MCP_SIGNAL_E2E", "value": marker_value}]});
    let new = json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                     "params": {"cwd": project.path(), "mcpServers": [entry]}});
    let answer = request(&mut stdin, &mut stdout, new).await;
    assert!(answer["result"]["sessionId"].is_string(), "{answer}");
    let marker = format!("CORVID_MCP_SIGNAL_E2E={marker_value}");
    for _ in 0..200 {
        if !processes_with(&marker).is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(processes_with(&marker).len(), 1, "the server never started");

    let pid = nix::unistd::Pid::from_raw(corvid.id().unwrap() as i32);
    nix::sys::signal::kill(pid, signal).unwrap();
    let status = corvid.wait().await.unwrap();
    assert_eq!(status.code(), Some(128 + signal as i32));
    assert_gone(&marker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_the_acp_agent_and_kills_a_server_that_ignores_its_stdin_ending() {
    stopped_by(nix::sys::signal::Signal::SIGTERM).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_stops_the_acp_agent_and_kills_a_server_that_ignores_its_stdin_ending() {
    stopped_by(nix::sys::signal::Signal::SIGINT).await;
}
