//! Bad input on the wire never takes the server down (issue 15 finding 9, issue 14 item 20):
//! raw JSON-RPC lines written to the real line transport, answers read back line by line.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::raw::RawClient;
use common::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

#[tokio::test]
async fn invalid_utf8_on_acp_stdin_is_a_parse_error() {
    let dir = project();
    let mut client = RawClient::start(1 << 16, ScriptedProvider::new(vec![answer("Still here.")]));
    client.initialize().await;
    let sid = client.new_session(1, dir.path()).await;

    client
        .send_bytes(
            b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/prompt\",\"params\":\"\xff\"}",
        )
        .await;
    let error = client.answer().await;
    assert_eq!(
        (error["id"].clone(), error["error"]["code"].clone()),
        (Value::Null, json!(-32700))
    );

    // The connection and the session survive: a valid prompt still works.
    client
        .send(
            json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
            "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}}),
        )
        .await;
    assert_eq!(
        client.response(3).await["result"]["stopReason"],
        json!("end_turn")
    );
}

#[tokio::test]
async fn a_prompt_with_unknown_fields_is_accepted() {
    let dir = project();
    let provider = ScriptedProvider::new(vec![answer("Fine.")]);
    let mut client = RawClient::start(1 << 16, provider.clone());
    client.initialize().await;
    let sid = client.new_session(1, dir.path()).await;
    client
        .send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {
            "sessionId": sid,
            "prompt": [{"type": "text", "text": "hi", "annotations": {"priority": 1}, "futureField": 7}],
            "futureOption": {"nested": true},
            "_meta": {"someEditor": {"trace": "x"}},
        }}))
        .await;
    assert_eq!(
        client.response(2).await["result"]["stopReason"],
        json!("end_turn")
    );
    assert_eq!(
        provider.requests()[0].messages,
        vec![corvid_protocol::Message::user_text("hi")]
    );
}

#[tokio::test]
async fn a_request_on_an_unknown_session_is_an_error_naming_it() {
    let mut client = RawClient::start(1 << 16, ScriptedProvider::new(vec![]));
    client.initialize().await;
    client
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/prompt",
            "params": {"sessionId": "no-such-session", "prompt": [{"type": "text", "text": "hi"}]}}))
        .await;
    client
        .send(
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/set_mode",
            "params": {"sessionId": "no-such-session", "modeId": "yolo"}}),
        )
        .await;
    let expected = json!({
        "code": -32002,
        "message": "unknown session `no-such-session`; create one with session/new",
    });
    assert_eq!(client.response(1).await["error"], expected);
    assert_eq!(client.response(2).await["error"], expected);
}

#[tokio::test]
async fn a_second_prompt_while_one_runs_is_refused_and_the_first_goes_on() {
    let dir = project();
    let provider = ScriptedProvider::new(vec![vec![text("Working"), Step::Hang]]);
    let mut client = RawClient::start(1 << 16, provider.clone());
    client.initialize().await;
    let sid = client.new_session(1, dir.path()).await;
    let prompt = |id: u64, text: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}})
    };
    client.send(prompt(2, "first")).await;
    // The first prompt is running once its text streams.
    loop {
        let message = client.next().await;
        if message["params"]["update"]["sessionUpdate"] == "agent_message_chunk" {
            break;
        }
    }
    client.send(prompt(3, "second")).await;
    assert_eq!(
        client.response(3).await["error"],
        json!({
            "code": -32600,
            "message": "a prompt is already running in this session; wait for its answer or \
                        send session/cancel first",
        })
    );
    client
        .send(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}}))
        .await;
    assert_eq!(
        client.response(2).await["result"]["stopReason"],
        json!("cancelled")
    );
    // The refused prompt never reached the model.
    assert_eq!(provider.requests().len(), 1);
}

#[tokio::test]
async fn a_line_over_the_cap_is_dropped_and_answered_as_a_parse_error() {
    let dir = project();
    let mut client = RawClient::start(1 << 16, ScriptedProvider::new(vec![answer("Still here.")]));
    client.initialize().await;
    let sid = client.new_session(1, dir.path()).await;

    // A valid prompt, but longer than a message may be: sent in pieces, as a client that
    // never ends its line would, then ended.
    let text = "a".repeat(corvid_acp::MAX_LINE_BYTES);
    let line = json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}})
    .to_string();
    drop(text);
    client.send_bytes(line.as_bytes()).await;
    drop(line);
    let error = client.answer().await;
    assert_eq!(
        (error["id"].clone(), error["error"]["code"].clone()),
        (Value::Null, json!(-32700))
    );

    // The connection and the session survive.
    client
        .send(
            json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
            "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}}),
        )
        .await;
    assert_eq!(
        client.response(3).await["result"]["stopReason"],
        json!("end_turn")
    );
}
