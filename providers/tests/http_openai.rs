//! The OpenAI Chat provider over real loopback HTTP (corvid-testkit).

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use corvid_protocol::{
    Completion, ErrorKind, FinishReason, Message, ModelRequest, Part, Role, StreamEvent, ToolCall,
    ToolResult, ToolSchema, Usage,
};
use corvid_providers::{ApiKey, OpenAiChatProvider, Provider, ProviderConfig, WireProtocol};
use corvid_testkit::{Chunk, Gate, MockServer, ScriptedResponse, fixtures, sse_event};
use pretty_assertions::assert_eq;
use serde_json::json;

const KEY: &str = "sk-test-very-secret-key";

fn provider(server: &MockServer) -> OpenAiChatProvider {
    OpenAiChatProvider::new(&common::config(
        server,
        KEY,
        vec![("x-gateway".into(), "corvid-tests".into())],
    ))
    .expect("provider")
}

fn request() -> ModelRequest {
    ModelRequest {
        model: "gpt-test".into(),
        system: "You are terse.".into(),
        messages: vec![Message::user_text("What is the weather?")].into(),
        tools: vec![std::sync::Arc::new(ToolSchema {
            name: "weather".into(),
            description: "Weather for a place".into(),
            parameters: json!({"type": "object", "properties": {"location": {"type": "string"}}})
                .into(),
        })],
        max_output_tokens: Some(512),
        temperature: Some(0.5),
    }
}

fn chunk(delta: serde_json::Value, finish: Option<&str>) -> Chunk {
    let body = json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    sse_event(&body.to_string())
}

#[tokio::test]
async fn preparing_arrives_while_the_server_still_holds_back_the_arguments() {
    let server = MockServer::start().await;
    let gate = Gate::new();
    let identity = json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
        "function": {"name": "weather", "arguments": ""}}]});
    let rest =
        json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"location\":\"Oslo\"}"}}]});
    server.push(ScriptedResponse::sse(vec![
        chunk(identity, None),
        chunk(rest, None).gate(&gate),
        chunk(json!({}), Some("tool_calls")),
        sse_event("[DONE]"),
    ]));
    let mut stream = provider(&server).stream(request());

    let first = common::next(&mut stream).await;
    let preparing = StreamEvent::ToolPreparing {
        call_id: "call_1".into(),
        tool_name: "weather".into(),
    };
    assert_eq!(first, Some(Ok(preparing)));
    gate.wait_reached().await; // the arguments are provably still on the server

    gate.open();
    let call = ToolCall {
        call_id: "call_1".into(),
        name: "weather".into(),
        args: json!({"location": "Oslo"}),
    };
    assert_eq!(
        common::drain(stream).await,
        vec![
            Ok(StreamEvent::ToolCall(call)),
            Ok(StreamEvent::Finished {
                reason: FinishReason::ToolCalls
            }),
        ]
    );
}

#[tokio::test]
async fn a_recorded_stream_sent_event_by_event_yields_what_the_decoder_yields() {
    let fixture = fixtures::load("openai/parallel_tool_calls");
    let server = common::replaying_events(&fixture.body).await;
    let items = common::drain(provider(&server).stream(request())).await;
    assert_eq!(
        items,
        common::decoded(WireProtocol::OpenAiChat, &fixture.body)
    );
    let calls: Vec<&str> = items
        .iter()
        .filter_map(|i| match i {
            Ok(StreamEvent::ToolCall(c)) => Some(c.name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(calls, vec!["add", "multiply"]);
}

#[tokio::test]
async fn the_request_pairs_tool_results_with_their_calls_and_asks_for_usage() {
    let server = MockServer::start().await;
    server.push(ScriptedResponse::sse(vec![
        chunk(json!({"content": "Sunny."}), Some("stop")),
        sse_event("[DONE]"),
    ]));
    let mut req = request();
    req.messages.push(Message {
        role: Role::Assistant,
        parts: vec![
            Part::Text {
                text: "Checking.".into(),
            },
            Part::ToolCall(ToolCall {
                call_id: "call_a".into(),
                name: "weather".into(),
                args: json!({"location": "Oslo"}),
            }),
            Part::ToolCall(ToolCall {
                call_id: "call_b".into(),
                name: "weather".into(),
                args: json!("{\"location\": broken"),
            }),
        ],
    });
    req.messages.push(Message {
        role: Role::User,
        parts: vec![
            Part::ToolResult(ToolResult {
                call_id: "call_b".into(),
                name: "weather".into(),
                output: "arguments are not valid JSON".into(),
                is_error: true,
                images: Vec::new(),
            }),
            Part::ToolResult(ToolResult {
                call_id: "call_a".into(),
                name: "weather".into(),
                output: "12°C".into(),
                is_error: false,
                images: Vec::new(),
            }),
        ],
    });
    let items = common::drain(provider(&server).stream(req)).await;
    assert_eq!(
        items.last(),
        Some(&Ok(StreamEvent::Finished {
            reason: FinishReason::Stop
        }))
    );

    let sent = server.requests();
    assert_eq!(sent.len(), 1);
    let r = &sent[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/chat/completions")
    );
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(r.header("x-gateway"), Some("corvid-tests"));
    let types: Vec<&str> = r
        .headers
        .iter()
        .filter(|(n, _)| n == "content-type")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(types, vec!["application/json"]);
    assert_eq!(
        r.body,
        json!({
            "model": "gpt-test",
            "messages": [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "What is the weather?"},
                {"role": "assistant", "content": "Checking.", "tool_calls": [
                    {"id": "call_a", "type": "function",
                     "function": {"name": "weather", "arguments": "{\"location\":\"Oslo\"}"}},
                    {"id": "call_b", "type": "function",
                     "function": {"name": "weather", "arguments": "{\"location\": broken"}},
                ]},
                {"role": "tool", "tool_call_id": "call_a", "content": "12°C"},
                {"role": "tool", "tool_call_id": "call_b", "content": "arguments are not valid JSON"},
            ],
            "tools": [{"type": "function", "function": {
                "name": "weather", "description": "Weather for a place",
                "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
            }}],
            "max_tokens": 512,
            "temperature": 0.5,
            "stream": true,
            "stream_options": {"include_usage": true},
        })
    );
}

#[tokio::test]
async fn an_http_429_becomes_a_rate_limit_error_with_the_servers_wait_and_request_id() {
    let fixture = fixtures::load("errors/openai_429_rate_limit");
    let server = MockServer::start().await;
    server.push(
        ScriptedResponse::error(429, fixture.body.clone())
            .header("retry-after", "4")
            .header("retry-after-ms", "3890")
            .header("x-request-id", "req_abc"),
    );
    let items = common::drain(provider(&server).stream(request())).await;
    let [Err(error)] = items.as_slice() else {
        panic!("expected one error, got {items:?}");
    };
    assert_eq!(
        (
            error.kind,
            error.status,
            error.retry_after_ms,
            error.request_id.as_deref()
        ),
        (
            ErrorKind::RateLimited,
            Some(429),
            Some(3890),
            Some("req_abc")
        )
    );
    assert!(error.message.starts_with("Rate limit reached for gpt-4.1"));
    assert!(!error.to_string().contains(KEY));
}

#[tokio::test]
async fn a_connection_cut_mid_arguments_is_truncation_and_releases_no_call() {
    let fixture = fixtures::load("openai/single_tool_call_with_usage");
    let mut chunks = fixtures::split_into_events(&fixture.body);
    chunks.truncate(4);
    let server = MockServer::start().await;
    server.push(ScriptedResponse::sse(chunks).cut());
    let items = common::drain(provider(&server).stream(request())).await;
    let calls = items
        .iter()
        .filter(|i| matches!(i, Ok(StreamEvent::ToolCall(_))))
        .count();
    assert_eq!(calls, 0);
    let last = items.last().cloned().expect("an item");
    assert_eq!(last.map_err(|e| e.kind), Err(ErrorKind::StreamTruncated));
}

#[tokio::test]
async fn complete_sends_a_non_streaming_request_and_assembles_the_message() {
    let server = MockServer::start().await;
    server.push(ScriptedResponse::json(
        200,
        json!({
            "id": "chatcmpl-1", "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "Let me look.",
                "tool_calls": [{"id": "call_9", "type": "function",
                    "function": {"name": "weather", "arguments": "{\"location\":\"Rome\"}"}}],
            }}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }),
    ));
    let completion = provider(&server)
        .complete(request())
        .await
        .expect("completion");
    assert_eq!(
        completion,
        Completion {
            text: "Let me look.".into(),
            tool_calls: vec![ToolCall {
                call_id: "call_9".into(),
                name: "weather".into(),
                args: json!({"location": "Rome"}),
            }],
            usage: Some(Usage {
                input_tokens: 10,
                output_tokens: 5,
                total_tokens: 15,
                ..Usage::default()
            }),
            finish_reason: Some(FinishReason::ToolCalls),
        }
    );
    let body = &server.requests()[0].body;
    assert_eq!(
        (body["stream"].clone(), body.get("stream_options")),
        (json!(false), None)
    );
}

#[tokio::test]
async fn the_api_key_never_shows_in_debug_output() {
    let server = MockServer::start().await;
    let config = ProviderConfig {
        base_url: server.url(),
        api_key: ApiKey::new(KEY),
        extra_headers: vec![("x-proxy-token".into(), "proxy-secret".into())],
        ..ProviderConfig::default()
    };
    let debug = format!("{config:?} {:?}", provider(&server));
    assert!(
        !debug.contains(KEY) && !debug.contains("proxy-secret"),
        "{debug}"
    );
}

#[tokio::test]
async fn a_server_that_ignores_stream_true_is_decoded_as_a_whole_response() {
    let server = MockServer::start().await;
    server.push(ScriptedResponse::json(
        200,
        json!({"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Whole."}}]}),
    ));
    server.push(ScriptedResponse::json(
        200,
        json!({"error": {"message": "model is loading", "type": "server_error"}}),
    ));
    let items = common::drain(provider(&server).stream(request())).await;
    assert_eq!(
        items,
        vec![
            Ok(StreamEvent::Text {
                text: "Whole.".into()
            }),
            Ok(StreamEvent::Finished {
                reason: FinishReason::Stop
            }),
        ]
    );
    let items = common::drain(provider(&server).stream(request())).await;
    let errors: Vec<_> = items
        .into_iter()
        .map(|i| i.map_err(|e| (e.kind, e.message)))
        .collect();
    assert_eq!(
        errors,
        vec![Err((ErrorKind::Server, "model is loading".to_owned()))]
    );
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // A hand-rolled server, because only the socket itself can tell that the client left.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 64 * 1024];
        let mut request = Vec::new();
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = socket.read(&mut buf).await.unwrap();
            request.extend_from_slice(&buf[..n]);
        }
        let event = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"glob\"}}]}}]}\n\n";
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        let chunk = format!("{head}{:x}\r\n{event}\r\n", event.len());
        socket.write_all(chunk.as_bytes()).await.unwrap();
        // Hold the rest back; the read returns 0 (or fails) once the client closes the socket.
        loop {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    });
    let _ = rustls::crypto::ring::default_provider().install_default();
    let provider = OpenAiChatProvider::new(&ProviderConfig {
        base_url: url,
        ..ProviderConfig::default()
    })
    .unwrap();
    let mut stream = provider.stream(request());
    let first = common::next(&mut stream).await;
    assert_eq!(
        first,
        Some(Ok(StreamEvent::ToolPreparing {
            call_id: "c1".into(),
            tool_name: "glob".into()
        }))
    );
    drop(stream);
    tokio::time::timeout(common::LIMIT, server)
        .await
        .expect("the connection stayed open")
        .unwrap();
}

#[tokio::test]
async fn sse_mislabelled_as_json_is_still_decoded_as_sse() {
    let fixture = fixtures::load("ollama/parallel_whole_calls_one_chunk_each");
    let server = MockServer::start().await;
    server.push(
        ScriptedResponse::sse_body(fixture.body.clone()).header("content-type", "application/json"),
    );
    let items = common::drain(provider(&server).stream(request())).await;
    assert_eq!(
        items,
        common::decoded(WireProtocol::OpenAiChat, &fixture.body)
    );
}
