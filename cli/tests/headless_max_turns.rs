//! `agent.maxTurns` in headless mode (issue 14 defect 6): a model that never stops calling
//! tools ends the run with exit code 1 and a message saying what to do.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Sandbox, json_lines, run, stderr, turn, usage_chunk};
use corvid_testkit::{MockServer, ScriptedResponse, sse_event};
use pretty_assertions::assert_eq;
use serde_json::json;

const MESSAGE: &str = "stopped after 3 model turns (agent.maxTurns); send another prompt to \
                       continue, or raise agent.maxTurns";

/// A turn that only lists the directory again.
fn list_again(n: usize) -> ScriptedResponse {
    let mut chunks = turn(
        json!({"tool_calls": [{"index": 0, "id": format!("call_{n}"), "type": "function",
               "function": {"name": "list_directory", "arguments": "{\"path\":\".\"}"}}]}),
        "tool_calls",
    );
    chunks.push(usage_chunk());
    chunks.push(sse_event("[DONE]"));
    ScriptedResponse::sse(chunks)
}

fn looping_server_and_sandbox() -> (Sandbox, Vec<ScriptedResponse>) {
    let sb = Sandbox::new();
    sb.user_settings(r#"{"agent": {"maxTurns": 3}}"#);
    (sb, (1..=4).map(list_again).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headless_exits_1_at_max_turns() {
    let server = MockServer::start().await;
    let (sb, turns) = looping_server_and_sandbox();
    for t in turns {
        server.push(t);
    }
    let mut cmd = sb.against(&server, "sk-test", &["-p", "list forever"]);
    cmd.env("OPENAI_MODEL", "mock-model");
    let out = run(cmd).await;
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("corvid: warning: {MESSAGE}")),
        "stderr: {}",
        stderr(&out)
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_json_result_of_a_run_stopped_at_max_turns_is_an_error_saying_why() {
    let server = MockServer::start().await;
    let (sb, turns) = looping_server_and_sandbox();
    for t in turns {
        server.push(t);
    }
    let mut cmd = sb.against(
        &server,
        "sk-test",
        &["-p", "list forever", "--output-format", "stream-json"],
    );
    cmd.env("OPENAI_MODEL", "mock-model");
    let out = run(cmd).await;
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    let msgs = json_lines(&out);
    let warning = msgs
        .iter()
        .find(|m| m["subtype"] == "warning")
        .expect("a warning message");
    assert_eq!(warning["message"], MESSAGE);
    let result = msgs.last().unwrap();
    assert_eq!(
        (
            &result["type"],
            &result["subtype"],
            &result["stop_reason"],
            &result["is_error"],
            &result["num_turns"]
        ),
        (
            &json!("result"),
            &json!("error_max_turns"),
            &json!("max_turns"),
            &json!(true),
            &json!(3)
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_max_turns_of_zero_is_a_settings_error_naming_the_key() {
    let sb = Sandbox::new();
    let settings = sb.user_settings(r#"{"agent": {"maxTurns": 0}}"#);
    let out = run(sb.corvid(&["--demo", "-p", "hi"])).await;
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&settings.display().to_string())
            && err.contains("agent.maxTurns")
            && err.contains("at least 1"),
        "stderr: {err}"
    );
}
