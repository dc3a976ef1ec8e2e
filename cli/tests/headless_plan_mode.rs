//! Headless plan mode (issue 14 item 17): `--approval-mode plan` runs the model with the
//! read-only tools only; a write it still tries is refused without running, and its request to
//! leave plan mode is refused because nobody can approve it here (the plan is the answer).
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

/// The tool results the model got back in request `i`.
fn tool_results(server: &MockServer, i: usize) -> Vec<String> {
    server.requests()[i].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn headless_plan_mode_refuses_a_write_and_cannot_leave_plan_mode() {
    let server = MockServer::start().await;
    server.push(tool_call(
        "call_w",
        "write_file",
        &json!({"file_path": "b.txt", "content": "x"}),
    ));
    server.push(tool_call(
        "call_x",
        "exit_plan_mode",
        &json!({"plan": "- write b.txt"}),
    ));
    server.push(text_turn("Plan: write b.txt."));
    let sb = Sandbox::new();
    let mut cmd = sb.against(
        &server,
        "sk-headless-plan",
        &["-p", "add b.txt", "--approval-mode", "plan"],
    );
    cmd.env("OPENAI_MODEL", "mock-model");
    let out = run(cmd).await;
    assert_success(&out);
    assert!(!sb.project_dir().join("b.txt").exists());
    let offered: Vec<String> = server.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(!offered.contains(&"write_file".to_owned()), "{offered:?}");
    assert!(
        offered.contains(&"exit_plan_mode".to_owned()),
        "{offered:?}"
    );
    let first = tool_results(&server, 1);
    assert!(
        first[0].starts_with("plan mode: this session only plans"),
        "{first:?}"
    );
    let second = tool_results(&server, 2);
    assert!(
        second[1].starts_with("Nobody can approve the plan"),
        "{second:?}"
    );
    assert!(
        stdout(&out).contains("Plan: write b.txt."),
        "{}",
        stdout(&out)
    );
}
