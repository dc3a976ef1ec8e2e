//! End to end, plan mode (issue 14 item 17): the official ACP TypeScript client
//! (`tests/acp/plan_mode.mjs`, on `@agentclientprotocol/sdk` 2.4.0) sets `plan` on a session
//! of the real `corvid --acp`, whose model (the testkit's loopback mock OpenAI server) tries a
//! write, then asks to leave plan mode with a plan: the write never runs, the plan arrives as
//! a `plan` update, and after the user's yes the mode update arrives.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::{require_client, run_session_script, text_turn, turn};
use corvid_testkit::{MockServer, ScriptedResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn tool_call(id: &str, name: &str, args: &Value) -> ScriptedResponse {
    ScriptedResponse::sse(turn(
        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": id, "type": "function",
            "function": {"name": name, "arguments": args.to_string()}}]}),
        "tool_calls",
    ))
}

/// Runs the client in a fresh project; returns its output lines.
async fn run_client(server: &MockServer, project: &Path, answer: &str) -> Vec<Value> {
    let home = tempfile::tempdir().unwrap();
    let (url, home) = (server.url(), home.path());
    run_session_script("plan_mode.mjs", &url, project, home, "add b.txt", answer).await
}

fn updates<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|l| l["kind"] == "update" && l["update"]["sessionUpdate"] == kind)
        .map(|l| &l["update"])
        .collect()
}

#[tokio::test]
async fn the_official_client_plans_without_a_write_running_and_sees_the_plan_and_the_mode() {
    require_client();
    let server = MockServer::start().await;
    server.push(tool_call(
        "call_w",
        "write_file",
        &json!({"file_path": "b.txt", "content": "new\n"}),
    ));
    server.push(tool_call(
        "call_x",
        "exit_plan_mode",
        &json!({"plan": "1. Write `b.txt`\n2. Run the tests"}),
    ));
    server.push(text_turn("Planned."));
    let project = tempfile::tempdir().unwrap();
    let lines = run_client(&server, project.path(), "allow_always").await;

    let session = lines.iter().find(|l| l["kind"] == "session").unwrap();
    let modes: Vec<&Value> = session["response"]["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &m["id"])
        .collect();
    assert_eq!(modes, vec!["default", "auto", "auto-edit", "yolo", "plan"]);
    assert!(!project.path().join("b.txt").exists());
    // Only exit_plan_mode asked; the write was refused unasked.
    let asks: Vec<&Value> = lines.iter().filter(|l| l["kind"] == "permission").collect();
    assert_eq!(asks.len(), 1, "{asks:?}");
    assert_eq!(asks[0]["params"]["toolCall"]["toolCallId"], "call_x");
    assert_eq!(
        updates(&lines, "plan"),
        vec![&json!({"sessionUpdate": "plan", "entries": [
            {"content": "Write `b.txt`", "priority": "medium", "status": "pending"},
            {"content": "Run the tests", "priority": "medium", "status": "pending"},
        ]})]
    );
    assert_eq!(
        updates(&lines, "current_mode_update"),
        vec![&json!({"sessionUpdate": "current_mode_update", "currentModeId": "auto-edit"})]
    );
    let refused = lines
        .iter()
        .find(|l| l["update"]["toolCallId"] == "call_w" && l["update"]["status"] == "failed")
        .expect("the write's card fails");
    assert!(
        refused
            .to_string()
            .contains("plan mode: this session only plans"),
        "{refused}"
    );
    // The model's next request no longer offers only plan tools: the mode switched.
    let requests = server.requests();
    let offered = |i: usize| -> Vec<String> {
        requests[i].body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(!offered(0).contains(&"write_file".to_owned()));
    assert!(offered(2).contains(&"write_file".to_owned()));
    let answer = lines.iter().find(|l| l["kind"] == "response").unwrap();
    assert_eq!(answer["response"]["stopReason"], "end_turn");
}
