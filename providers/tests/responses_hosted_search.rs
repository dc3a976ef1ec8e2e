//! The Responses API's hosted web search (issue 31): offered as `{"type": "web_search"}`
//! when the user chose `{"type": "openai"}`, its streamed `web_search_call` items become
//! hosted blocks (never client calls), and the next request sends the item back verbatim
//! in its `input`. Over loopback HTTP.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use corvid_protocol::{
    FinishReason, HostedStep, Message, ModelRequest, Part, Role, StreamEvent, ToolSchema,
};
use corvid_providers::{
    AnthropicProvider, OpenAiResponsesProvider, Provider, ProviderConfig, WireProtocol,
};
use corvid_testkit::MockServer;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const FIXTURE: &str = "openai-responses/hosted_web_search.sse";

fn provider(server: &MockServer) -> OpenAiResponsesProvider {
    OpenAiResponsesProvider::new(&common::config(server, "sk-test", Vec::new()))
        .unwrap()
        .with_hosted_web_search(Vec::new(), 200)
}

fn request(messages: Vec<Message>, with_tools: bool) -> ModelRequest {
    let tool = Arc::new(ToolSchema {
        name: "read_file".into(),
        description: "Reads a file".into(),
        parameters: json!({"type": "object"}).into(),
    });
    ModelRequest {
        model: "gpt-4.1".into(),
        system: "Be brief.".into(),
        messages: messages.into(),
        tools: if with_tools { vec![tool] } else { Vec::new() },
        max_output_tokens: None,
        temperature: None,
    }
}

/// The assistant message a session keeps from the events, as the core assembles it.
fn assistant_parts(events: &[StreamEvent]) -> Vec<Part> {
    let mut parts: Vec<Part> = Vec::new();
    for event in events {
        match event {
            StreamEvent::Text { text } => match parts.last_mut() {
                Some(Part::Text { text: t }) => t.push_str(text),
                _ => parts.push(Part::Text { text: text.clone() }),
            },
            StreamEvent::Hosted(block) => parts.push(Part::Hosted(block.clone())),
            _ => {}
        }
    }
    parts
}

/// The `web_search_call` item exactly as the fixture's `output_item.done` carries it.
/// The finished item as the next request sends it back: as it came, without its `id`.
fn replayed_item() -> Value {
    let mut item = done_item();
    item.as_object_mut().unwrap().remove("id");
    item
}

fn done_item() -> Value {
    let body = String::from_utf8(common::fixture(FIXTURE).body).unwrap();
    let line = body
        .lines()
        .find(|l| l.contains("\"response.output_item.done\"") && l.contains("web_search_call"))
        .unwrap();
    let event: Value = serde_json::from_str(line.trim_start_matches("data: ")).unwrap();
    event["item"].clone()
}

fn events() -> Vec<StreamEvent> {
    common::decoded(
        WireProtocol::OpenAiResponses,
        &common::fixture(FIXTURE).body,
    )
    .into_iter()
    .map(Result::unwrap)
    .collect()
}

#[test]
fn a_web_search_call_item_becomes_hosted_blocks_and_no_tool_call() {
    let events = events();
    assert!(
        !events.iter().any(|e| matches!(
            e,
            StreamEvent::ToolCall(_) | StreamEvent::ToolPreparing { .. }
        )),
        "{events:#?}"
    );
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Finished {
            reason: FinishReason::Stop
        })
    );
    let hosted: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Hosted(b) => Some(b),
            _ => None,
        })
        .collect();
    assert_eq!(hosted.len(), 2, "{events:#?}");
    assert_eq!(hosted[0].provider, "openai-responses");
    assert_eq!(hosted[0].call_id, "ws_6a1b2c3d4e5f6071web0search01");
    assert_eq!(hosted[0].tool_name, "web_search");
    let HostedStep::Call { title, args } = &hosted[0].step else {
        panic!("{:?}", hosted[0].step)
    };
    assert_eq!(title, "Search \"tokio latest release\"");
    assert_eq!(args["query"], "tokio latest release");
    // Kept to be replayed, minus the id no stored item could answer to (store: false).
    assert_eq!(hosted[0].data.to_value(), replayed_item());
    assert_eq!(
        hosted[1].step,
        HostedStep::Result {
            text:
                "1. https://github.com/tokio-rs/tokio/releases\n2. https://crates.io/crates/tokio"
                    .into(),
            is_error: false,
        }
    );
}

#[tokio::test]
async fn the_hosted_tool_is_offered_and_the_search_item_replayed_without_its_id() {
    let server = common::replaying_events(&common::fixture(FIXTURE).body).await;
    server.push(corvid_testkit::ScriptedResponse::sse(
        corvid_testkit::fixtures::split_into_events(
            common::fixture("openai-responses/text_only.sse")
                .body
                .as_slice(),
        ),
    ));
    let provider = provider(&server);
    let first = vec![Message::user_text("What is the latest tokio release?")];
    let items = common::drain(provider.stream(request(first.clone(), true))).await;
    let events: Vec<StreamEvent> = items.into_iter().map(Result::unwrap).collect();
    assert!(!events.iter().any(|e| matches!(e, StreamEvent::ToolCall(_))));

    let sent = server.requests();
    assert_eq!(sent[0].body["tools"][1], json!({"type": "web_search"}));
    assert_eq!(
        sent[0].body["include"],
        json!(["web_search_call.action.sources"])
    );

    let mut history = first;
    history.push(Message {
        role: Role::Assistant,
        parts: assistant_parts(&events),
    });
    history.push(Message::user_text("Thanks. And its MSRV?"));
    let _ = common::drain(provider.stream(request(history, true))).await;
    let sent = server.requests();
    assert_eq!(
        sent[1].body["input"],
        json!([
            {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "What is the latest tokio release?"}]},
            replayed_item(),
            {"type": "message", "role": "assistant",
             "content": [{"type": "output_text",
                          "text": "The latest tokio release is listed on crates.io."}]},
            {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "Thanks. And its MSRV?"}]},
        ])
    );
}

#[test]
fn no_hosted_tool_unless_configured_nor_without_client_tools_and_other_apis_skip_the_item() {
    let config = ProviderConfig {
        base_url: "https://api.openai.com/v1".into(),
        ..Default::default()
    };
    let body = |p: &OpenAiResponsesProvider, r: &ModelRequest| -> Value {
        serde_json::from_slice(&p.request_body(r).unwrap()).unwrap()
    };
    let plain = OpenAiResponsesProvider::new(&config).unwrap();
    let searching = plain
        .clone()
        .with_hosted_web_search(vec!["docs.rs".into()], 1);
    let q = vec![Message::user_text("q")];
    assert_eq!(
        body(&plain, &request(q.clone(), true))["tools"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        body(&plain, &request(q.clone(), true))["include"],
        Value::Null
    );
    assert_eq!(
        body(&searching, &request(q.clone(), true))["tools"][1],
        json!({"type": "web_search", "filters": {"allowed_domains": ["docs.rs"]}})
    );
    // A request without client tools (a summary, a compaction) searches nothing.
    assert_eq!(body(&searching, &request(q, false))["tools"], Value::Null);

    let history = vec![
        Message::user_text("q"),
        Message {
            role: Role::Assistant,
            parts: assistant_parts(&events()),
        },
        Message::user_text("go on"),
    ];
    // The one search `maxPerSession` allows is in the history: not offered any more.
    assert_eq!(
        body(&searching, &request(history.clone(), true))["tools"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // The Anthropic API leaves this API's search out of its history.
    let anthropic = AnthropicProvider::new(&ProviderConfig {
        base_url: "https://api.anthropic.com".into(),
        ..Default::default()
    })
    .unwrap();
    let sent: Value =
        serde_json::from_slice(&anthropic.request_body(&request(history, true)).unwrap()).unwrap();
    let types: Vec<&str> = sent["messages"][1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["text"]);
}
