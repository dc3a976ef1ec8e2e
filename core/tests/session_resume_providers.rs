//! A resumed session goes on with what the provider needs from the earlier turns (issue 28):
//! through the real Gemini provider every `thoughtSignature` goes back byte-exact on its call,
//! through the real Responses provider every reasoning item's `encrypted_content` goes back,
//! both read from the recording by a new agent on a new provider (loopback HTTP).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::fake_tools::{ExecLog, FakeTool};
use common::{run_task, test_config};
use corvid_core::agent::{AgentConfig, spawn_agent_observed};
use corvid_core::session::{SessionStore, spawn_resumed};
use corvid_providers::{ApiKey, GeminiProvider, OpenAiResponsesProvider, Provider, ProviderConfig};
use corvid_testkit::{MockServer, ScriptedResponse, fixtures};
use serde_json::Value;

const SIGNATURE: &str = "CiQB0e2Kb3Vx9m2pH1nVqk6yZt0QpC5mJYxR8m8Vn4Q0B8o2Yx0KYQHR7Ypp";
const ENCRYPTED: &str = "gAAAAABpMh3kQ0r9wT2Zl7c1y_encrypted-reasoning-opaque_Xq8vLz3nYkP0sWmA4tRb6dE1fG2hJ5kL7nP9qS0uV3wY6zA==";

fn provider_config(server: &MockServer) -> ProviderConfig {
    let _ = rustls::crypto::ring::default_provider().install_default();
    ProviderConfig {
        base_url: server.url(),
        api_key: ApiKey::new("test-key"),
        ..ProviderConfig::default()
    }
}

fn replay(server: &MockServer, fixture: &str) {
    server.push(ScriptedResponse::sse(fixtures::split_into_events(
        &fixtures::load(fixture).body,
    )));
}

fn config(provider: Arc<dyn Provider>, model: &str, log: &ExecLog) -> AgentConfig {
    let mut config = test_config(provider, vec![FakeTool::reader("read_file", 1, log)]);
    config.model = model.into();
    config
}

/// Records a task of `first` (a tool call, then `text_only`) on one server, resumes the session
/// on a new provider for `second`'s server, and returns the resumed agent's first request body.
async fn resumed_request(
    make: impl Fn(&MockServer) -> Arc<dyn Provider>,
    model: &str,
    call_fixture: &str,
    text_fixture: &str,
) -> Value {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let first = MockServer::start().await;
    replay(&first, call_fixture);
    replay(&first, text_fixture);
    let log = ExecLog::default();
    let recorder = Arc::new(store.create(cwd.path(), "s1", model).unwrap());
    let mut handle = spawn_agent_observed(config(make(&first), model, &log), recorder);
    run_task(&mut handle, "read main").await;
    common::shut_down(handle).await;
    // The call ran and its result went back: a second request.
    assert_eq!(first.requests().len(), 2);

    let loaded = store.load(cwd.path(), "s1").unwrap();
    let second = MockServer::start().await;
    replay(&second, text_fixture);
    let resumed = spawn_resumed(config(make(&second), model, &log), &store, &loaded).unwrap();
    let mut handle = resumed.handle;
    run_task(&mut handle, "and now?").await;
    second.requests()[0].body.clone()
}

#[tokio::test]
async fn a_resumed_gemini_session_sends_the_call_s_thought_signature_back_byte_exact() {
    let body = resumed_request(
        |s| Arc::new(GeminiProvider::new(&provider_config(s)).unwrap()),
        "gemini-2.5-pro",
        "gemini-api/thoughts_signed_call",
        "gemini-api/text_only",
    )
    .await;
    let signed: Vec<(&Value, &Value)> = body["contents"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["parts"].as_array().unwrap())
        .filter(|p| p.get("functionCall").is_some())
        .map(|p| (&p["functionCall"]["name"], &p["thoughtSignature"]))
        .collect();
    assert_eq!(
        signed,
        vec![(&Value::from("read_file"), &Value::from(SIGNATURE))],
        "{body}"
    );
}

#[tokio::test]
async fn a_resumed_responses_session_sends_its_reasoning_item_back_before_the_call() {
    let body = resumed_request(
        |s| Arc::new(OpenAiResponsesProvider::new(&provider_config(s)).unwrap()),
        "gpt-5.1-codex",
        "openai-responses/reasoning_then_function_call",
        "openai-responses/text_only",
    )
    .await;
    let kinds: Vec<&str> = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["type"].as_str())
        .collect();
    let reasoning = kinds.iter().position(|k| *k == "reasoning");
    let call = kinds.iter().position(|k| *k == "function_call");
    assert!(
        reasoning.is_some() && reasoning < call,
        "reasoning before the call: {kinds:?}"
    );
    let item = &body["input"][reasoning.unwrap()];
    assert_eq!(item["encrypted_content"], ENCRYPTED, "{item}");
}
