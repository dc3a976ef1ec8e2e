//! corvid's ACP server driven in-process by a client built with the same crate, over a
//! duplex pipe, with a real core and a scripted provider: the tool-card lifecycle and how
//! prompts end. Frames are compared whole.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use corvid_protocol::FinishReason;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

#[tokio::test]
async fn a_tool_task_streams_preparing_then_in_progress_then_completed() {
    let dir = project();
    let provider = ScriptedProvider::new(vec![read_a_script("call_1"), answer("Done.")]);
    let mut client = TestClient::start(TestFactory::new(provider), fs_caps(false, false)).await;
    let sid = client.new_session(dir.path()).await;
    let response = client.prompt(&sid, "read a").await.unwrap().unwrap();
    client.drain();

    assert_eq!(
        client.updates(),
        vec![
            preparing_frame("call_1", "read_file", "ReadFile", "read"),
            read_a_in_progress(dir.path(), "call_1"),
            json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": "call_1",
                "status": "completed",
                "content": [{"type": "content", "content": {"type": "text", "text": "hello\n"}}],
                "rawOutput": {
                    "path": abs(dir.path(), "a.txt"),
                    "start_line": 1, "end_line": 1, "total_lines": 1, "truncated": false,
                },
                "_meta": {"toolName": "read_file", "provenance": "builtin"},
            }),
            message("Done."),
        ]
    );
    assert_eq!(
        serde_json::to_value(&response).unwrap(),
        json!({
            "stopReason": "end_turn",
            "_meta": {"usage": {
                "inputTokens": 10, "outputTokens": 5, "totalTokens": 15,
                "cachedReadTokens": 0, "thoughtTokens": 0,
            }},
        })
    );
    client.assert_no_card_left_pending();
    // Each answer tells how full the context window is (an unknown model: the default window).
    assert_eq!(client.context_fills(), vec![(15, 32_768)]);
}

#[tokio::test]
async fn a_cut_stream_discards_the_card_and_the_retry_shows_a_fresh_one() {
    let dir = project();
    let provider = ScriptedProvider::new(vec![
        vec![preparing("call_1", "write_file"), cut()],
        read_a_script("call_2"),
        answer("Done."),
    ]);
    let mut client = TestClient::start(TestFactory::new(provider), fs_caps(false, false)).await;
    let sid = client.new_session(dir.path()).await;
    client.prompt(&sid, "go").await.unwrap().unwrap();
    client.drain();

    let updates = client.updates();
    assert_eq!(
        updates[..4],
        [
            preparing_frame("call_1", "write_file", "WriteFile", "edit"),
            discarded_frame(
                "call_1",
                "write_file",
                "WriteFile (discarded: the model retried)"
            ),
            preparing_frame("call_2", "read_file", "ReadFile", "read"),
            read_a_in_progress(dir.path(), "call_2"),
        ]
    );
    assert_eq!(updates[4]["status"], json!("completed"));
    assert_eq!(updates[5], message("Done."));
    client.assert_no_card_left_pending();
}

#[tokio::test]
async fn a_cancel_during_argument_streaming_discards_the_card_and_answers_cancelled() {
    let dir = project();
    let provider = ScriptedProvider::new(vec![vec![preparing("call_1", "write_file"), Step::Hang]]);
    let mut client = TestClient::start(TestFactory::new(provider), fs_caps(false, false)).await;
    let sid = client.new_session(dir.path()).await;
    let prompt = client.prompt(&sid, "go");
    client
        .until(|m| m["params"]["update"]["sessionUpdate"] == "tool_call")
        .await;
    client.cancel(&sid);
    let response = prompt.await.unwrap().unwrap();
    client.drain();

    assert_eq!(
        response.stop_reason,
        agent_client_protocol::v1::schema::StopReason::Cancelled
    );
    assert_eq!(
        client.updates(),
        vec![
            preparing_frame("call_1", "write_file", "WriteFile", "edit"),
            discarded_frame("call_1", "write_file", "WriteFile (discarded: cancelled)"),
        ]
    );
    client.assert_no_card_left_pending();
}

#[tokio::test]
async fn todo_write_becomes_a_plan_and_never_a_card() {
    let dir = project();
    let todos = json!({"todos": [
        {"id": "1", "content": "Read the code", "status": "completed"},
        {"id": "2", "content": "Fix the bug", "status": "in_progress"},
    ]});
    let provider = ScriptedProvider::new(vec![
        vec![
            preparing("call_t", "todo_write"),
            call("call_t", "todo_write", todos),
            finish(FinishReason::ToolCalls),
        ],
        answer("Planned."),
    ]);
    let mut client = TestClient::start(TestFactory::new(provider), fs_caps(false, false)).await;
    let sid = client.new_session(dir.path()).await;
    client.prompt(&sid, "plan").await.unwrap().unwrap();
    client.drain();

    assert_eq!(
        client.updates(),
        vec![
            json!({"sessionUpdate": "plan", "entries": [
                {"content": "Read the code", "priority": "medium", "status": "completed"},
                {"content": "Fix the bug", "priority": "medium", "status": "in_progress"},
            ]}),
            message("Planned."),
        ]
    );
}

/// A server labelling batches, answering one `read_file` task.
fn labelling_factory() -> std::sync::Arc<TestFactory> {
    let provider = ScriptedProvider::new(vec![read_a_script("call_1"), answer("Done.")]);
    let mut factory = TestFactory::new(provider);
    std::sync::Arc::get_mut(&mut factory).unwrap().summaries = true;
    factory
}

/// The standard frame carrying the label of the `read a.txt` batch.
fn labelled_read(sid: &str) -> Value {
    json!({
        "method": "session/update",
        "params": {"sessionId": sid, "update": {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "call_1",
            "title": "Read a.txt",
            "kind": "read",
            "status": "completed",
            "_meta": {"toolUseSummary": {"label": "Read a.txt", "toolCallIds": ["call_1"]}},
        }},
    })
}

#[tokio::test]
async fn a_tool_use_summary_reaches_the_client_as_meta_on_its_calls() {
    let dir = project();
    let mut client = TestClient::start(labelling_factory(), fs_caps(false, false)).await;
    let sid = client.new_session(dir.path()).await;
    client.prompt(&sid, "read a").await.unwrap().unwrap();
    let label = client
        .until(|m| m["params"]["update"]["_meta"]["toolUseSummary"].is_object())
        .await;
    assert_eq!(label, labelled_read(&sid));
    // The prompt's answer came first; give a stray notification the time to show up.
    client.prompt(&sid, "/stats").await.unwrap().unwrap();
    client.drain();
    let notifications: Vec<&Value> = client
        .seen
        .iter()
        .filter(|m| m["method"] == "_corvid/tool_use_summary")
        .collect();
    assert_eq!(notifications, Vec::<&Value>::new());
    client.assert_no_card_left_pending();
}

#[tokio::test]
async fn a_client_that_opted_in_also_gets_the_summary_notification() {
    let dir = project();
    let mut client = TestClient::start_opted_in(labelling_factory()).await;
    let sid = client.new_session(dir.path()).await;
    client.prompt(&sid, "read a").await.unwrap().unwrap();
    let summary = client
        .until(|m| m["method"] == "_corvid/tool_use_summary")
        .await;
    assert_eq!(
        summary["params"],
        json!({"sessionId": sid, "summary": "Read a.txt", "precedingToolUseIds": ["call_1"]})
    );
    // The standard frame went out right before it.
    assert_eq!(client.seen[client.seen.len() - 2], labelled_read(&sid));
}

#[tokio::test]
async fn max_tokens_and_refusals_are_reported_as_stop_reasons() {
    use agent_client_protocol::v1::schema::StopReason;
    let dir = project();
    let provider = ScriptedProvider::new(vec![
        vec![text("Half an ans"), finish(FinishReason::MaxTokens)],
        vec![finish(FinishReason::ContentFilter)],
    ]);
    let client = TestClient::start(TestFactory::new(provider), fs_caps(false, false)).await;
    let sid = client.new_session(dir.path()).await;
    let first = client.prompt(&sid, "long").await.unwrap().unwrap();
    let second = client.prompt(&sid, "bad").await.unwrap().unwrap();
    assert_eq!(
        (first.stop_reason, second.stop_reason),
        (StopReason::MaxTokens, StopReason::Refusal)
    );
}

#[tokio::test]
async fn a_failure_that_survives_retries_is_a_json_rpc_error_with_a_clear_message() {
    let dir = project();
    let provider = ScriptedProvider::new(vec![vec![Step::Fail(corvid_protocol::ErrorInfo::new(
        corvid_protocol::ErrorKind::BadRequest,
        "model `nope` does not exist",
    ))]]);
    let client = TestClient::start(TestFactory::new(provider), fs_caps(false, false)).await;
    let sid = client.new_session(dir.path()).await;
    let error = client.prompt(&sid, "hi").await.unwrap().unwrap_err();
    assert_eq!(error.code, agent_client_protocol::ErrorCode::INTERNAL_ERROR);
    assert!(
        error.message.contains("model `nope` does not exist"),
        "{}",
        error.message
    );
    // The session survives the failed prompt.
    let provider_gone = client.prompt(&sid, "again").await.unwrap().unwrap_err();
    assert!(
        provider_gone.message.contains("no response left"),
        "{}",
        provider_gone.message
    );
}
