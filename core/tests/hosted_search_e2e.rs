//! End to end (issue 31): the agent loop on the real Anthropic provider with the API's own
//! web search, against the testkit's loopback server. The search shows as a `fetch` card
//! titled by its query, runs nothing locally, and the next request replays its blocks.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::invariants::check_invariants;
use common::{run_task, test_config};
use corvid_core::agent::spawn_agent;
use corvid_protocol::{CoreEvent, ToolKind, ToolStatus};
use corvid_providers::{AnthropicProvider, ProviderConfig, ServerWebSearch};
use corvid_testkit::{MockServer, ScriptedResponse, fixtures};
use corvid_tools::builtin_tools;
use pretty_assertions::assert_eq;
use serde_json::json;

fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/sse/anthropic")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A short text answer in the Messages stream shape.
fn answer(text: &str) -> ScriptedResponse {
    let events = [
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 50, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}}),
        json!({"type": "message_stop"}),
    ];
    let body: String = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect();
    ScriptedResponse::sse(fixtures::split_into_events(body.as_bytes()))
}

#[tokio::test]
async fn a_server_search_shows_as_a_fetch_card_and_is_replayed_in_the_next_request() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let server = MockServer::start().await;
    server.push(ScriptedResponse::sse(fixtures::split_into_events(
        &fixture("server_web_search.sse"),
    )));
    server.push(answer("Its MSRV is 1.70."));
    let provider = AnthropicProvider::new(&ProviderConfig {
        base_url: server.url(),
        ..ProviderConfig::default()
    })
    .unwrap()
    .with_server_web_search(ServerWebSearch {
        max_per_session: 200,
    });
    let mut config = test_config(Arc::new(provider), Vec::new());
    config.tools = builtin_tools();
    let mut handle = spawn_agent(config);

    let events = run_task(&mut handle, "What is the latest tokio release?").await;
    check_invariants(&events, &["todo_write"]).unwrap();
    let id = "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE";
    let started = events.iter().find_map(|e| match e {
        CoreEvent::ToolStarted {
            call_id, display, ..
        } if call_id == id => Some(display.clone()),
        _ => None,
    });
    let started = started.expect("the search has a card");
    assert_eq!(started.title, "Search \"tokio latest release\"");
    assert_eq!(started.kind, ToolKind::Fetch);
    let finished = events.iter().find_map(|e| match e {
        CoreEvent::ToolFinished {
            call_id,
            status,
            output,
            ..
        } if call_id == id => Some((*status, output.text.clone())),
        _ => None,
    });
    let (status, text) = finished.expect("the search card ends");
    assert_eq!(status, ToolStatus::Completed);
    assert!(text.contains("https://crates.io/crates/tokio"), "{text}");
    // Nothing ran locally: the task ended after the one model turn.
    assert_eq!(server.requests().len(), 1);

    run_task(&mut handle, "And its MSRV?").await;
    let requests = server.requests();
    assert_eq!(
        requests[0].body["tools"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()["type"],
        "web_search_20250305"
    );
    let assistant = &requests[1].body["messages"][1]["content"];
    let types: Vec<&str> = assistant
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        ["text", "server_tool_use", "web_search_tool_result", "text"]
    );
    assert_eq!(
        assistant[2]["content"][0]["encrypted_content"],
        "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC1kNjNjNTk1ZWI3Y2ISDCZ3bRxQe"
    );
}

#[tokio::test]
async fn an_openai_hosted_search_shows_as_a_fetch_card_and_is_replayed_in_the_next_input() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let responses = |name: &str| {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../testdata/sse/openai-responses")
            .join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let server = MockServer::start().await;
    server.push(ScriptedResponse::sse(fixtures::split_into_events(
        &responses("hosted_web_search.sse"),
    )));
    server.push(ScriptedResponse::sse(fixtures::split_into_events(
        &responses("text_only.sse"),
    )));
    let provider = corvid_providers::OpenAiResponsesProvider::new(&ProviderConfig {
        base_url: server.url(),
        ..ProviderConfig::default()
    })
    .unwrap()
    .with_hosted_web_search(Vec::new(), 200);
    let mut config = test_config(Arc::new(provider), Vec::new());
    config.tools = builtin_tools();
    let mut handle = spawn_agent(config);

    let events = run_task(&mut handle, "What is the latest tokio release?").await;
    check_invariants(&events, &["todo_write"]).unwrap();
    let id = "ws_6a1b2c3d4e5f6071web0search01";
    let started = events.iter().find_map(|e| match e {
        CoreEvent::ToolStarted {
            call_id, display, ..
        } if call_id == id => Some(display.clone()),
        _ => None,
    });
    let started = started.expect("the search has a card");
    assert_eq!(started.title, "Search \"tokio latest release\"");
    assert_eq!(started.kind, ToolKind::Fetch);
    let finished = events.iter().find_map(|e| match e {
        CoreEvent::ToolFinished {
            call_id, status, ..
        } if call_id == id => Some(*status),
        _ => None,
    });
    assert_eq!(finished, Some(ToolStatus::Completed));
    // Nothing ran locally: the task ended after the one model turn.
    assert_eq!(server.requests().len(), 1);

    run_task(&mut handle, "And its MSRV?").await;
    let requests = server.requests();
    assert_eq!(
        requests[0].body["tools"]
            .as_array()
            .unwrap()
            .last()
            .unwrap(),
        &json!({"type": "web_search"})
    );
    let input = requests[1].body["input"].as_array().unwrap();
    let types: Vec<&str> = input.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["message", "web_search_call", "message", "message"]);
    // Replayed without its id: with `store: false` no stored item answers to it.
    assert!(input[1].get("id").is_none(), "{}", input[1]);
    assert_eq!(input[1]["action"]["query"], "tokio latest release");
}
