//! End to end: the official ACP TypeScript client (`tests/acp/client.mjs`, on
//! `@agentclientprotocol/sdk` 2.4.0) drives the real `corvid --acp` binary, whose model is the
//! testkit's loopback mock OpenAI server.
//!
//! Needs `node` and `cd tests/acp && npm ci`; without them the tests skip with a message,
//! except under `CI`, where they fail. The binary is built on demand (`CORVID_BIN` overrides).

// A skipped test says so on stderr, so a local run without node is not mistaken for a pass.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

use corvid_testkit::{Chunk, MockServer, ScriptedResponse, sse_event};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// Where the client script and its `node_modules` live.
fn client_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/acp")
}

/// The `corvid` binary: `CORVID_BIN`; cargo's own when this file is a test of `corvid-cli`;
/// else built now with `cargo build -p corvid-cli` into this test's target directory (a no-op
/// when fresh), so the test never runs a stale binary.
fn corvid_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(bin) = std::env::var_os("CORVID_BIN") {
            return bin.into();
        }
        // Set when this file is compiled as a test of the package that owns the binary.
        if let Some(bin) = option_env!("CARGO_BIN_EXE_corvid") {
            return bin.into();
        }
        // <target>/<profile>/deps/<this test>
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().and_then(Path::parent).unwrap();
        let target_dir = profile_dir.parent().unwrap();
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut build = std::process::Command::new(cargo);
        build
            .args([
                "build",
                "-p",
                "corvid-cli",
                "--bin",
                "corvid",
                "--target-dir",
            ])
            .arg(target_dir)
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        if profile_dir.file_name().is_some_and(|p| p == "release") {
            build.arg("--release");
        }
        let status = build.status().unwrap();
        assert!(status.success(), "building the corvid binary failed");
        profile_dir.join(format!("corvid{}", std::env::consts::EXE_SUFFIX))
    })
    .clone()
}

/// Whether node and the client library are installed; otherwise skip locally, fail in CI.
fn ready() -> bool {
    let node = std::process::Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let sdk = client_dir()
        .join("node_modules/@agentclientprotocol/sdk/package.json")
        .exists();
    if node && sdk {
        return true;
    }
    let missing = format!(
        "node on PATH: {node}; the client library in tests/acp/node_modules \
         (run `cd tests/acp && npm ci`): {sdk}"
    );
    if std::env::var_os("CI").is_some() {
        panic!("the official ACP client test cannot run in CI: {missing}");
    }
    eprintln!("SKIPPED: the official ACP client test needs {missing}");
    false
}

fn chunk(delta: Value, finish: Option<&str>) -> Chunk {
    sse_event(
        &json!({
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "mock",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })
        .to_string(),
    )
}

/// The first chunk of a tool call: id and name known, arguments not yet.
fn tool_start(id: &str, name: &str) -> Chunk {
    chunk(
        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": id, "type": "function",
            "function": {"name": name, "arguments": ""}}]}),
        None,
    )
}

fn read_a_call(id: &str) -> ScriptedResponse {
    ScriptedResponse::sse(vec![
        tool_start(id, "read_file"),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"file_path\":"}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"a.txt\"}"}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        Chunk::new("data: [DONE]\n\n"),
    ])
}

fn text_answer(text: &str) -> ScriptedResponse {
    ScriptedResponse::sse(vec![
        chunk(json!({"role": "assistant", "content": text}), None),
        chunk(json!({}), Some("stop")),
        Chunk::new("data: [DONE]\n\n"),
    ])
}

/// Runs the client against `corvid --acp` in a fresh project; returns its output lines.
async fn run_client(server: &MockServer, flags: &[&str]) -> Vec<Value> {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("a.txt"), "hello\n").unwrap();
    // Fast retries, so the cut-stream scenario does not wait a second.
    std::fs::create_dir(project.path().join(".corvid")).unwrap();
    std::fs::write(
        project.path().join(".corvid/settings.json"),
        r#"{"retry": {"initialDelayMs": 10, "maxDelayMs": 10}}"#,
    )
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    let output = tokio::process::Command::new("node")
        .arg(client_dir().join("client.mjs"))
        .args(["--cwd", project.path().to_str().unwrap(), "--timeout", "60"])
        .args(flags)
        .arg("--")
        .arg(corvid_bin())
        .arg("--acp")
        .current_dir(project.path())
        .env("CORVID_HOME", home.path())
        .env("OPENAI_BASE_URL", server.url())
        .env("OPENAI_API_KEY", "test-key")
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
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l}: {e}")))
        .collect()
}

/// `(toolCallId, status, discarded?)` of every card frame, in order.
fn card_statuses(lines: &[Value]) -> Vec<(String, String, bool)> {
    lines
        .iter()
        .filter(|l| l["kind"] == "update")
        .map(|l| &l["update"])
        .filter(|u| u["sessionUpdate"] == "tool_call" || u["sessionUpdate"] == "tool_call_update")
        .map(|u| {
            (
                u["toolCallId"].as_str().unwrap().to_owned(),
                u["status"].as_str().unwrap_or("").to_owned(),
                u["_meta"]["preparationDiscarded"] == json!(true),
            )
        })
        .collect()
}

fn stop_reason(lines: &[Value]) -> Value {
    lines
        .iter()
        .find(|l| l["kind"] == "response")
        .map(|l| l["response"]["stopReason"].clone())
        .unwrap_or(Value::Null)
}

fn card(id: &str, status: &str, discarded: bool) -> (String, String, bool) {
    (id.to_owned(), status.to_owned(), discarded)
}

#[tokio::test]
async fn the_official_client_sees_a_tool_call_go_from_pending_to_completed() {
    if !ready() {
        return;
    }
    let server = MockServer::start().await;
    server.push(read_a_call("call_1"));
    server.push(text_answer("Done."));
    let lines = run_client(&server, &["--prompt", "read a.txt"]).await;

    let initialize = lines.iter().find(|l| l["kind"] == "initialize").unwrap();
    assert_eq!(initialize["response"]["agentInfo"]["name"], json!("corvid"));
    assert_eq!(
        card_statuses(&lines),
        vec![
            card("call_1", "pending", false),
            card("call_1", "in_progress", false),
            card("call_1", "completed", false),
        ]
    );
    let preparing = lines
        .iter()
        .find(|l| l["update"]["sessionUpdate"] == "tool_call")
        .unwrap();
    assert_eq!(
        preparing["update"],
        json!({
            "sessionUpdate": "tool_call",
            "toolCallId": "call_1",
            "status": "pending",
            "title": "ReadFile",
            "kind": "read",
            "content": [],
            "locations": [],
            "rawInput": {},
            "_meta": {"toolName": "read_file", "provenance": "builtin", "phase": "preparing"},
        })
    );
    assert_eq!(stop_reason(&lines), json!("end_turn"));
}

#[tokio::test]
async fn the_official_client_sees_a_cut_stream_discard_its_card_before_the_retry() {
    if !ready() {
        return;
    }
    let server = MockServer::start().await;
    server.push(ScriptedResponse::sse(vec![tool_start("call_1", "write_file")]).cut());
    server.push(read_a_call("call_2"));
    server.push(text_answer("Done."));
    let lines = run_client(&server, &["--prompt", "go"]).await;

    assert_eq!(
        card_statuses(&lines),
        vec![
            card("call_1", "pending", false),
            card("call_1", "failed", true),
            card("call_2", "pending", false),
            card("call_2", "in_progress", false),
            card("call_2", "completed", false),
        ]
    );
    assert_eq!(stop_reason(&lines), json!("end_turn"));
}

#[tokio::test]
async fn the_official_client_cancels_while_arguments_stream() {
    if !ready() {
        return;
    }
    let server = MockServer::start().await;
    server.push(ScriptedResponse::sse(vec![tool_start("call_1", "write_file")]).hang());
    let lines = run_client(&server, &["--prompt", "go", "--cancel-on-tool-call"]).await;

    assert_eq!(
        card_statuses(&lines),
        vec![
            card("call_1", "pending", false),
            card("call_1", "failed", true)
        ]
    );
    assert_eq!(stop_reason(&lines), json!("cancelled"));
}
