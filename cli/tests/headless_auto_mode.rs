//! Headless `--approval-mode auto` (issue 26 item 5): with the sandbox and undo available,
//! edits and sandboxed commands run without a question nobody could answer here; in
//! `default`, a read-only command runs and one that writes is refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use corvid_testkit::{MockServer, ScriptedResponse};
use serde_json::{Value, json};

fn tool_call(id: &str, name: &str, args: &Value) -> ScriptedResponse {
    ScriptedResponse::sse(turn(
        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": id, "type": "function",
            "function": {"name": name, "arguments": args.to_string()}}]}),
        "tool_calls",
    ))
}

fn script(server: &MockServer) {
    server.push(tool_call(
        "call_w",
        "write_file",
        &json!({"file_path": "b.txt", "content": "x"}),
    ));
    server.push(tool_call(
        "call_s",
        "run_shell_command",
        &json!({"command": "touch c.txt && ls"}),
    ));
    server.push(tool_call(
        "call_r",
        "run_shell_command",
        &json!({"command": "ls -la"}),
    ));
    server.push(text_turn("done"));
}

/// The tool results the model got back in request `i`.
fn last_result(server: &MockServer, i: usize) -> String {
    let messages = server.requests()[i].body["messages"].clone();
    messages
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_default()
}

#[tokio::test]
async fn headless_auto_mode_runs_edits_and_sandboxed_commands() {
    let server = MockServer::start().await;
    script(&server);
    let sb = Sandbox::new();
    let mut cmd = sb.against(&server, "sk-auto", &["-p", "go", "--approval-mode", "auto"]);
    cmd.env("OPENAI_MODEL", "mock-model");
    let out = run(cmd).await;
    assert_success(&out);
    assert!(sb.project_dir().join("b.txt").exists());
    assert!(
        sb.project_dir().join("c.txt").exists(),
        "{}",
        last_result(&server, 2)
    );
}

#[tokio::test]
async fn headless_default_mode_runs_read_only_commands_and_refuses_the_rest() {
    let server = MockServer::start().await;
    script(&server);
    let sb = Sandbox::new();
    let mut cmd = sb.against(&server, "sk-default", &["-p", "go"]);
    cmd.env("OPENAI_MODEL", "mock-model");
    let out = run(cmd).await;
    assert_success(&out);
    assert!(!sb.project_dir().join("b.txt").exists());
    assert!(!sb.project_dir().join("c.txt").exists());
    assert!(
        last_result(&server, 2).contains("needs approval"),
        "{}",
        last_result(&server, 2)
    );
    let listed = last_result(&server, 3);
    assert!(!listed.contains("needs approval"), "{listed}");
}
