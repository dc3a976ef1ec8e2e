//! The OpenAI Responses provider over real loopback HTTP (corvid-testkit), and what its
//! recorded streams carry beyond the shared fixture checks (reasoning, waits, bad input).

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use corvid_protocol::{
    ErrorKind, FinishReason, JsonText, Message, ModelRequest, Part, Role, StreamEvent, ToolCall,
    ToolResult, ToolSchema,
};
use corvid_providers::{
    OpenAiResponsesProvider, Provider, Reasoning, ReasoningEffort, WireProtocol, decode_body,
};
use corvid_testkit::{Gate, MockServer, ScriptedResponse, fixtures};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const KEY: &str = "sk-test-responses-secret";

fn provider(server: &MockServer) -> OpenAiResponsesProvider {
    OpenAiResponsesProvider::new(&common::config(server, KEY, Vec::new()))
        .expect("provider")
        .with_cache_key("session-42")
        .with_reasoning(Reasoning {
            effort: Some(ReasoningEffort::High),
            summary: None,
        })
}

fn request(messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        model: "gpt-5.1-codex".into(),
        system: "You are terse.".into(),
        messages: messages.into(),
        tools: vec![std::sync::Arc::new(ToolSchema {
            name: "read_file".into(),
            description: "Reads a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}})
                .into(),
        })],
        max_output_tokens: None,
        temperature: None,
    }
}

fn decoded(name: &str) -> Vec<corvid_protocol::StreamItem> {
    let fixture = fixtures::load(&format!("openai-responses/{name}"));
    common::decoded(WireProtocol::OpenAiResponses, &fixture.body)
}

#[tokio::test]
async fn a_tool_loop_sends_the_reasoning_item_back_verbatim_on_the_second_request() {
    let server = MockServer::start().await;
    let fixture = fixtures::load("openai-responses/reasoning_then_function_call");
    server.push(ScriptedResponse::sse(fixtures::split_into_events(
        &fixture.body,
    )));
    let provider = provider(&server);
    let first = common::drain(provider.stream(request(vec![Message::user_text("port?")]))).await;

    // The history the core keeps from that answer: the thought part with its opaque item.
    let data = first
        .iter()
        .find_map(|i| match i {
            Ok(StreamEvent::ThoughtData { data }) => Some(data.clone()),
            _ => None,
        })
        .expect("the reasoning item");
    let call = first
        .iter()
        .find_map(|i| match i {
            Ok(StreamEvent::ToolCall(c)) => Some(c.clone()),
            _ => None,
        })
        .expect("the call");
    let assistant = Message {
        role: Role::Assistant,
        parts: vec![
            Part::Thought {
                text: "summary".into(),
                signature: None,
                provider_data: Some(data),
            },
            Part::ToolCall(call.clone()),
        ],
    };
    let result = Message {
        role: Role::User,
        parts: vec![Part::ToolResult(ToolResult {
            call_id: call.call_id.clone(),
            name: call.name.clone(),
            output: "port = 8080".into(),
            is_error: false,
            images: Vec::new(),
        })],
    };
    server.push(ScriptedResponse::sse(fixtures::split_into_events(
        &fixtures::load("openai-responses/text_only").body,
    )));
    let second = common::drain(provider.stream(request(vec![
        Message::user_text("port?"),
        assistant,
        result,
    ])))
    .await;
    assert!(matches!(
        second.last(),
        Some(Ok(StreamEvent::Finished {
            reason: FinishReason::Stop
        }))
    ));

    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[1].path, "/responses");
    assert_eq!(
        sent[1].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let body = &sent[1].body;
    let original: Value = fixture
        .body
        .split(|b| *b == b'\n')
        .filter_map(|l| l.strip_prefix(b"data: "))
        .map(|d| serde_json::from_slice::<Value>(d).unwrap())
        .find(|e| e["type"] == "response.output_item.done" && e["item"]["type"] == "reasoning")
        .map(|e| e["item"].clone())
        .unwrap();
    let mut replayed = original.clone();
    replayed.as_object_mut().unwrap().remove("id");
    assert_eq!(
        body["input"],
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "port?"}]},
            replayed,
            {"type": "function_call", "call_id": "call_Qm4rT8vX2zB6nF1hK5pL9sW3",
             "name": "read_file", "arguments": "{\"path\":\"config.toml\"}"},
            {"type": "function_call_output", "call_id": "call_Qm4rT8vX2zB6nF1hK5pL9sW3",
             "output": "port = 8080"},
        ])
    );
    assert_eq!(
        body["input"][1]["encrypted_content"],
        original["encrypted_content"]
    );
    assert_eq!(body["instructions"], "You are terse.");
    assert_eq!(body["store"], false);
    assert_eq!(body["stream"], true);
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(body["prompt_cache_key"], "session-42");
    assert_eq!(
        body["reasoning"],
        json!({"effort": "high", "summary": "auto"})
    );
    assert_eq!(body["tool_choice"], "auto");
    assert_eq!(body["parallel_tool_calls"], true);
    assert_eq!(body["tools"][0]["strict"], false);
    assert_eq!(body["tools"][0]["name"], "read_file");
}

#[tokio::test]
async fn preparing_arrives_while_the_server_still_holds_back_the_arguments() {
    let fixture = fixtures::load("openai-responses/reasoning_then_function_call");
    let chunks = fixtures::split_into_events(&fixture.body);
    let at = fixture.expected["tool_calls"][0]["id_name_known_at_event"]
        .as_u64()
        .unwrap() as usize;
    let gate = Gate::new();
    let chunks: Vec<_> = chunks
        .into_iter()
        .enumerate()
        .map(|(i, c)| if i == at + 1 { c.gate(&gate) } else { c })
        .collect();
    let server = MockServer::start().await;
    server.push(ScriptedResponse::sse(chunks));
    let mut stream = provider(&server).stream(request(vec![Message::user_text("port?")]));
    loop {
        match common::next(&mut stream).await {
            Some(Ok(StreamEvent::ToolPreparing { call_id, tool_name })) => {
                assert_eq!(
                    (call_id.as_str(), tool_name.as_str()),
                    ("call_Qm4rT8vX2zB6nF1hK5pL9sW3", "read_file")
                );
                break;
            }
            Some(Ok(StreamEvent::ToolCall(_))) | None | Some(Err(_)) => {
                panic!("no preparing before the arguments")
            }
            Some(Ok(_)) => {}
        }
    }
    gate.wait_reached().await; // every argument byte is provably still on the server
    gate.open();
    let rest = common::drain(stream).await;
    assert!(rest.iter().any(
        |i| matches!(i, Ok(StreamEvent::ToolCall(c)) if c.args == json!({"path": "config.toml"}))
    ));
}

#[tokio::test]
async fn a_recorded_stream_sent_event_by_event_yields_what_the_decoder_yields() {
    for name in ["parallel_function_calls", "text_only", "failed_rate_limit"] {
        let fixture = fixtures::load(&format!("openai-responses/{name}"));
        let server = common::replaying_events(&fixture.body).await;
        let items =
            common::drain(provider(&server).stream(request(vec![Message::user_text("x")]))).await;
        assert_eq!(
            (name, items),
            (
                name,
                common::decoded(WireProtocol::OpenAiResponses, &fixture.body)
            )
        );
    }
}

#[tokio::test]
async fn a_connection_cut_mid_arguments_is_truncation_and_releases_no_call() {
    let fixture = fixtures::load("openai-responses/cut_mid_arguments");
    let server = MockServer::start().await;
    server.push(ScriptedResponse::sse(fixtures::split_into_events(&fixture.body)).cut());
    let items =
        common::drain(provider(&server).stream(request(vec![Message::user_text("x")]))).await;
    assert!(
        items
            .iter()
            .any(|i| matches!(i, Ok(StreamEvent::ToolPreparing { .. })))
    );
    assert!(
        !items
            .iter()
            .any(|i| matches!(i, Ok(StreamEvent::ToolCall(_))))
    );
    let last = items.last().cloned().expect("an item");
    assert_eq!(last.map_err(|e| e.kind), Err(ErrorKind::StreamTruncated));
}

#[tokio::test]
async fn complete_collects_the_stream_into_one_completion() {
    let fixture = fixtures::load("openai-responses/text_only");
    let server = common::replaying_events(&fixture.body).await;
    let completion = provider(&server)
        .complete(request(vec![Message::user_text("port?")]))
        .await
        .expect("completion");
    assert_eq!(
        completion.text,
        "The port is **8080** (from `config.toml`)."
    );
    assert_eq!(completion.finish_reason, Some(FinishReason::Stop));
    assert_eq!(server.requests()[0].body["stream"], true);
}

#[tokio::test]
async fn a_server_that_ignores_stream_true_is_decoded_as_a_whole_response() {
    let server = MockServer::start().await;
    server.push(ScriptedResponse::json(
        200,
        json!({"id": "resp_1", "object": "response", "status": "completed",
               "output": [
                   {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "enc"},
                   {"id": "fc_1", "type": "function_call", "call_id": "call_9", "name": "read_file",
                    "arguments": "{\"path\":\"a\"}", "status": "completed"}],
               "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
                         "input_tokens_details": {"cached_tokens": 4},
                         "output_tokens_details": {"reasoning_tokens": 3}}}),
    ));
    let items =
        common::drain(provider(&server).stream(request(vec![Message::user_text("x")]))).await;
    let calls: Vec<_> = items
        .iter()
        .filter_map(|i| match i {
            Ok(StreamEvent::ToolCall(c)) => Some(c.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        vec![ToolCall {
            call_id: "call_9".into(),
            name: "read_file".into(),
            args: json!({"path": "a"}),
        }]
    );
    assert!(items.iter().any(|i| matches!(i, Ok(StreamEvent::ThoughtData { data }) if data.to_value() == json!({"type": "reasoning", "summary": [], "encrypted_content": "enc"}))));
    assert!(matches!(
        items.last(),
        Some(Ok(StreamEvent::Finished {
            reason: FinishReason::ToolCalls
        }))
    ));
}

#[test]
fn the_reasoning_summary_becomes_thoughts_and_the_item_is_kept_without_its_id() {
    let items = decoded("parallel_function_calls");
    let thought: String = items
        .iter()
        .filter_map(|i| match i {
            Ok(StreamEvent::Thought { text }) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thought, "**Two files**\n\nRead both at once.");
    let data: Vec<&JsonText> = items
        .iter()
        .filter_map(|i| match i {
            Ok(StreamEvent::ThoughtData { data }) => Some(data),
            _ => None,
        })
        .collect();
    assert_eq!(data.len(), 1);
    let item = data[0].to_value();
    assert_eq!(item["type"], "reasoning");
    assert!(item.get("id").is_none(), "{item}");
    assert!(
        item["encrypted_content"]
            .as_str()
            .unwrap()
            .starts_with("gAAAA")
    );
}

#[test]
fn a_rate_limit_failure_carries_the_wait_its_message_names() {
    let items = decoded("failed_rate_limit");
    let error = items.last().unwrap().clone().unwrap_err();
    assert_eq!(error.kind, ErrorKind::RateLimited);
    assert_eq!(error.retry_after_ms, Some(2666));
}

#[test]
fn running_out_of_output_tokens_is_a_max_tokens_finish_that_is_not_an_error() {
    let items = decoded("incomplete_max_output_tokens");
    assert_eq!(
        items.last(),
        Some(&Ok(StreamEvent::Finished {
            reason: FinishReason::MaxTokens
        }))
    );
}

#[test]
fn a_sequence_number_going_backwards_is_a_clear_error_naming_the_field() {
    let items = decoded("sequence_number_backwards");
    let error = items.last().unwrap().clone().unwrap_err();
    assert_eq!(error.kind, ErrorKind::BadResponse);
    assert!(!error.is_retryable());
    assert!(
        error.message.contains("sequence_number 1 came after 3"),
        "{}",
        error.message
    );
}

#[test]
fn the_error_event_forms_are_classified_by_their_code() {
    let kind = |name: &str| decoded(name).last().unwrap().clone().unwrap_err().kind;
    assert_eq!(kind("error_event"), ErrorKind::Server);
    assert_eq!(kind("error_event_nested"), ErrorKind::ContextTooLong);
    assert_eq!(kind("failed_context_length"), ErrorKind::ContextTooLong);
    assert_eq!(kind("failed_server_overloaded"), ErrorKind::Overloaded);
    assert_eq!(kind("failed_insufficient_quota"), ErrorKind::Auth);
    let whole = decode_body(
        WireProtocol::OpenAiResponses,
        b"data: {\"type\":\"response.created\",\"sequence_number\":0}\n\n",
    );
    assert_eq!(
        whole.last().unwrap().item.clone().map_err(|e| e.kind),
        Err(ErrorKind::StreamTruncated)
    );
}

/// A body of unnamed data events, one per JSON value.
fn body_of(events: &[Value]) -> Vec<u8> {
    events
        .iter()
        .map(|e| format!("data: {e}\n\n"))
        .collect::<String>()
        .into_bytes()
}

#[test]
fn a_call_whose_identity_comes_only_with_its_finished_item_is_prepared_then_and_still_runs() {
    let body = body_of(&[
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"id": "fc_1", "type": "function_call", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{\"a\":"}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "1}"}),
        json!({"type": "response.output_item.done", "output_index": 0,
               "item": {"id": "fc_1", "type": "function_call", "call_id": "call_late",
                        "name": "read_file", "arguments": "{\"a\":1}"}}),
        json!({"type": "response.completed", "response": {"status": "completed"}}),
    ]);
    let items: Vec<_> = decode_body(WireProtocol::OpenAiResponses, &body)
        .into_iter()
        .map(|e| (e.at, e.item))
        .collect();
    assert_eq!(
        items,
        vec![
            (
                Some(3),
                Ok(StreamEvent::ToolPreparing {
                    call_id: "call_late".into(),
                    tool_name: "read_file".into()
                })
            ),
            (
                Some(4),
                Ok(StreamEvent::ToolCall(ToolCall {
                    call_id: "call_late".into(),
                    name: "read_file".into(),
                    args: json!({"a": 1}),
                }))
            ),
            (
                Some(4),
                Ok(StreamEvent::Finished {
                    reason: FinishReason::ToolCalls
                })
            ),
        ]
    );
}

#[test]
fn unknown_events_are_ignored_and_arguments_that_are_not_an_object_are_kept_as_text() {
    let body = body_of(&[
        json!({"type": "response.web_search_call.searching", "sequence_number": 0}),
        json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
               "item": {"id": "fc_1", "type": "function_call", "call_id": "c1", "name": "t"}}),
        json!({"type": "response.function_call_arguments.delta", "sequence_number": 2,
               "item_id": "fc_1", "delta": "not json"}),
        json!({"type": "response.completed", "sequence_number": 3, "response": {}}),
    ]);
    let calls: Vec<_> = decode_body(WireProtocol::OpenAiResponses, &body)
        .into_iter()
        .filter_map(|e| match e.item {
            Ok(StreamEvent::ToolCall(c)) => Some(c.args),
            _ => None,
        })
        .collect();
    assert_eq!(calls, vec![json!("not json")]);
}
