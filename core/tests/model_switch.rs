//! `Op::SetReasoningEffort` (`/model NAME EFFORT`, ACP's `reasoning_effort` option): later
//! requests of the real Responses provider ask for the chosen effort; a model that takes none
//! leaves it as it was, with a warning.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::{run_task, test_config};
use corvid_core::agent::spawn_agent;
use corvid_protocol::{CoreEvent, Op, ReasoningEffort};
use corvid_providers::{ApiKey, OpenAiResponsesProvider, ProviderConfig};
use corvid_testkit::{MockServer, ScriptedResponse, fixtures};
use serde_json::Value;

#[tokio::test]
async fn a_chosen_effort_reaches_later_requests_and_a_model_without_efforts_is_warned_about() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let server = MockServer::start().await;
    let answer = fixtures::load("openai-responses/text_only");
    for _ in 0..3 {
        server.push(ScriptedResponse::sse(fixtures::split_into_events(
            &answer.body,
        )));
    }
    let provider = OpenAiResponsesProvider::new(&ProviderConfig {
        base_url: server.url(),
        api_key: ApiKey::new("sk-effort"),
        ..ProviderConfig::default()
    })
    .unwrap();
    let mut config = test_config(Arc::new(provider), vec![]);
    config.model = "gpt-5.1-codex".into();
    let mut handle = spawn_agent(config);
    run_task(&mut handle, "one").await;
    handle
        .submit(Op::SetReasoningEffort {
            effort: ReasoningEffort::High,
        })
        .unwrap();
    run_task(&mut handle, "two").await;
    handle
        .submit(Op::SetModel {
            model: "gpt-4.1".into(),
        })
        .unwrap();
    handle
        .submit(Op::SetReasoningEffort {
            effort: ReasoningEffort::Low,
        })
        .unwrap();
    let events = run_task(&mut handle, "three").await;
    let warned = events.iter().any(|e| {
        matches!(e, CoreEvent::Warning { message }
            if message.contains("gpt-4.1 takes no reasoning effort"))
    });
    assert!(warned, "{events:?}");

    let efforts: Vec<Value> = server
        .requests()
        .iter()
        .map(|r| r.body["reasoning"]["effort"].clone())
        .collect();
    // Unset at first (the server's default), then high; low was refused for gpt-4.1.
    assert_eq!(efforts[..2], [Value::Null, Value::from("high")]);
    // gpt-4.1 takes none: the chosen effort is not sent to it.
    assert_eq!(efforts[2], Value::Null);
}
