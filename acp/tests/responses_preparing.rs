//! The tool card over ACP with a real OpenAI Responses provider on loopback HTTP: it shows
//! as soon as the `function_call` item is added, while every argument byte is still held
//! back by the server (SPEC §2.4, §5).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::{TestClient, TestFactory, fs_caps, message, preparing_frame, project};
use corvid_providers::{ApiKey, OpenAiResponsesProvider, ProviderConfig};
use corvid_testkit::{Chunk, Gate, MockServer, ScriptedResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn event(seq: u64, kind: &str, fields: Value) -> Chunk {
    let mut data = json!({"type": kind, "sequence_number": seq});
    data.as_object_mut()
        .unwrap()
        .extend(fields.as_object().unwrap().clone());
    Chunk::new(format!("event: {kind}\ndata: {data}\n\n"))
}

fn completed(seq: u64) -> Chunk {
    event(
        seq,
        "response.completed",
        json!({"response": {"id": "resp_1", "status": "completed", "usage":
            {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}}),
    )
}

#[tokio::test]
async fn the_card_shows_at_the_added_function_call_before_any_argument_arrives() {
    let dir = project();
    let server = MockServer::start().await;
    let gate = Gate::new();
    let item = json!({"id": "fc_1", "type": "function_call", "status": "in_progress",
                      "arguments": "", "call_id": "call_1", "name": "read_file"});
    let args = r#"{"file_path":"a.txt"}"#;
    server.push(ScriptedResponse::sse(vec![
        event(0, "response.created", json!({"response": {"id": "resp_1", "status": "in_progress"}})),
        event(1, "response.output_item.added", json!({"output_index": 0, "item": item})),
        event(
            2,
            "response.function_call_arguments.delta",
            json!({"item_id": "fc_1", "output_index": 0, "delta": args}),
        )
        .gate(&gate),
        event(
            3,
            "response.output_item.done",
            json!({"output_index": 0, "item": {"id": "fc_1", "type": "function_call",
                   "status": "completed", "arguments": args, "call_id": "call_1", "name": "read_file"}}),
        ),
        completed(4),
    ]));
    server.push(ScriptedResponse::sse(vec![
        event(0, "response.output_item.added", json!({"output_index": 0, "item":
            {"id": "msg_1", "type": "message", "status": "in_progress", "content": [], "role": "assistant"}})),
        event(1, "response.output_text.delta", json!({"item_id": "msg_1", "output_index": 0,
            "content_index": 0, "delta": "Done."})),
        completed(2),
    ]));
    let _ = rustls::crypto::ring::default_provider().install_default();
    let provider = OpenAiResponsesProvider::new(&ProviderConfig {
        base_url: server.url(),
        api_key: ApiKey::new("sk-test"),
        ..ProviderConfig::default()
    })
    .unwrap();
    let mut client =
        TestClient::start(TestFactory::real(Arc::new(provider)), fs_caps(false, false)).await;
    let sid = client.new_session(dir.path()).await;
    let prompt = client.prompt(&sid, "read a");

    let card = client
        .until(|m| m["params"]["update"]["sessionUpdate"] == "tool_call")
        .await;
    // The arguments are provably still on the server while the card is up.
    gate.wait_reached().await;
    assert_eq!(
        card["params"]["update"],
        preparing_frame("call_1", "read_file", "ReadFile", "read")
    );
    gate.open();
    let response = prompt.await.unwrap().unwrap();
    client.drain();
    assert_eq!(
        serde_json::to_value(&response).unwrap()["stopReason"],
        "end_turn"
    );
    let updates = client.updates();
    assert_eq!(updates.last(), Some(&message("Done.")));
    assert!(
        updates
            .iter()
            .any(|u| u["toolCallId"] == "call_1" && u["status"] == "completed"),
        "{updates:#?}"
    );
    client.assert_no_card_left_pending();
}
