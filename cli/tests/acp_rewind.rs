//! End to end, `/undo` over ACP (issue 26): the official ACP TypeScript client
//! (`tests/acp/rewind.mjs`, on `@agentclientprotocol/sdk` 2.4.0) drives the real
//! `corvid --acp`, whose model (the testkit's loopback mock OpenAI server) changes a file with
//! a shell command; `/undo` is advertised, previews as the agent's message, asks with
//! `session/request_permission`, and on a yes restores the file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::{require_client, run_session_script, text_turn, turn};
use corvid_testkit::{MockServer, ScriptedResponse};
use serde_json::{Value, json};

fn shell_call(id: &str, command: &str) -> ScriptedResponse {
    let args = json!({ "command": command }).to_string();
    ScriptedResponse::sse(turn(
        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": id, "type": "function",
            "function": {"name": "run_shell_command", "arguments": args}}]}),
        "tool_calls",
    ))
}

/// Runs the client in `project`, answering every permission request with `answer`.
async fn run_client(server: &MockServer, project: &Path, answer: &str) -> Vec<Value> {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("settings.json"),
        r#"{"tools": {"approvalMode": "yolo"}}"#,
    )
    .unwrap();
    let (url, home) = (server.url(), home.path());
    run_session_script("rewind.mjs", &url, project, home, "change a.txt", answer).await
}

/// The agent's message text, all chunks joined.
fn agent_text(lines: &[Value]) -> String {
    lines
        .iter()
        .filter(|l| l["kind"] == "update" && l["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|l| l["update"]["content"]["text"].as_str())
        .collect()
}

async fn undo_with(answer: &str) -> (tempfile::TempDir, Vec<Value>) {
    require_client();
    let server = MockServer::start().await;
    server.push(shell_call("call_s", "printf changed > a.txt"));
    server.push(text_turn("Changed it."));
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("a.txt"), "original").unwrap();
    let lines = run_client(&server, project.path(), answer).await;
    (project, lines)
}

#[tokio::test]
async fn undo_is_advertised_previewed_confirmed_and_restores_the_file() {
    let (project, lines) = undo_with("rewind").await;
    let commands: Vec<&str> = lines
        .iter()
        .filter(|l| l["update"]["sessionUpdate"] == "available_commands_update")
        .flat_map(|l| l["update"]["availableCommands"].as_array().unwrap())
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert!(
        commands.contains(&"undo") && commands.contains(&"rewind"),
        "{commands:?}"
    );
    let asks: Vec<&Value> = lines.iter().filter(|l| l["kind"] == "permission").collect();
    assert_eq!(asks.len(), 1, "{asks:?}");
    let options: Vec<&str> = asks[0]["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o["optionId"].as_str())
        .collect();
    assert_eq!(options, vec!["rewind", "keep"]);
    let text = agent_text(&lines);
    assert!(
        text.contains("restore  a.txt"),
        "the preview names the file: {text}"
    );
    assert!(text.contains("Rewound (both) to before turn 1"), "{text}");
    let responses: Vec<&Value> = lines.iter().filter(|l| l["kind"] == "response").collect();
    assert_eq!(responses.len(), 2);
    assert_eq!(responses[1]["response"]["stopReason"], "end_turn");
    assert_eq!(
        std::fs::read_to_string(project.path().join("a.txt")).unwrap(),
        "original"
    );
}

#[tokio::test]
async fn declining_the_undo_keeps_the_file() {
    let (project, lines) = undo_with("keep").await;
    assert!(agent_text(&lines).contains("Nothing was rewound"));
    assert_eq!(
        std::fs::read_to_string(project.path().join("a.txt")).unwrap(),
        "changed"
    );
}
