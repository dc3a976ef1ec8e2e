//! `model.store: true` on the Responses API over loopback HTTP: the second turn names the
//! first response and sends only the new items; a server that no longer knows the id gets the
//! same turn whole, and the session goes on.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use corvid_protocol::{
    ErrorKind, FinishReason, Message, ModelRequest, Part, Role, StreamEvent, StreamItem,
    ToolResult, ToolSchema,
};
use corvid_providers::{OpenAiResponsesProvider, Provider, ResponseStorage};
use corvid_testkit::{MockServer, ScriptedResponse, fixtures};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// The body OpenAI answers for an unknown `previous_response_id` (HTTP 400).
const UNKNOWN_ID_BODY: &str = r#"{
  "error": {
    "message": "Previous response with id 'resp_0a1b2c3d4e5f60718293a4b5c6d7e8f9' not found.",
    "type": "invalid_request_error",
    "param": "previous_response_id",
    "code": "previous_response_not_found"
  }
}"#;

fn provider(server: &MockServer) -> OpenAiResponsesProvider {
    OpenAiResponsesProvider::new(&common::config(server, "sk-store", Vec::new()))
        .unwrap()
        .with_cache_key("session-7")
        .with_storage(ResponseStorage::Stored)
}

fn request(messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        model: "gpt-5.1-codex".into(),
        system: "You are terse.".into(),
        messages: messages.into(),
        tools: vec![std::sync::Arc::new(ToolSchema {
            name: "read_file".into(),
            description: "Reads a file".into(),
            parameters: json!({"type": "object"}).into(),
        })],
        max_output_tokens: None,
        temperature: None,
    }
}

/// Queues a recorded body, sent one event per chunk.
fn replay(server: &MockServer, name: &str) {
    let fixture = fixtures::load(&format!("openai-responses/{name}"));
    server.push(ScriptedResponse::sse(fixtures::split_into_events(
        &fixture.body,
    )));
}

/// The id of the response a recorded body completes.
fn completed_id(name: &str) -> String {
    let fixture = fixtures::load(&format!("openai-responses/{name}"));
    fixture
        .body
        .split(|b| *b == b'\n')
        .filter_map(|l| l.strip_prefix(b"data: "))
        .map(|d| serde_json::from_slice::<Value>(d).unwrap())
        .find(|e| e["type"] == "response.completed")
        .map(|e| e["response"]["id"].as_str().unwrap().to_owned())
        .unwrap()
}

/// The assistant message the core keeps from a stream: thoughts with their opaque item,
/// text, calls.
fn assistant_from(items: &[StreamItem]) -> Message {
    let mut parts = Vec::new();
    let mut text = String::new();
    for item in items {
        match item.as_ref().unwrap() {
            StreamEvent::ThoughtData { data } => parts.push(Part::Thought {
                text: String::new(),
                signature: None,
                provider_data: Some(data.clone()),
            }),
            StreamEvent::Text { text: t } => text.push_str(t),
            StreamEvent::ToolCall(call) => parts.push(Part::ToolCall(call.clone())),
            _ => {}
        }
    }
    if !text.is_empty() {
        parts.push(Part::Text { text });
    }
    Message {
        role: Role::Assistant,
        parts,
    }
}

/// The user message answering every call of `assistant`.
fn results_for(assistant: &Message) -> Message {
    let parts = assistant
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::ToolCall(call) => Some(Part::ToolResult(ToolResult {
                call_id: call.call_id.clone(),
                name: call.name.clone(),
                output: "port = 8080".into(),
                is_error: false,
                images: Vec::new(),
            })),
            _ => None,
        })
        .collect();
    Message {
        role: Role::User,
        parts,
    }
}

fn finished(items: &[StreamItem]) -> Option<FinishReason> {
    match items.last() {
        Some(Ok(StreamEvent::Finished { reason })) => Some(reason.clone()),
        _ => None,
    }
}

const CALL_ID: &str = "call_Qm4rT8vX2zB6nF1hK5pL9sW3";

#[tokio::test]
async fn with_store_the_second_turn_names_the_first_response_and_sends_only_the_call_output() {
    let server = MockServer::start().await;
    replay(&server, "reasoning_then_function_call");
    replay(&server, "text_only");
    let provider = provider(&server);
    let prompt = Message::user_text("port?");
    let first = common::drain(provider.stream(request(vec![prompt.clone()]))).await;
    assert_eq!(finished(&first), Some(FinishReason::ToolCalls));
    let assistant = assistant_from(&first);
    let second = common::drain(provider.stream(request(vec![
        prompt,
        assistant.clone(),
        results_for(&assistant),
    ])))
    .await;
    assert_eq!(finished(&second), Some(FinishReason::Stop));

    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    let (one, two) = (&sent[0].body, &sent[1].body);
    assert_eq!(one["store"], true);
    assert!(one.get("previous_response_id").is_none(), "{one}");
    assert_eq!(
        one["input"],
        json!([{"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "port?"}]}])
    );
    assert_eq!(
        two["previous_response_id"],
        completed_id("reasoning_then_function_call")
    );
    assert_eq!(
        two["input"],
        json!([{"type": "function_call_output", "call_id": CALL_ID, "output": "port = 8080"}])
    );
    // What a stored response does not carry over is sent again every time.
    assert_eq!(two["store"], true);
    assert_eq!(two["instructions"], "You are terse.");
    assert_eq!(two["tools"][0]["name"], "read_file");
    assert_eq!(two["prompt_cache_key"], "session-7");
}

#[tokio::test]
async fn an_unknown_previous_response_is_sent_again_whole_and_the_next_turn_continues_the_new_one()
{
    let server = MockServer::start().await;
    replay(&server, "reasoning_then_function_call");
    server.push(ScriptedResponse::error(400, UNKNOWN_ID_BODY));
    replay(&server, "text_only");
    replay(&server, "text_only");
    let provider = provider(&server);
    let prompt = Message::user_text("port?");
    let first = common::drain(provider.stream(request(vec![prompt.clone()]))).await;
    let assistant = assistant_from(&first);
    let mut history = vec![prompt, assistant.clone(), results_for(&assistant)];
    let second = common::drain(provider.stream(request(history.clone()))).await;
    assert!(second.iter().all(Result::is_ok), "{second:?}");
    assert_eq!(finished(&second), Some(FinishReason::Stop));

    let sent = server.requests();
    assert_eq!(sent.len(), 3, "the chained try, then the same turn whole");
    assert_eq!(
        sent[1].body["previous_response_id"],
        completed_id("reasoning_then_function_call")
    );
    let whole = &sent[2].body;
    assert!(whole.get("previous_response_id").is_none(), "{whole}");
    assert_eq!(whole["store"], true);
    let kinds: Vec<&str> = whole["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "message",
            "reasoning",
            "function_call",
            "function_call_output"
        ]
    );
    assert!(
        whole["input"][1]["encrypted_content"]
            .as_str()
            .unwrap()
            .starts_with("gAAAA")
    );

    // The response the whole request produced is the one the next turn continues.
    history.push(assistant_from(&second));
    history.push(Message::user_text("thanks"));
    common::drain(provider.stream(request(history))).await;
    let third = &server.requests()[3].body;
    assert_eq!(third["previous_response_id"], completed_id("text_only"));
    assert_eq!(
        third["input"],
        json!([{"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "thanks"}]}])
    );
}

#[tokio::test]
async fn the_unknown_id_sent_as_an_error_event_on_the_stream_also_falls_back() {
    let server = MockServer::start().await;
    replay(&server, "text_only");
    server.push(ScriptedResponse::sse_body(
        "data: {\"type\":\"error\",\"status\":400,\"error\":{\"code\":\"previous_response_not_found\",\
         \"message\":\"Previous response with id 'resp_2c3d4e5f60718293a4b5c6d7e8f90a1b' not found.\"}}\n\n",
    ));
    replay(&server, "text_only");
    let provider = provider(&server);
    let prompt = Message::user_text("port?");
    let first = common::drain(provider.stream(request(vec![prompt.clone()]))).await;
    let history = vec![prompt, assistant_from(&first), Message::user_text("and?")];
    let second = common::drain(provider.stream(request(history))).await;
    assert_eq!(finished(&second), Some(FinishReason::Stop));
    let sent = server.requests();
    assert_eq!(sent.len(), 3);
    assert_eq!(
        sent[1].body["previous_response_id"],
        completed_id("text_only")
    );
    assert!(sent[2].body.get("previous_response_id").is_none());
    assert_eq!(sent[2].body["input"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn another_bad_request_on_a_continued_turn_is_the_turn_s_error_and_is_not_resent() {
    let server = MockServer::start().await;
    replay(&server, "text_only");
    server.push(ScriptedResponse::error(
        400,
        r#"{"error":{"message":"Invalid value for 'input[0].content'.","type":"invalid_request_error","param":"input[0].content","code":"invalid_value"}}"#,
    ));
    let provider = provider(&server);
    let prompt = Message::user_text("port?");
    let first = common::drain(provider.stream(request(vec![prompt.clone()]))).await;
    let history = vec![prompt, assistant_from(&first), Message::user_text("and?")];
    let second = common::drain(provider.stream(request(history))).await;
    let error = second.last().unwrap().clone().unwrap_err();
    assert_eq!(error.kind, ErrorKind::BadRequest);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_history_that_does_not_continue_the_last_response_is_sent_whole() {
    let server = MockServer::start().await;
    replay(&server, "reasoning_then_function_call");
    replay(&server, "text_only");
    replay(&server, "text_only");
    let provider = provider(&server);
    let prompt = Message::user_text("port?");
    let first = common::drain(provider.stream(request(vec![prompt.clone()]))).await;
    let assistant = assistant_from(&first);

    // The core renamed the call (a duplicate id): the stored output no longer matches.
    let mut renamed = assistant.clone();
    for part in &mut renamed.parts {
        if let Part::ToolCall(call) = part {
            call.call_id = format!("{CALL_ID}__dup_2");
        }
    }
    let results = results_for(&renamed);
    common::drain(provider.stream(request(vec![prompt.clone(), renamed, results]))).await;
    // A compacted history: the prefix the response answered is gone.
    common::drain(provider.stream(request(vec![
        Message::user_text("Summary of the conversation so far: port?"),
        assistant_from(&first),
        results_for(&assistant),
    ])))
    .await;
    let sent = server.requests();
    for body in [&sent[1].body, &sent[2].body] {
        assert!(body.get("previous_response_id").is_none(), "{body}");
        assert_eq!(body["input"].as_array().unwrap().len(), 4, "{body}");
    }
}

#[tokio::test]
async fn a_side_request_neither_continues_nor_replaces_the_session_s_last_response() {
    let server = MockServer::start().await;
    replay(&server, "text_only");
    replay(&server, "text_only");
    replay(&server, "text_only");
    let provider = provider(&server);
    let prompt = Message::user_text("port?");
    let first = common::drain(provider.stream(request(vec![prompt.clone()]))).await;
    let assistant = assistant_from(&first);
    // A summary through the same provider, with a history that would continue it.
    let summary = vec![
        prompt.clone(),
        assistant.clone(),
        Message::user_text("Label:"),
    ];
    provider.complete(request(summary)).await.unwrap();
    common::drain(provider.stream(request(vec![prompt, assistant, Message::user_text("and?")])))
        .await;
    let sent = server.requests();
    assert!(sent[1].body.get("previous_response_id").is_none());
    assert_eq!(
        sent[2].body["previous_response_id"],
        completed_id("text_only")
    );
    assert_eq!(sent[2].body["input"].as_array().unwrap().len(), 1);
}
