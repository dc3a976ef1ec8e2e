//! Servers that echo secrets, answer with web pages or garbage, never stop or go silent:
//! over real loopback HTTP, what each provider reports and that no secret gets out.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::time::Duration;

use corvid_protocol::{ErrorInfo, ErrorKind, Message, ModelRequest, StreamItem};
use corvid_providers::{
    AnthropicProvider, ApiKey, OpenAiChatProvider, Provider, ProviderConfig, StreamDecoder,
    StreamLimits, WireProtocol,
};
use corvid_testkit::{Chunk, MockServer, ScriptedResponse, sse_event};
use pretty_assertions::assert_eq;
use serde_json::json;

const KEY: &str = "sk-main-echoed-0123456789";
const FAST_KEY: &str = "sk-fast-echoed-9876543210";
const HEADER_SECRET: &str = "gateway-secret-abcdef";

fn request() -> ModelRequest {
    ModelRequest {
        model: "m".into(),
        system: String::new(),
        messages: vec![Message::user_text("hi")].into(),
        tools: Vec::new(),
        max_output_tokens: None,
        temperature: None,
    }
}

fn config(server: &MockServer) -> ProviderConfig {
    ProviderConfig {
        other_secrets: vec![ApiKey::new(FAST_KEY)],
        ..common::config(
            server,
            KEY,
            vec![("x-gateway-token".into(), HEADER_SECRET.into())],
        )
    }
}

fn openai(config: &ProviderConfig) -> OpenAiChatProvider {
    OpenAiChatProvider::new(config).unwrap()
}

/// The one error a stream that fails at once yields.
async fn stream_error(provider: &dyn Provider) -> ErrorInfo {
    let items = common::drain(provider.stream(request())).await;
    match items.as_slice() {
        [Err(error)] => error.clone(),
        other => panic!("expected one error, got {other:?}"),
    }
}

fn assert_no_secret(text: &str) {
    for secret in [
        KEY,
        FAST_KEY,
        HEADER_SECRET,
        "hunter2pass",
        "AIza-query-key",
    ] {
        assert!(!text.contains(secret), "{secret} leaked in: {text}");
    }
}

#[tokio::test]
async fn secrets_in_error_bodies_are_redacted() {
    let echo =
        format!("Incorrect API key provided: {KEY}. Fast key {FAST_KEY}, header {HEADER_SECRET}.");
    let server = MockServer::start().await;
    let json_body = json!({"error": {"message": echo, "type": "invalid_request_error"}});
    for status in [401, 400, 500] {
        // Twice per status: once as JSON, once as a plain-text body quoted raw.
        server.push(ScriptedResponse::json(status, json_body.clone()));
        server.push(ScriptedResponse::error(status, echo.clone()));
    }
    let config = config(&server);
    let openai = openai(&config);
    let mut seen = Vec::new();
    for status in [401, 400, 500] {
        for _ in 0..2 {
            let error = stream_error(&openai).await;
            assert_eq!(error.status, Some(status));
            seen.push(format!("{error} {error:?}"));
        }
    }
    // The non-streaming call (the fast model's) and the other provider redact the same way.
    server.push(ScriptedResponse::json(401, json_body.clone()));
    let error = openai.complete(request()).await.unwrap_err();
    seen.push(format!("{error} {error:?}"));
    server.push(ScriptedResponse::error(500, echo.clone()));
    let anthropic = AnthropicProvider::new(&config).unwrap();
    let error = stream_error(&anthropic).await;
    seen.push(format!("{error} {error:?}"));
    // An in-stream error object echoing the key.
    server.push(ScriptedResponse::sse(vec![sse_event(
        &json!({"error": {"message": echo}}).to_string(),
    )]));
    let error = stream_error(&openai).await;
    seen.push(format!("{error} {error:?}"));

    for text in &seen {
        assert_no_secret(text);
    }
    assert!(
        seen[0].contains("Incorrect API key provided: <redacted>. Fast key <redacted>"),
        "{}",
        seen[0]
    );
}

#[tokio::test]
async fn a_base_url_with_user_info_is_redacted_in_errors() {
    let port = closed_port();
    let config = ProviderConfig {
        base_url: format!("http://bob:hunter2pass@127.0.0.1:{port}/v1?key=AIza-query-key"),
        ..ProviderConfig::default()
    };
    let error = stream_error(&openai(&config)).await;
    let text = format!("{error} {error:?}");
    assert_no_secret(&text);
    assert!(
        text.contains(&format!(
            "at http://127.0.0.1:{port}/v1/chat/completions?key=<redacted> ("
        )),
        "{text}"
    );

    // Debug output (what a `tracing` field would show) hides them too.
    let debug = format!("{config:?} {:?}", openai(&config));
    assert_no_secret(&debug);

    // A URL that does not even parse is quoted in the configuration error, redacted.
    let bad = ProviderConfig {
        base_url: "ftp://bob:hunter2pass@host/v1".into(),
        ..ProviderConfig::default()
    };
    let error = OpenAiChatProvider::new(&bad).unwrap_err().to_string();
    assert_no_secret(&error);
    assert!(error.contains("ftp://<redacted>@host/v1"), "{error}");
}

fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    port
}

#[tokio::test]
async fn a_refused_connection_names_the_url() {
    let port = closed_port();
    let config = ProviderConfig {
        base_url: format!("http://127.0.0.1:{port}/v1"),
        api_key: ApiKey::new(KEY),
        ..ProviderConfig::default()
    };
    let error = stream_error(&openai(&config)).await;
    assert_eq!(
        (error.kind, error.is_retryable()),
        (ErrorKind::Network, true)
    );
    let url = format!("http://127.0.0.1:{port}/v1/chat/completions");
    assert!(
        error
            .message
            .starts_with(&format!("could not connect to the provider at {url} (")),
        "{}",
        error.message
    );
    assert!(
        error.message.to_lowercase().contains("connection refused"),
        "{}",
        error.message
    );
    assert!(
        error
            .message
            .ends_with("check that the server is running and that model.baseUrl is right"),
        "{}",
        error.message
    );
    assert_no_secret(&error.message);
}

#[tokio::test]
async fn an_html_page_is_a_misconfigured_base_url_not_a_retry() {
    let server = MockServer::start().await;
    let page = format!(
        "<!DOCTYPE html>\n<html><head><title>Welcome</title></head><body>{}</body></html>",
        "x".repeat(400)
    );
    let html =
        ScriptedResponse::sse_body(page.clone()).header("content-type", "text/html; charset=utf-8");
    server.push(html.clone());
    server.push(html);
    let config = config(&server);
    let provider = openai(&config);
    let error = stream_error(&provider).await;
    assert_eq!(
        (error.kind, error.is_retryable()),
        (ErrorKind::BadResponse, false)
    );
    let start = "<!DOCTYPE html> <html><head><title>Welcome</title></head><body>";
    let quoted = format!("{start}{}", "x".repeat(200 - start.len()));
    assert_eq!(
        error.message,
        format!(
            "{}/chat/completions answered HTTP 200 with content type text/html; charset=utf-8 \
             and a body starting `{quoted}…`, which is not a model response; model.baseUrl \
             probably points at a web page or the wrong path (an OpenAI-compatible base URL \
             usually ends in /v1)",
            server.url()
        )
    );
    // The non-streaming call says the same.
    let error = provider.complete(request()).await.unwrap_err();
    assert_eq!(error.kind, ErrorKind::BadResponse);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn sse_labelled_as_json_or_plain_text_is_still_decoded() {
    let server = MockServer::start().await;
    let body = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n"
    );
    for label in ["application/json", "text/plain"] {
        server.push(
            ScriptedResponse::sse(body.as_bytes().chunks(3).map(Chunk::new).collect())
                .header("content-type", label),
        );
    }
    let provider = openai(&config(&server));
    for _ in 0..2 {
        let items = common::drain(provider.stream(request())).await;
        assert_eq!(
            items,
            common::decoded(WireProtocol::OpenAiChat, body.as_bytes())
        );
    }
}

#[tokio::test]
async fn non_json_data_lines_are_an_error_naming_the_line() {
    let server = MockServer::start().await;
    let long = "y".repeat(300);
    server.push(ScriptedResponse::sse(vec![
        sse_event(&format!("hello from a proxy {long}")),
        sse_event("still not json"),
        sse_event("[DONE]"),
    ]));
    let error = stream_error(&openai(&config(&server))).await;
    assert_eq!(
        error,
        ErrorInfo::new(
            ErrorKind::BadResponse,
            format!(
                "the provider's stream held no JSON events; data event 0 was `hello from a proxy \
                 {}…`; check that model.baseUrl points at a compatible API",
                "y".repeat(200 - 19)
            )
        )
    );
    // Anthropic: the same lines and the body's end, instead of a truncated stream to retry.
    server.push(ScriptedResponse::sse(vec![sse_event("not an event")]));
    let error = stream_error(&AnthropicProvider::new(&config(&server)).unwrap()).await;
    assert_eq!(
        (
            error.kind,
            error.message.contains("data event 0 was `not an event`")
        ),
        (ErrorKind::BadResponse, true)
    );
}

#[tokio::test]
async fn an_endless_sse_line_is_a_bad_response() {
    let server = MockServer::start().await;
    // 64 KiB of a line that never ends, sent until corvid stops reading.
    server.push(
        ScriptedResponse::sse(vec![
            Chunk::new("data: {\"choices\":[{\"delta\":{\"content\":\""),
            Chunk::new(vec![b'a'; 64 * 1024]),
        ])
        .endless(),
    );
    let error = stream_error(&openai(&config(&server))).await;
    assert_eq!(
        error,
        ErrorInfo::new(
            ErrorKind::BadResponse,
            "the provider sent an SSE line or event longer than 16 MiB, corvid's cap; this is \
             not a model response: check model.baseUrl"
        )
    );
}

#[test]
fn a_body_over_the_response_cap_is_a_bad_response() {
    let limits = StreamLimits {
        max_line_bytes: 1024,
        max_body_bytes: 4096,
    };
    let mut decoder = StreamDecoder::with_limits(WireProtocol::OpenAiChat, limits);
    let event = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n";
    let mut out = Vec::new();
    while !decoder.is_done() {
        decoder.push(event.as_bytes(), &mut out);
    }
    let errors: Vec<&StreamItem> = out.iter().map(|e| &e.item).filter(|i| i.is_err()).collect();
    assert_eq!(
        errors,
        vec![&Err(ErrorInfo::new(
            ErrorKind::BadResponse,
            "the provider's response passed 4096 bytes, corvid's cap for one response; check \
             model.baseUrl and model.maxOutputTokens"
        ))]
    );
}

#[tokio::test]
async fn a_silent_stream_times_out() {
    let server = MockServer::start().await;
    // Headers and one event, then nothing, with the connection held open.
    server.push(
        ScriptedResponse::sse(vec![sse_event(
            &json!({"choices": [{"index": 0, "delta": {"content": "Hi"}}]}).to_string(),
        )])
        .hang(),
    );
    // Headers, then nothing at all.
    server.push(ScriptedResponse::sse(Vec::new()).hang());
    let config = ProviderConfig {
        idle_timeout: Duration::from_millis(300),
        ..config(&server)
    };
    let provider = openai(&config);
    let expected = ErrorInfo::new(
        ErrorKind::Network,
        format!(
            "the provider at {}/chat/completions sent nothing for 300 ms \
             (model.streamIdleTimeoutMs); it may be stuck, or slow to start: raise \
             model.streamIdleTimeoutMs for slow local models",
            server.url()
        ),
    );
    let items = common::drain(provider.stream(request())).await;
    assert_eq!(items.last(), Some(&Err(expected.clone())));
    assert!(expected.is_retryable());
    let error = stream_error(&provider).await;
    assert_eq!(error, expected);
}
