//! Error classification (SPEC §2.4): the recorded HTTP error bodies with their sidecar
//! headers, and cases beyond them.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use corvid_protocol::{ErrorInfo, ErrorKind};
use corvid_providers::error::{HeaderMap, classify_http_error_at, classify_stream_error};
use corvid_providers::{ApiKey, OpenAiChatProvider, Provider, ProviderConfig};
use futures::StreamExt;
use pretty_assertions::assert_eq;
use reqwest::header::{HeaderName, HeaderValue};
use serde_json::json;

/// Mon, 30 Nov 2026 08:00:00 GMT
const NOW_SECS: u64 = 1_796_025_600;

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(NOW_SECS)
}

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (k, v) in pairs {
        map.insert(
            HeaderName::from_bytes(k.as_bytes()).unwrap(),
            HeaderValue::from_str(v).unwrap(),
        );
    }
    map
}

fn classify(status: u16, pairs: &[(&str, &str)], body: &str) -> ErrorInfo {
    classify_http_error_at(status, &headers(pairs), body.as_bytes(), now())
}

fn info(kind: ErrorKind, message: &str, status: u16) -> ErrorInfo {
    ErrorInfo {
        status: Some(status),
        ..ErrorInfo::new(kind, message)
    }
}

#[test]
fn the_recorded_http_error_bodies_classify_with_their_headers() {
    let cases = [
        ("errors/openai_429_rate_limit.sse", ErrorKind::RateLimited),
        ("errors/openai_500_server_error.sse", ErrorKind::Server),
        (
            "errors/openai_503_engine_overloaded.sse",
            ErrorKind::Overloaded,
        ),
        ("errors/anthropic_529_overloaded.sse", ErrorKind::Overloaded),
    ];
    for (name, kind) in cases {
        let f = common::fixture(name);
        let http = &f.expected["http"];
        let status = http["status"].as_u64().unwrap() as u16;
        let mut map = HeaderMap::new();
        for (k, v) in http["headers"].as_object().into_iter().flatten() {
            map.insert(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v.as_str().unwrap()).unwrap(),
            );
        }
        let got = classify_http_error_at(status, &map, &f.body, now());
        let expected = ErrorInfo {
            kind,
            message: f.expected["error"]["message"].as_str().unwrap().to_owned(),
            status: Some(status),
            request_id: http["headers"]["request-id"].as_str().map(str::to_owned),
            retry_after_ms: f.expected["error"]["retry_after_ms"].as_u64(),
        };
        assert_eq!((name, got.is_retryable(), got), (name, true, expected));
    }
}

#[test]
fn an_empty_body_still_says_what_happened() {
    assert_eq!(
        classify(502, &[], ""),
        info(ErrorKind::Server, "HTTP 502 with an empty body", 502)
    );
    assert_eq!(
        classify(401, &[], "  \n"),
        info(ErrorKind::Auth, "HTTP 401 with an empty body", 401)
    );
}

#[test]
fn a_non_json_body_is_kept_as_the_message() {
    let html = "<html><body>Bad gateway</body></html>";
    assert_eq!(classify(504, &[], html), info(ErrorKind::Server, html, 504));
}

#[test]
fn a_429_that_says_overloaded_is_overload_not_a_rate_limit() {
    let kimi = r#"{"error":{"message":"The engine is currently overloaded, please try again later","type":"engine_overloaded_error"}}"#;
    assert_eq!(classify(429, &[], kimi).kind, ErrorKind::Overloaded);
    let quota =
        r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota"}}"#;
    assert_eq!(classify(429, &[], quota).kind, ErrorKind::RateLimited);
}

#[test]
fn status_codes_map_to_their_kinds() {
    let kinds: Vec<ErrorKind> = [400, 401, 403, 404, 422, 500, 503, 529]
        .iter()
        .map(|s| classify(*s, &[], r#"{"error":{"message":"x"}}"#).kind)
        .collect();
    use ErrorKind::*;
    assert_eq!(
        kinds,
        vec![
            BadRequest, Auth, Auth, BadRequest, BadRequest, Server, Overloaded, Overloaded
        ]
    );
}

#[test]
fn context_length_wording_is_context_too_long() {
    let openai = r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
    let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"},"request_id":"req_1"}"#;
    assert_eq!(classify(400, &[], openai).kind, ErrorKind::ContextTooLong);
    let got = classify(400, &[], anthropic);
    assert_eq!(
        (got.kind, got.request_id.as_deref()),
        (ErrorKind::ContextTooLong, Some("req_1"))
    );
}

#[test]
fn retry_after_is_read_in_every_form() {
    let wait = |pairs: &[(&str, &str)]| classify(429, pairs, "{}").retry_after_ms;
    assert_eq!(wait(&[("retry-after", "7")]), Some(7000));
    assert_eq!(wait(&[("retry-after", "1.5")]), Some(1500));
    assert_eq!(
        wait(&[("retry-after", "Mon, 30 Nov 2026 08:00:30 GMT")]),
        Some(30_000)
    );
    assert_eq!(
        wait(&[("retry-after", "Sun, 29 Nov 2026 08:00:30 GMT")]),
        Some(0)
    );
    assert_eq!(wait(&[("retry-after", "soon")]), None);
    assert_eq!(
        wait(&[("retry-after", "4"), ("retry-after-ms", "3890.4")]),
        Some(3890)
    );
    assert_eq!(wait(&[]), None);
}

#[test]
fn the_request_id_header_wins_over_the_body() {
    let body = r#"{"error":{"message":"x"},"request_id":"from-body"}"#;
    assert_eq!(
        classify(500, &[("x-request-id", "from-header")], body)
            .request_id
            .as_deref(),
        Some("from-header")
    );
    assert_eq!(
        classify(500, &[], body).request_id.as_deref(),
        Some("from-body")
    );
}

#[test]
fn in_stream_errors_are_classified_by_their_type_and_code() {
    let kinds: Vec<ErrorKind> = [
        json!({"error": {"type": "overloaded_error", "message": "Overloaded"}}),
        json!({"error": {"type": "rate_limit_error", "message": "slow down"}}),
        json!({"error": {"code": "server_error", "message": "Provider disconnected unexpectedly"}}),
        json!({"error": {"code": 429, "message": "Upstream rate limited"}}),
        json!({"error": {"type": "invalid_request_error", "message": "bad"}}),
        json!({"error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
    ]
    .iter()
    .map(|v| classify_stream_error(v).kind)
    .collect();
    use ErrorKind::*;
    assert_eq!(
        kinds,
        vec![
            Overloaded,
            RateLimited,
            Server,
            RateLimited,
            BadRequest,
            Auth
        ]
    );
}

#[tokio::test]
async fn a_refused_connection_is_a_network_error_without_the_key() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let provider = OpenAiChatProvider::new(&ProviderConfig {
        base_url: format!("http://127.0.0.1:{port}/v1"),
        api_key: ApiKey::new("sk-never-shown"),
        ..ProviderConfig::default()
    })
    .unwrap();
    let request = corvid_protocol::ModelRequest {
        model: "m".into(),
        system: String::new(),
        messages: Vec::new().into(),
        tools: Vec::new(),
        max_output_tokens: None,
        temperature: None,
    };
    let items: Vec<_> = provider.stream(request).collect().await;
    let [Err(error)] = items.as_slice() else {
        panic!("expected one error, got {items:?}");
    };
    assert_eq!(error.kind, ErrorKind::Network);
    assert!(!format!("{error} {error:?}").contains("sk-never-shown"));
}

/// The bodies OpenAI (Chat Completions and Responses alike) and Gemini send for a wrong
/// key, a rate limit and a request over the context window, as their documentation and
/// issue reports show them.
#[test]
fn real_openai_and_gemini_error_bodies_are_classified_like_the_other_providers() {
    let openai_401 = r#"{"error": {"message": "Incorrect API key provided: sk-proj-********************abcd. You can find your API key at https://platform.openai.com/account/api-keys.", "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}"#;
    let openai_429 = r#"{"error": {"message": "Rate limit reached for gpt-5.1-codex in organization org-abc on tokens per min (TPM): Limit 30000, Used 29850, Requested 1024. Please try again in 1.748s. Visit https://platform.openai.com/account/rate-limits to learn more.", "type": "tokens", "param": null, "code": "rate_limit_exceeded"}}"#;
    let openai_quota = r#"{"error": {"message": "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.", "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}"#;
    let openai_context = r#"{"error": {"message": "Your input exceeds the context window of this model. Please adjust your input and try again.", "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}}"#;
    let gemini_key = r#"{"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT", "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com", "metadata": {"service": "generativelanguage.googleapis.com"}}]}}"#;
    let gemini_429 = r#"{"error": {"code": 429, "message": "You exceeded your current quota, please check your plan and billing details.", "status": "RESOURCE_EXHAUSTED", "details": [{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests", "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "quotaValue": "10"}]}, {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "27s"}]}}"#;
    let gemini_context = r#"{"error": {"code": 400, "message": "The input token count (1250123) exceeds the maximum number of tokens allowed (1048576).", "status": "INVALID_ARGUMENT"}}"#;
    let gemini_503 = r#"{"error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}}"#;
    let got = |status, body| {
        let e = classify(status, &[], body);
        (e.kind, e.retry_after_ms)
    };
    assert_eq!(got(401, openai_401), (ErrorKind::Auth, None));
    assert_eq!(got(429, openai_429), (ErrorKind::RateLimited, Some(1748)));
    assert_eq!(got(429, openai_quota).0, ErrorKind::RateLimited);
    assert_eq!(got(400, openai_context), (ErrorKind::ContextTooLong, None));
    assert_eq!(got(400, gemini_key), (ErrorKind::Auth, None));
    assert_eq!(got(429, gemini_429), (ErrorKind::RateLimited, Some(27_000)));
    assert_eq!(got(400, gemini_context), (ErrorKind::ContextTooLong, None));
    assert_eq!(got(503, gemini_503), (ErrorKind::Overloaded, None));
    // A header's wait wins over the one in the message.
    let e = classify(429, &[("retry-after-ms", "500")], openai_429);
    assert_eq!(e.retry_after_ms, Some(500));
}
