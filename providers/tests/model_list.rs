//! The model list (`GET /models`, `GET /v1/models`) over real loopback HTTP: what a model
//! picker offers, with the provider's headers, and clear errors from servers without it.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use corvid_protocol::ErrorKind;
use corvid_providers::{AnthropicProvider, OpenAiChatProvider, Provider, ProviderConfig};
use corvid_testkit::{MockServer, RecordedRequest, ScriptedResponse};
use pretty_assertions::assert_eq;
use serde_json::json;

const KEY: &str = "sk-test-very-secret-key";

fn is_get(request: &RecordedRequest) -> bool {
    request.method == "GET"
}

fn under(server: &MockServer, path: &str) -> ProviderConfig {
    let mut config = common::config(server, KEY, Vec::new());
    config.base_url = format!("{}{path}", server.url());
    config
}

#[tokio::test]
async fn an_openai_compatible_server_lists_its_models_with_the_bearer_key() {
    let server = MockServer::start().await;
    server.push_matching(
        is_get,
        ScriptedResponse::json(
            200,
            json!({"object": "list", "data": [
                {"id": "gpt-4.1", "object": "model", "created": 1, "owned_by": "openai"},
                {"id": "o3", "object": "model", "created": 2, "owned_by": "openai"},
            ]}),
        ),
    );
    let provider = OpenAiChatProvider::new(&under(&server, "/v1")).unwrap();
    assert_eq!(provider.list_models().await.unwrap(), vec!["gpt-4.1", "o3"]);
    let request = &server.lookups()[0];
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("GET", "/v1/models")
    );
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[tokio::test]
async fn anthropic_lists_its_models_with_its_key_and_version_headers() {
    let server = MockServer::start().await;
    server.push_matching(
        is_get,
        ScriptedResponse::json(
            200,
            json!({"data": [
            {"type": "model", "id": "claude-sonnet-4-5", "display_name": "Claude Sonnet 4.5",
             "created_at": "2025-09-29T00:00:00Z"},
            {"type": "model", "id": "claude-haiku-4-5", "display_name": "Claude Haiku 4.5",
             "created_at": "2025-10-01T00:00:00Z"},
        ], "has_more": false, "first_id": "claude-sonnet-4-5", "last_id": "claude-haiku-4-5"}),
        ),
    );
    let provider = AnthropicProvider::new(&under(&server, "")).unwrap();
    assert_eq!(
        provider.list_models().await.unwrap(),
        vec!["claude-sonnet-4-5", "claude-haiku-4-5"]
    );
    let request = &server.lookups()[0];
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("GET", "/v1/models")
    );
    assert_eq!(request.header("x-api-key"), Some(KEY));
    assert!(request.header("anthropic-version").is_some());
}

#[tokio::test]
async fn a_rejected_key_is_an_auth_error_that_never_shows_the_key() {
    let server = MockServer::start().await;
    // OpenAI's real answer to a wrong key echoes part of it.
    server.push_matching(is_get, ScriptedResponse::error(
        401,
        format!(
            r#"{{"error":{{"message":"Incorrect API key provided: {KEY}. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}}}"#
        ),
    ));
    let provider = OpenAiChatProvider::new(&under(&server, "/v1")).unwrap();
    let err = provider.list_models().await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Auth);
    assert!(!err.message.contains(KEY), "{}", err.message);
}

#[tokio::test]
async fn a_server_without_a_model_list_answers_a_clear_error() {
    let server = MockServer::start().await;
    server.push_matching(is_get, ScriptedResponse::error(404, "404 page not found"));
    let provider = OpenAiChatProvider::new(&under(&server, "/v1")).unwrap();
    let err = provider.list_models().await.unwrap_err();
    assert_eq!(err.status, Some(404));

    server.push_matching(
        is_get,
        ScriptedResponse::json(200, json!({"models": ["llama3"]})),
    );
    let err = provider.list_models().await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::BadResponse);
}
