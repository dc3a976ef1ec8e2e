//! End to end: the official ACP TypeScript client as an editor offering terminals
//! (`tests/acp/terminal.mjs`, `@agentclientprotocol/sdk` 2.4.0, commands run with node's
//! child_process) drives the real `corvid --acp` binary against the testkit's mock OpenAI
//! server (issue 14 item 15).
//!
//! Needs `node` and `cd tests/acp && npm ci`; fails loudly without them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Stdio;

use common::{chunk, client_dir, require_client};
use corvid_testkit::{Chunk, MockServer, ScriptedResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn shell_call(id: &str, args: &Value) -> ScriptedResponse {
    ScriptedResponse::sse(vec![
        chunk(
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": id, "type": "function",
                "function": {"name": "run_shell_command", "arguments": ""}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": args.to_string()}}]}),
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

const API_KEY: &str = "sk-corvid-terminal-e2e-NEVER-SEND-77b1";

/// Runs the terminal client against `corvid --acp` in `dir`; returns its output lines.
async fn run(server: &MockServer, dir: &Path, home: &Path, flags: &[&str]) -> Vec<Value> {
    let output = tokio::process::Command::new("node")
        .arg(client_dir().join("terminal.mjs"))
        .args(["--cwd", dir.to_str().unwrap(), "--timeout", "60"])
        .args(flags)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_corvid"))
        .arg("--acp")
        .current_dir(dir)
        .env("CORVID_HOME", home)
        .env("OPENAI_BASE_URL", server.url())
        .env("OPENAI_API_KEY", API_KEY)
        .env("OPENAI_MODEL", "mock-model")
        .env("CORVID_E2E_SECRET_TOKEN", "hunter2")
        .env_remove("ANTHROPIC_API_KEY")
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

fn terminal_methods(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l["kind"] == "terminal")
        .map(|l| l["method"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn the_official_client_runs_an_unconfined_command_in_its_terminal_shown_on_the_card() {
    require_client();
    let server = MockServer::start().await;
    // outside_sandbox: it would run unconfined anyway, so the editor's terminal runs it, after
    // the escalated question.
    server.push(shell_call(
        "call_t",
        &json!({"command": "echo from-the-editor", "outside_sandbox": true}),
    ));
    server.push(text_answer("Done."));
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let lines = run(&server, dir.path(), home.path(), &[]).await;

    assert_eq!(
        lines.iter().filter(|l| l["kind"] == "permission").count(),
        1
    );
    assert_eq!(
        terminal_methods(&lines),
        vec![
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/output",
            "terminal/release"
        ]
    );
    let create = &lines
        .iter()
        .find(|l| l["method"] == "terminal/create")
        .unwrap()["params"];
    assert_eq!(create["command"], json!("bash"));
    assert_eq!(create["args"], json!(["-c", "echo from-the-editor"]));
    let names: Vec<&str> = create["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert!(!names.contains(&"OPENAI_API_KEY"), "{names:?}");
    assert!(!names.contains(&"CORVID_E2E_SECRET_TOKEN"), "{names:?}");
    assert!(!create.to_string().contains(API_KEY));

    let card: Vec<&Value> = lines
        .iter()
        .filter(|l| l["kind"] == "update" && l["update"]["toolCallId"] == "call_t")
        .map(|l| &l["update"])
        .collect();
    let terminal = json!({"type": "terminal", "terminalId": "term-1"});
    assert!(
        card.iter().any(|u| u["content"] == json!([terminal])),
        "{card:#?}"
    );
    let last = card.last().unwrap();
    assert_eq!(last["status"], json!("completed"));
    let text = "Exit code: 0\n\nOutput:\nfrom-the-editor";
    assert_eq!(
        last["content"],
        json!([terminal, {"type": "content", "content": {"type": "text", "text": text}}])
    );
    // The model got the terminal's output.
    let tool_message = server
        .requests()
        .iter()
        .filter_map(|r| r.body["messages"].as_array().cloned())
        .flatten()
        .find(|m| m["role"] == "tool")
        .expect("the model got a tool result");
    assert_eq!(tool_message["content"], json!(text));
}

#[tokio::test]
async fn the_official_client_sees_its_terminal_killed_and_released_on_cancel() {
    require_client();
    let server = MockServer::start().await;
    server.push(shell_call(
        "call_c",
        &json!({"command": "sleep 30", "outside_sandbox": true}),
    ));
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let lines = run(&server, dir.path(), home.path(), &["--cancel-on-wait"]).await;

    assert_eq!(
        terminal_methods(&lines),
        vec![
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/kill",
            "terminal/release"
        ]
    );
    let response = lines.iter().find(|l| l["kind"] == "response").unwrap();
    assert_eq!(response["response"]["stopReason"], json!("cancelled"));
}
