//! The `reasoning_effort` config option (category `thought_level`) with a real OpenAI
//! Responses provider on loopback HTTP: offered only while the model takes an effort, set
//! through the option or `/model NAME EFFORT`, and sent with later requests.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use agent_client_protocol::v1::schema::SetSessionConfigOptionRequest;
use common::{TestClient, TestFactory, fs_caps, project};
use corvid_providers::{ApiKey, OpenAiResponsesProvider, ProviderConfig};
use corvid_testkit::{MockServer, ScriptedResponse, fixtures};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// The ids of the options a `session/set_config_option` answer holds.
fn ids(options: &Value) -> Vec<String> {
    options["configOptions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn the_effort_option_follows_the_model_and_both_ways_of_setting_it_reach_the_request() {
    let dir = project();
    let server = MockServer::start().await;
    for _ in 0..2 {
        server.push(ScriptedResponse::sse(fixtures::split_into_events(
            &fixtures::load("openai-responses/text_only").body,
        )));
    }
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
    let cx = client.cx.clone();
    let set = |id: &'static str, value: &'static str| {
        cx.send_request(SetSessionConfigOptionRequest::new(sid.clone(), id, value))
            .block_task()
    };

    // `scripted-main` is no reasoning model: no effort to pick.
    let answer = serde_json::to_value(set("mode", "default").await.unwrap()).unwrap();
    assert_eq!(ids(&answer), ["mode", "model"]);
    let answer = serde_json::to_value(set("model", "gpt-5.1-codex").await.unwrap()).unwrap();
    assert_eq!(ids(&answer), ["mode", "model", "reasoning_effort"]);
    let option = &answer["configOptions"][2];
    assert_eq!(option["category"], "thought_level");
    assert_eq!(option["currentValue"], "medium");
    let values: Vec<&str> = option["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap())
        .collect();
    assert_eq!(values, ["minimal", "low", "medium", "high", "xhigh"]);

    let answer = serde_json::to_value(set("reasoning_effort", "high").await.unwrap()).unwrap();
    assert_eq!(answer["configOptions"][2]["currentValue"], "high");
    let error = set("reasoning_effort", "max").await.unwrap_err();
    assert!(
        error.message.contains("unknown reasoning effort `max`"),
        "{}",
        error.message
    );
    client.prompt(&sid, "hi").await.unwrap().unwrap();

    // The command moves the selector too.
    client
        .prompt(&sid, "/model gpt-5.1-codex low")
        .await
        .unwrap()
        .unwrap();
    client.prompt(&sid, "again").await.unwrap().unwrap();
    client.drain();
    let selectors: Vec<Value> = client
        .updates()
        .iter()
        .filter(|u| u["sessionUpdate"] == "config_option_update")
        .map(|u| u["configOptions"][2]["currentValue"].clone())
        .collect();
    assert_eq!(selectors.last(), Some(&json!("low")));

    let efforts: Vec<Value> = server
        .requests()
        .iter()
        .map(|r| r.body["reasoning"]["effort"].clone())
        .collect();
    assert_eq!(efforts, [json!("high"), json!("low")]);

    // A model without efforts takes the option away again.
    let answer = serde_json::to_value(set("model", "gpt-4.1").await.unwrap()).unwrap();
    assert_eq!(ids(&answer), ["mode", "model"]);
    let error = set("reasoning_effort", "low").await.unwrap_err();
    assert!(
        error.message.contains("gpt-4.1 takes no reasoning effort"),
        "{}",
        error.message
    );
}

/// A recording server on a fresh Responses provider talking to `server`.
async fn recording_real_client(server: &MockServer, home: &std::path::Path) -> TestClient {
    let provider = OpenAiResponsesProvider::new(&ProviderConfig {
        base_url: server.url(),
        api_key: ApiKey::new("sk-test"),
        ..ProviderConfig::default()
    })
    .unwrap();
    let factory = Arc::new(TestFactory {
        provider: common::ScriptedProvider::new(Vec::new()),
        summaries: false,
        mode: corvid_protocol::ApprovalMode::Default,
        store: Some(corvid_core::session::SessionStore::new(home)),
        home: Some(home.to_path_buf()),
        real: Some(Arc::new(provider)),
    });
    TestClient::start(factory, fs_caps(false, false)).await
}

#[tokio::test]
async fn an_effort_set_over_acp_is_restored_by_session_load_in_a_new_connection() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let home = tempfile::tempdir().unwrap();
    let dir = project();
    let first_server = MockServer::start().await;
    first_server.push(ScriptedResponse::sse(fixtures::split_into_events(
        &fixtures::load("openai-responses/text_only").body,
    )));
    let first = recording_real_client(&first_server, home.path()).await;
    let sid = first.new_session(dir.path()).await;
    for (id, value) in [("model", "gpt-5.1-codex"), ("reasoning_effort", "high")] {
        first
            .cx
            .send_request(SetSessionConfigOptionRequest::new(sid.clone(), id, value))
            .block_task()
            .await
            .unwrap();
    }
    first.prompt(&sid, "hi").await.unwrap().unwrap();
    first.close().await;

    // The new connection's provider starts at the server's default.
    let server = MockServer::start().await;
    server.push(ScriptedResponse::sse(fixtures::split_into_events(
        &fixtures::load("openai-responses/text_only").body,
    )));
    let client = recording_real_client(&server, home.path()).await;
    let response = client.load_released(&sid, dir.path()).await.unwrap();
    let options = serde_json::to_value(&response).unwrap();
    assert_eq!(ids(&options), ["mode", "model", "reasoning_effort"]);
    assert_eq!(options["configOptions"][2]["currentValue"], "high");
    client.prompt(&sid, "again").await.unwrap().unwrap();
    assert_eq!(
        server.requests()[0].body["reasoning"]["effort"],
        json!("high")
    );
}
