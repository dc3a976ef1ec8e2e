//! The Anthropic Messages provider over real loopback HTTP (corvid-testkit).

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use corvid_protocol::{
    Completion, ErrorKind, FinishReason, Message, ModelRequest, Part, Role, StreamEvent, ToolCall,
    ToolResult, ToolSchema, Usage,
};
use corvid_providers::{AnthropicProvider, Provider, WireProtocol};
use corvid_testkit::{Chunk, Gate, MockServer, ScriptedResponse, fixtures};
use pretty_assertions::assert_eq;
use serde_json::json;

const KEY: &str = "sk-ant-test-secret";

fn provider(server: &MockServer) -> AnthropicProvider {
    AnthropicProvider::new(&common::config(server, KEY, Vec::new())).expect("provider")
}

fn request() -> ModelRequest {
    ModelRequest {
        model: "claude-test".into(),
        system: "Be brief.".into(),
        messages: vec![Message::user_text("Weather in Oslo?")].into(),
        tools: vec![std::sync::Arc::new(ToolSchema {
            name: "weather".into(),
            description: "Weather for a place".into(),
            parameters: json!({"type": "object"}).into(),
        })],
        max_output_tokens: None,
        temperature: None,
    }
}

fn event(name: &str, data: serde_json::Value) -> Chunk {
    Chunk::new(format!("event: {name}\ndata: {data}\n\n"))
}

#[tokio::test]
async fn preparing_arrives_at_content_block_start_while_the_input_is_held_back() {
    let server = MockServer::start().await;
    let gate = Gate::new();
    server.push(ScriptedResponse::sse(vec![
        event("message_start", json!({"type": "message_start", "message": {"usage": {"input_tokens": 7, "output_tokens": 1}}})),
        event("content_block_start", json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}})),
        event("content_block_delta", json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "{\"location\": \"Oslo\"}"}})).gate(&gate),
        event("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
        event("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 20}})),
        event("message_stop", json!({"type": "message_stop"})),
    ]));
    let mut stream = provider(&server).stream(request());
    let usage = |output| Usage {
        input_tokens: 7,
        output_tokens: output,
        total_tokens: 7 + output,
        ..Usage::default()
    };
    assert_eq!(
        common::next(&mut stream).await,
        Some(Ok(StreamEvent::Usage(usage(1))))
    );
    let preparing = StreamEvent::ToolPreparing {
        call_id: "toolu_1".into(),
        tool_name: "weather".into(),
    };
    assert_eq!(common::next(&mut stream).await, Some(Ok(preparing)));
    gate.wait_reached().await; // the input is provably still on the server

    gate.open();
    let call = ToolCall {
        call_id: "toolu_1".into(),
        name: "weather".into(),
        args: json!({"location": "Oslo"}),
    };
    assert_eq!(
        common::drain(stream).await,
        vec![
            Ok(StreamEvent::Usage(usage(20))),
            Ok(StreamEvent::ToolCall(call)),
            Ok(StreamEvent::Finished {
                reason: FinishReason::ToolCalls
            }),
        ]
    );
}

#[tokio::test]
async fn a_recorded_thinking_stream_yields_what_the_decoder_yields() {
    let fixture = fixtures::load("anthropic/thinking_then_tool_use");
    let server = common::replaying_events(&fixture.body).await;
    let items = common::drain(provider(&server).stream(request())).await;
    assert_eq!(
        items,
        common::decoded(WireProtocol::AnthropicMessages, &fixture.body)
    );
    let signatures = items
        .iter()
        .filter(|i| matches!(i, Ok(StreamEvent::ThoughtSignature { .. })))
        .count();
    assert_eq!(signatures, 1);
}

#[tokio::test]
async fn an_error_event_mid_tool_use_is_overloaded_and_releases_no_call() {
    let fixture = fixtures::load("anthropic/overloaded_error_mid_tool_use");
    let server = common::replaying_events(&fixture.body).await;
    let items = common::drain(provider(&server).stream(request())).await;
    assert_eq!(
        items
            .iter()
            .filter(|i| matches!(i, Ok(StreamEvent::ToolCall(_))))
            .count(),
        0
    );
    let last = items.last().cloned().expect("an item");
    assert_eq!(
        last.map_err(|e| (e.kind, e.message)),
        Err((ErrorKind::Overloaded, "Overloaded".to_owned()))
    );
}

#[tokio::test]
async fn the_request_sends_signed_thinking_back_and_pairs_tool_results() {
    let server = MockServer::start().await;
    server.push(ScriptedResponse::sse(vec![
        event(
            "message_start",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 3}}}),
        ),
        event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
        ),
        event("message_stop", json!({"type": "message_stop"})),
    ]));
    let mut req = request();
    req.messages.extend([
        Message {
            role: Role::Assistant,
            parts: vec![
                Part::Thought {
                    text: "Need the tool.".into(),
                    signature: Some("sig-1".into()),
                    provider_data: None,
                },
                Part::Thought {
                    text: "unsigned, dropped".into(),
                    signature: None,
                    provider_data: None,
                },
                Part::Text {
                    text: "Checking.".into(),
                },
                Part::ToolCall(ToolCall {
                    call_id: "toolu_a".into(),
                    name: "weather".into(),
                    args: json!({"location": "Oslo"}),
                }),
            ],
        },
        Message {
            role: Role::User,
            parts: vec![Part::ToolResult(ToolResult {
                call_id: "toolu_a".into(),
                name: "weather".into(),
                output: "rain".into(),
                is_error: false,
                images: Vec::new(),
            })],
        },
        Message::user_text("And tomorrow?"),
    ]);
    let items = common::drain(provider(&server).stream(req)).await;
    assert_eq!(
        items.last(),
        Some(&Ok(StreamEvent::Finished {
            reason: FinishReason::Stop
        }))
    );

    let sent = server.requests();
    let r = &sent[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/messages")
    );
    assert_eq!(
        (r.header("x-api-key"), r.header("anthropic-version")),
        (Some(KEY), Some("2023-06-01"))
    );
    assert_eq!(r.header("authorization"), None);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(
        r.body,
        json!({
            "model": "claude-test",
            "max_tokens": 8192,
            // Cache breakpoints: the system prompt (with the tools before it) and the last
            // block of the last two messages.
            "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "Need the tool.", "signature": "sig-1"},
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "toolu_a", "name": "weather", "input": {"location": "Oslo"},
                     "cache_control": {"type": "ephemeral"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_a", "content": "rain"},
                    {"type": "text", "text": "And tomorrow?", "cache_control": {"type": "ephemeral"}},
                ]},
            ],
            "tools": [{"name": "weather", "description": "Weather for a place", "input_schema": {"type": "object"}}],
            "stream": true,
        })
    );
}

#[tokio::test]
async fn a_529_is_overloaded_with_the_request_id_from_the_body() {
    let fixture = fixtures::load("errors/anthropic_529_overloaded");
    let server = MockServer::start().await;
    server.push(ScriptedResponse::error(529, fixture.body.clone()));
    let items = common::drain(provider(&server).stream(request())).await;
    let [Err(error)] = items.as_slice() else {
        panic!("expected one error, got {items:?}");
    };
    assert_eq!(
        (
            error.kind,
            error.message.as_str(),
            error.request_id.as_deref()
        ),
        (
            ErrorKind::Overloaded,
            "Overloaded",
            Some("req_011CSHoEeqs5C35K2UUqR7Fy")
        )
    );
}

#[tokio::test]
async fn complete_converts_a_whole_message_with_input_in_the_block() {
    let server = MockServer::start().await;
    server.push(ScriptedResponse::json(
        200,
        json!({
            "id": "msg_1", "type": "message", "role": "assistant", "stop_reason": "tool_use",
            "content": [
                {"type": "text", "text": "On it."},
                {"type": "tool_use", "id": "toolu_9", "name": "weather", "input": {"location": "Rome"}},
            ],
            "usage": {"input_tokens": 10, "output_tokens": 4, "cache_read_input_tokens": 2},
        }),
    ));
    let completion = provider(&server)
        .complete(request())
        .await
        .expect("completion");
    assert_eq!(
        completion,
        Completion {
            text: "On it.".into(),
            tool_calls: vec![ToolCall {
                call_id: "toolu_9".into(),
                name: "weather".into(),
                args: json!({"location": "Rome"}),
            }],
            usage: Some(Usage {
                input_tokens: 12,
                output_tokens: 4,
                total_tokens: 16,
                cached_input_tokens: 2,
                reasoning_tokens: 0,
            }),
            finish_reason: Some(FinishReason::ToolCalls),
        }
    );
    assert_eq!(server.requests()[0].body["stream"], json!(false));
}

#[tokio::test]
async fn complete_reports_an_error_object_sent_under_http_200() {
    let server = MockServer::start().await;
    server.push(ScriptedResponse::json(
        200,
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ));
    let error = provider(&server)
        .complete(request())
        .await
        .expect_err("an error");
    assert_eq!(
        (error.kind, error.message.as_str()),
        (ErrorKind::Overloaded, "Overloaded")
    );
}
