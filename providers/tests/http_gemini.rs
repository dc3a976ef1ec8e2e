//! The Gemini provider over real loopback HTTP (corvid-testkit): the signature round trip of a
//! tool loop, Google's error bodies, a cut stream.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use corvid_protocol::{
    ErrorKind, FinishReason, Message, ModelRequest, Part, Role, StreamEvent, ToolResult, ToolSchema,
};
use corvid_providers::{GeminiProvider, Provider, Reasoning, ReasoningEffort};
use corvid_testkit::{MockServer, ScriptedResponse, fixtures};
use pretty_assertions::assert_eq;
use serde_json::json;

const KEY: &str = "AIza-test-gemini-secret";

fn provider(server: &MockServer) -> GeminiProvider {
    GeminiProvider::new(&common::config(server, KEY, Vec::new()))
        .expect("provider")
        .with_reasoning(Reasoning {
            effort: Some(ReasoningEffort::Low),
            summary: None,
        })
}

fn request(messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        model: "gemini-2.5-pro".into(),
        system: "You are terse.".into(),
        messages: messages.into(),
        tools: vec![std::sync::Arc::new(ToolSchema {
            name: "read_file".into(),
            description: "Reads a file".into(),
            parameters: json!({"type": "object", "additionalProperties": false,
                "properties": {"path": {"type": "string"}}})
            .into(),
        })],
        max_output_tokens: None,
        temperature: None,
    }
}

/// The history the core keeps from a stream: thoughts and signatures as parts, then calls.
fn history_of(items: &[corvid_protocol::StreamItem]) -> Message {
    let mut parts = Vec::new();
    let mut calls = Vec::new();
    for item in items {
        match item {
            Ok(StreamEvent::Thought { text }) => parts.push(Part::Thought {
                text: text.clone(),
                signature: None,
                provider_data: None,
            }),
            Ok(StreamEvent::ThoughtData { data }) => match parts.last_mut() {
                Some(Part::Thought {
                    provider_data: slot @ None,
                    ..
                }) => *slot = Some(data.clone()),
                _ => parts.push(Part::Thought {
                    text: String::new(),
                    signature: None,
                    provider_data: Some(data.clone()),
                }),
            },
            Ok(StreamEvent::ToolCall(call)) => calls.push(Part::ToolCall(call.clone())),
            _ => {}
        }
    }
    parts.extend(calls);
    Message {
        role: Role::Assistant,
        parts,
    }
}

#[tokio::test]
async fn a_tool_loop_sends_the_call_s_signature_back_on_the_call_part_byte_exact() {
    let server = MockServer::start().await;
    let fixture = fixtures::load("gemini-api/thoughts_signed_call");
    server.push(ScriptedResponse::sse(fixtures::split_into_events(
        &fixture.body,
    )));
    let provider = provider(&server);
    let first = common::drain(provider.stream(request(vec![Message::user_text("main?")]))).await;
    let assistant = history_of(&first);
    let Some(Part::ToolCall(call)) = assistant.parts.last().cloned() else {
        panic!("no call in {first:?}");
    };
    let result = Message {
        role: Role::User,
        parts: vec![Part::ToolResult(ToolResult {
            call_id: call.call_id.clone(),
            name: call.name.clone(),
            output: "fn main() {}".into(),
            is_error: false,
            images: Vec::new(),
        })],
    };
    server.push(ScriptedResponse::sse(fixtures::split_into_events(
        &fixtures::load("gemini-api/text_only").body,
    )));
    let second = common::drain(provider.stream(request(vec![
        Message::user_text("main?"),
        assistant,
        result,
    ])))
    .await;
    assert_eq!(
        second.last().cloned().unwrap(),
        Ok(StreamEvent::Finished {
            reason: FinishReason::Stop
        })
    );

    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[1].path, "/models/gemini-2.5-pro:streamGenerateContent");
    assert_eq!(sent[1].header("x-goog-api-key"), Some(KEY));
    assert!(sent[1].header("authorization").is_none());
    let body = &sent[1].body;
    assert_eq!(
        body["contents"],
        json!([
            {"role": "user", "parts": [{"text": "main?"}]},
            // The unsigned thought text stays home; the signature rides on the call.
            {"role": "model", "parts": [
                {"functionCall": {"name": "read_file", "args": {"path": "src/main.rs"}},
                 "thoughtSignature": "CiQB0e2Kb3Vx9m2pH1nVqk6yZt0QpC5mJYxR8m8Vn4Q0B8o2Yx0KYQHR7Ypp"},
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "read_file", "response": {"output": "fn main() {}"}}},
            ]},
        ])
    );
    assert_eq!(
        body["systemInstruction"],
        json!({"parts": [{"text": "You are terse."}]})
    );
    assert_eq!(
        body["tools"],
        json!([{"functionDeclarations": [{"name": "read_file", "description": "Reads a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}]}])
    );
    assert_eq!(
        body["generationConfig"]["thinkingConfig"],
        json!({"includeThoughts": true, "thinkingBudget": 2048})
    );
}

#[tokio::test]
async fn resource_exhausted_is_rate_limited_with_google_s_retry_delay_and_no_key_in_the_error() {
    let server = MockServer::start().await;
    server.push(ScriptedResponse::json(
        429,
        json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
            "message": "You exceeded your current quota, please check your plan and billing details.",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "41s"}]}}),
    ));
    let items =
        common::drain(provider(&server).stream(request(vec![Message::user_text("x")]))).await;
    let error = items.last().cloned().unwrap().unwrap_err();
    assert_eq!(
        (error.kind, error.retry_after_ms, error.status),
        (ErrorKind::RateLimited, Some(41_000), Some(429))
    );
    assert!(!error.to_string().contains(KEY), "{error}");
}

#[tokio::test]
async fn a_cut_stream_is_retryable_truncation_without_calls_and_the_retry_succeeds() {
    let server = MockServer::start().await;
    let cut = fixtures::load("gemini-api/cut_body");
    server.push(ScriptedResponse::sse(fixtures::split_into_events(&cut.body)).cut());
    server.push(ScriptedResponse::sse(fixtures::split_into_events(
        &fixtures::load("gemini-api/text_only").body,
    )));
    let provider = provider(&server);
    let first = common::drain(provider.stream(request(vec![Message::user_text("x")]))).await;
    assert!(
        !first
            .iter()
            .any(|i| matches!(i, Ok(StreamEvent::ToolCall(_))))
    );
    let error = first.last().cloned().unwrap().unwrap_err();
    assert_eq!(error.kind, ErrorKind::StreamTruncated);
    assert!(error.kind.is_retryable());
    let retry = provider
        .complete(request(vec![Message::user_text("x")]))
        .await
        .expect("the retry");
    assert_eq!(retry.text, "Hello there! How can I help?");
    assert_eq!(server.requests().len(), 2);
}

fn replay(server: &MockServer, name: &str) {
    let fixture = fixtures::load(&format!("gemini-api/{name}"));
    server.push(ScriptedResponse::sse(fixtures::split_into_events(
        &fixture.body,
    )));
}

/// The texts of the last user turn of a sent body.
fn last_user_texts(body: &serde_json::Value) -> Vec<String> {
    let contents = body["contents"].as_array().unwrap();
    let last = contents.last().unwrap();
    assert_eq!(last["role"], "user");
    last["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["text"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_malformed_call_is_retryable_and_the_retry_of_that_request_carries_a_nudge_once() {
    let server = MockServer::start().await;
    replay(&server, "malformed_function_call");
    replay(&server, "text_only");
    replay(&server, "text_only");
    let provider = provider(&server);
    let asked = request(vec![Message::user_text("read config.toml")]);
    let first = common::drain(provider.stream(asked.clone())).await;
    let error = first.last().cloned().unwrap().unwrap_err();
    assert!(error.is_retryable(), "{error:?}");
    assert!(
        error.message.contains("print(default_api.read_file"),
        "{}",
        error.message
    );
    // The agent retries the same request: it goes out with the nudge, and succeeds.
    let retry = common::drain(provider.stream(asked.clone())).await;
    assert!(retry.iter().all(Result::is_ok), "{retry:?}");
    // Answered: the next request is the conversation as it is, without a nudge.
    common::drain(provider.stream(asked)).await;

    let sent = server.requests();
    assert_eq!(last_user_texts(&sent[0].body), ["read config.toml"]);
    let nudged = last_user_texts(&sent[1].body);
    assert_eq!(nudged[0], "read config.toml");
    assert!(
        nudged[1].starts_with("Your last reply ended in a malformed function call."),
        "{nudged:?}"
    );
    assert_eq!(last_user_texts(&sent[2].body), ["read config.toml"]);
}

#[tokio::test]
async fn a_second_malformed_answer_to_the_nudge_is_a_clear_error_that_is_not_retried() {
    let server = MockServer::start().await;
    replay(&server, "malformed_function_call");
    replay(&server, "malformed_function_call");
    let provider = provider(&server);
    let asked = request(vec![Message::user_text("read config.toml")]);
    common::drain(provider.stream(asked.clone())).await;
    let second = common::drain(provider.stream(asked)).await;
    let error = second.last().cloned().unwrap().unwrap_err();
    assert_eq!(error.kind, ErrorKind::BadResponse);
    assert!(!error.is_retryable());
    assert_eq!(
        error.message,
        "Gemini produced a malformed function call again after being asked to write it anew \
         (MALFORMED_FUNCTION_CALL: Malformed function call: print(default_api.read_file(path=\"config.toml\", limit=))); \
         corvid does not retry it a second time: rephrase the request, or switch models with /model"
    );
    assert!(!second.iter().any(|i| matches!(
        i,
        Ok(StreamEvent::ToolCall(_)) | Ok(StreamEvent::ToolPreparing { .. })
    )));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_malformed_answer_to_another_request_is_not_nudged() {
    let server = MockServer::start().await;
    replay(&server, "malformed_function_call");
    replay(&server, "text_only");
    let provider = provider(&server);
    common::drain(provider.stream(request(vec![Message::user_text("one")]))).await;
    common::drain(provider.stream(request(vec![Message::user_text("two")]))).await;
    assert_eq!(last_user_texts(&server.requests()[1].body), ["two"]);
}
