//! Issue 28's bad input, through the agent loop and the real Responses and Gemini providers on
//! loopback HTTP: a Responses stream whose `sequence_number` goes backwards, a Gemini chunk with
//! neither `candidates` nor `promptFeedback`, a `functionCall` without a name, a
//! `thoughtSignature` that is not base64, and a Gemini stream cut after a whole call. Each
//! comes after a call the attempt announced: the task reports the field at fault (or retries
//! the cut), nothing of that attempt runs, its card is discarded, and the session answers the
//! next prompt.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::fake_tools::{ExecLog, FakeTool};
use common::invariants::check_invariants;
use common::{run_task, test_config};
use corvid_core::agent::{AgentConfig, spawn_agent};
use corvid_protocol::{CoreEvent, StopReason};
use corvid_providers::{ApiKey, GeminiProvider, OpenAiResponsesProvider, Provider, ProviderConfig};
use corvid_testkit::{MockServer, ScriptedResponse, fixtures, sse_event};
use serde_json::{Value, json};

fn provider_config(server: &MockServer) -> ProviderConfig {
    let _ = rustls::crypto::ring::default_provider().install_default();
    ProviderConfig {
        base_url: server.url(),
        api_key: ApiKey::new("test-key"),
        ..ProviderConfig::default()
    }
}

fn config(provider: Arc<dyn Provider>, model: &str, log: &ExecLog) -> AgentConfig {
    let mut config = test_config(provider, vec![FakeTool::reader("read", 1, log)]);
    config.model = model.into();
    config.retry.initial_delay = Duration::from_millis(1);
    config.retry.max_delay = Duration::from_millis(5);
    config
}

fn sse(chunks: &[Value]) -> ScriptedResponse {
    ScriptedResponse::sse(chunks.iter().map(|c| sse_event(&c.to_string())).collect())
}

/// A Gemini chunk with `parts` and, when given, a finish reason.
fn gemini(parts: Value, finish: Option<&str>) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if let Some(finish) = finish {
        candidate["finishReason"] = json!(finish);
    }
    json!({"candidates": [candidate]})
}

fn gemini_call(tag: &str) -> Value {
    json!({"functionCall": {"name": "read", "args": {"tag": tag}}})
}

/// Runs the bad stream then a good answer: the first task fails naming `field`, nothing ran,
/// the announced card was discarded, and the second task ends normally with the answer.
async fn bad_then_usable(config: AgentConfig, log: &ExecLog, field: &str) {
    let mut handle = spawn_agent(config);
    let events = run_task(&mut handle, "go").await;
    check_invariants(&events, &["todo_write"]).unwrap();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, CoreEvent::ToolPreparing { .. })),
        "the bad stream announced a call first: {events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, CoreEvent::PreparationDiscarded { .. })),
        "{events:?}"
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, CoreEvent::ToolStarted { .. })),
        "{events:?}"
    );
    let failure = events.iter().find_map(|e| match e {
        CoreEvent::TaskFinished {
            stop_reason: StopReason::Error,
            error: Some(error),
            ..
        } => Some(error.message.clone()),
        _ => None,
    });
    let failure = failure.unwrap_or_else(|| panic!("the task did not fail: {events:?}"));
    assert!(failure.contains(field), "{failure}");
    assert_eq!(log.tags(), Vec::<String>::new());

    let events = run_task(&mut handle, "again").await;
    let finished = events.iter().find_map(|e| match e {
        CoreEvent::TaskFinished { stop_reason, .. } => Some(*stop_reason),
        _ => None,
    });
    assert_eq!(finished, Some(StopReason::EndTurn), "{events:?}");
    assert_eq!(log.tags(), Vec::<String>::new());
}

fn gemini_provider(server: &MockServer) -> Arc<dyn Provider> {
    Arc::new(GeminiProvider::new(&provider_config(server)).unwrap())
}

fn gemini_answer(server: &MockServer) {
    server.push(ScriptedResponse::sse(fixtures::split_into_events(
        &fixtures::load("gemini-api/text_only").body,
    )));
}

#[tokio::test]
async fn a_gemini_chunk_with_neither_candidates_nor_prompt_feedback_fails_the_attempt_and_runs_nothing()
 {
    let server = MockServer::start().await;
    server.push(sse(&[
        gemini(json!([gemini_call("a")]), None),
        json!({"usageMetadata": {"promptTokenCount": 3}}),
    ]));
    gemini_answer(&server);
    let log = ExecLog::default();
    let config = config(gemini_provider(&server), "gemini-2.5-pro", &log);
    bad_then_usable(config, &log, "`candidates` nor `promptFeedback`").await;
}

#[tokio::test]
async fn a_gemini_function_call_without_a_name_fails_the_attempt_and_runs_the_named_one_neither() {
    let server = MockServer::start().await;
    server.push(sse(&[gemini(
        json!([gemini_call("a"), {"functionCall": {"args": {"tag": "b"}}}]),
        Some("STOP"),
    )]));
    gemini_answer(&server);
    let log = ExecLog::default();
    let config = config(gemini_provider(&server), "gemini-2.5-pro", &log);
    bad_then_usable(config, &log, "`functionCall` without a `name`").await;
}

#[tokio::test]
async fn a_thought_signature_that_is_not_base64_fails_the_attempt_and_runs_nothing() {
    let server = MockServer::start().await;
    let mut signed = gemini_call("b");
    signed["thoughtSignature"] = json!("not base64!");
    server.push(sse(&[
        gemini(json!([gemini_call("a")]), None),
        gemini(json!([signed]), Some("STOP")),
    ]));
    gemini_answer(&server);
    let log = ExecLog::default();
    let config = config(gemini_provider(&server), "gemini-2.5-pro", &log);
    bad_then_usable(config, &log, "`thoughtSignature` that is not base64").await;
}

#[tokio::test]
async fn a_gemini_stream_cut_after_a_whole_call_runs_nothing_and_the_retry_answers() {
    let server = MockServer::start().await;
    let cut = fixtures::load("gemini-api/cut_body");
    server.push(ScriptedResponse::sse(fixtures::split_into_events(&cut.body)).cut());
    gemini_answer(&server);
    let log = ExecLog::default();
    let mut handle = spawn_agent(config(gemini_provider(&server), "gemini-2.5-pro", &log));
    let events = run_task(&mut handle, "go").await;
    check_invariants(&events, &["todo_write"]).unwrap();
    // The cut attempt's card (its call `run` arrived whole) is discarded, then retried.
    assert!(
        events.iter().any(
            |e| matches!(e, CoreEvent::PreparationDiscarded { tool_name, .. } if tool_name == "run")
        ),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, CoreEvent::AttemptRetried { .. })),
        "{events:?}"
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, CoreEvent::ToolStarted { .. })),
        "{events:?}"
    );
    let finished = events.iter().find_map(|e| match e {
        CoreEvent::TaskFinished { stop_reason, .. } => Some(*stop_reason),
        _ => None,
    });
    assert_eq!(finished, Some(StopReason::EndTurn), "{events:?}");
    assert_eq!(server.requests().len(), 2);
}

fn responses_event(kind: &str, seq: u64, rest: Value) -> Value {
    let mut event = json!({"type": kind, "sequence_number": seq});
    for (key, value) in rest.as_object().unwrap() {
        event[key] = value.clone();
    }
    event
}

#[tokio::test]
async fn a_responses_sequence_number_going_backwards_fails_the_attempt_and_runs_nothing() {
    let server = MockServer::start().await;
    let item = json!({"id": "fc_1", "type": "function_call", "status": "in_progress",
        "arguments": "", "call_id": "call_1", "name": "read"});
    let mut done = item.clone();
    done["arguments"] = json!("{\"tag\":\"a\"}");
    done["status"] = json!("completed");
    server.push(sse(&[
        responses_event("response.created", 0, json!({"response": {"id": "resp_1"}})),
        responses_event(
            "response.output_item.added",
            1,
            json!({"output_index": 0, "item": item}),
        ),
        responses_event(
            "response.function_call_arguments.delta",
            2,
            json!({"item_id": "fc_1", "output_index": 0, "delta": "{\"tag\":\"a\"}"}),
        ),
        responses_event(
            "response.output_item.done",
            3,
            json!({"output_index": 0, "item": done}),
        ),
        responses_event(
            "response.completed",
            1,
            json!({"response": {"id": "resp_1", "status": "completed", "output": []}}),
        ),
    ]));
    server.push(ScriptedResponse::sse(fixtures::split_into_events(
        &fixtures::load("openai-responses/text_only").body,
    )));
    let log = ExecLog::default();
    let provider = Arc::new(OpenAiResponsesProvider::new(&provider_config(&server)).unwrap());
    let config = config(provider, "gpt-5.1-codex", &log);
    bad_then_usable(config, &log, "sequence_number 1 came after 3").await;
}
