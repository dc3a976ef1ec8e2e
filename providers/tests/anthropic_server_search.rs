//! Anthropic's server-side web search (issue 31): offered as the API's
//! `web_search_20250305` tool when the user chose it, its streamed `server_tool_use` and
//! `web_search_tool_result` blocks become hosted blocks (never client calls), and the next
//! request sends them back verbatim, as the API requires. Over loopback HTTP.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use corvid_protocol::{
    FinishReason, HostedStep, Message, ModelRequest, Part, Role, StreamEvent, ToolSchema,
};
use corvid_providers::{AnthropicProvider, Provider, ServerWebSearch, WireProtocol};
use corvid_testkit::{MockServer, ScriptedResponse, fixtures};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn provider(server: &MockServer, max_per_session: u32) -> AnthropicProvider {
    AnthropicProvider::new(&common::config(server, "sk-ant-test", Vec::new()))
        .unwrap()
        .with_server_web_search(ServerWebSearch { max_per_session })
}

fn request(messages: Vec<Message>, with_tools: bool) -> ModelRequest {
    let tool = Arc::new(ToolSchema {
        name: "read_file".into(),
        description: "Reads a file".into(),
        parameters: json!({"type": "object"}).into(),
    });
    ModelRequest {
        model: "claude-sonnet-4-5".into(),
        system: "Be brief.".into(),
        messages: messages.into(),
        tools: if with_tools { vec![tool] } else { Vec::new() },
        max_output_tokens: None,
        temperature: None,
    }
}

/// The recorded server search stream's events.
fn fixture_body() -> Vec<u8> {
    common::fixture("anthropic/server_web_search.sse").body
}

/// The assistant message a session keeps from the fixture's events, as the core assembles it.
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

#[tokio::test]
async fn a_server_search_is_offered_shown_never_called_and_sent_back_verbatim() {
    let server = common::replaying_events(&fixture_body()).await;
    server.push(ScriptedResponse::sse(fixtures::split_into_events(
        common::fixture("anthropic/text_then_tool_use.sse")
            .body
            .as_slice(),
    )));
    let provider = provider(&server, 200);
    let first = vec![Message::user_text("What is the latest tokio release?")];
    let items = common::drain(provider.stream(request(first.clone(), true))).await;
    let events: Vec<StreamEvent> = items.into_iter().map(Result::unwrap).collect();

    // The API's search is no client tool call and shows no preparing card.
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
    assert_eq!(hosted.len(), 2);
    assert_eq!(hosted[0].call_id, "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE");
    assert_eq!(
        hosted[0].step,
        HostedStep::Call {
            title: "Search \"tokio latest release\"".into(),
            args: json!({"query": "tokio latest release"}),
        }
    );
    assert_eq!(
        hosted[1].step,
        HostedStep::Result {
            text: "1. Releases · tokio-rs/tokio - GitHub\n   https://github.com/tokio-rs/tokio/releases\n\
                   2. tokio - crates.io: Rust Package Registry\n   https://crates.io/crates/tokio"
                .into(),
            is_error: false,
        }
    );

    // The request offered the API's search beside the client tools.
    let sent = server.requests();
    assert_eq!(
        sent[0].body["tools"][1],
        json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 5})
    );

    // The next request replays both blocks exactly as the API sent them, between the texts.
    let parts = assistant_parts(&events);
    let mut history = first;
    history.push(Message {
        role: Role::Assistant,
        parts,
    });
    history.push(Message::user_text("Thanks. And its MSRV?"));
    let _ = common::drain(provider.stream(request(history, true))).await;
    let sent = server.requests();
    let content = &sent[1].body["messages"][1]["content"];
    let original: Value = {
        let body = String::from_utf8(fixture_body()).unwrap();
        let result_line = body
            .lines()
            .find(|l| l.contains("\"web_search_tool_result\""))
            .unwrap();
        let event: Value = serde_json::from_str(result_line.trim_start_matches("data: ")).unwrap();
        event["content_block"].clone()
    };
    assert_eq!(
        content,
        &json!([
            {"type": "text", "text": "I'll search for the latest tokio release."},
            {"type": "server_tool_use", "id": "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE",
             "name": "web_search", "input": {"query": "tokio latest release"}},
            original,
            {"type": "text", "text": "The latest tokio release is listed on crates.io.",
             "cache_control": {"type": "ephemeral"}},
        ])
    );
}

#[test]
fn searches_in_the_history_count_against_the_session_cap() {
    let events: Vec<StreamEvent> =
        common::decoded(WireProtocol::AnthropicMessages, &fixture_body())
            .into_iter()
            .map(Result::unwrap)
            .collect();
    let searched = |n: usize| {
        let mut history = vec![Message::user_text("q")];
        for _ in 0..n {
            history.push(Message {
                role: Role::Assistant,
                parts: assistant_parts(&events),
            });
            history.push(Message::user_text("more"));
        }
        history
    };
    let tools_sent = |cap: u32, history: Vec<Message>, with_tools: bool| -> Value {
        let server_less = AnthropicProvider::new(&corvid_providers::ProviderConfig {
            base_url: "https://api.anthropic.com".into(),
            ..Default::default()
        })
        .unwrap()
        .with_server_web_search(ServerWebSearch {
            max_per_session: cap,
        });
        let body = server_less
            .request_body(&request(history, with_tools))
            .unwrap();
        let body: Value = serde_json::from_slice(&body).unwrap();
        body["tools"].clone()
    };
    // 2 of 3 used: one more search this request.
    assert_eq!(tools_sent(3, searched(2), true)[1]["max_uses"], 1);
    // All used: the API's search is not offered any more.
    assert_eq!(
        tools_sent(3, searched(3), true).as_array().unwrap().len(),
        1
    );
    // A request without client tools (a summary, a compaction) gets no search either.
    assert_eq!(tools_sent(200, searched(0), false), Value::Null);
}

#[test]
fn a_search_cut_off_before_its_result_is_not_sent_back() {
    let events: Vec<StreamEvent> =
        common::decoded(WireProtocol::AnthropicMessages, &fixture_body())
            .into_iter()
            .map(Result::unwrap)
            .collect();
    let mut parts = assistant_parts(&events);
    parts.retain(|p| !matches!(p, Part::Hosted(b) if matches!(b.step, HostedStep::Result { .. })));
    let history = vec![
        Message::user_text("q"),
        Message {
            role: Role::Assistant,
            parts,
        },
        Message::user_text("go on"),
    ];
    let provider = AnthropicProvider::new(&corvid_providers::ProviderConfig {
        base_url: "https://api.anthropic.com".into(),
        ..Default::default()
    })
    .unwrap();
    let body: Value =
        serde_json::from_slice(&provider.request_body(&request(history, true)).unwrap()).unwrap();
    let types: Vec<&str> = body["messages"][1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["text", "text"]);
}

#[test]
fn other_providers_leave_anthropics_search_blocks_out_of_their_requests() {
    let events: Vec<StreamEvent> =
        common::decoded(WireProtocol::AnthropicMessages, &fixture_body())
            .into_iter()
            .map(Result::unwrap)
            .collect();
    let history = vec![
        Message::user_text("q"),
        Message {
            role: Role::Assistant,
            parts: assistant_parts(&events),
        },
        Message::user_text("go on"),
    ];
    let config = corvid_providers::ProviderConfig {
        base_url: "https://api.example".into(),
        ..Default::default()
    };
    let bodies = [
        corvid_providers::OpenAiChatProvider::new(&config)
            .unwrap()
            .request_body(&request(history.clone(), true))
            .unwrap(),
        corvid_providers::OpenAiResponsesProvider::new(&config)
            .unwrap()
            .request_body(&request(history.clone(), true))
            .unwrap(),
        corvid_providers::GeminiProvider::new(&config)
            .unwrap()
            .request_body(&request(history, true))
            .unwrap(),
    ];
    for body in bodies {
        let text = String::from_utf8(body).unwrap();
        assert!(!text.contains("srvtoolu_"), "{text}");
        assert!(!text.contains("encrypted_content"), "{text}");
        assert!(text.contains("listed on crates.io"), "{text}");
    }
}
