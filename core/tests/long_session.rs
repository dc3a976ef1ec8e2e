//! Long sessions over real loopback HTTP: a server with a small context window answers
//! OpenAI's real "context length exceeded" error above its limit; corvid compacts before it,
//! recovers when the server refuses anyway, and a resumed session sends the compacted history.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::fake_tools::{ExecLog, FakeTool};
use common::invariants::check_invariants;
use common::openai_sse::*;
use common::{run_task, shut_down, test_config};
use corvid_core::agent::{AgentConfig, AgentHandle, spawn_agent, spawn_agent_observed};
use corvid_core::context::ContextPolicy;
use corvid_core::context::compaction::{COMPACTION_INSTRUCTION, COMPACTION_SYSTEM, SUMMARY_HEADER};
use corvid_core::session::{SessionStore, spawn_resumed};
use corvid_protocol::{COMPACTION_PROMPT_ID, CoreEvent, ErrorKind, StopReason};
use corvid_providers::{OpenAiChatProvider, ProviderConfig};
use corvid_testkit::{MockServer, RecordedRequest, ScriptedResponse};
use serde_json::json;

/// The server's window, and the body size above which it refuses (about 4 bytes a token).
const WINDOW: u64 = 40_000;
const SERVER_LIMIT_BYTES: usize = 160_000;
/// Each task carries this much text in the call, its result and the answer.
const BULK: usize = 1_500;

/// OpenAI's answer to a request over the model's window.
fn too_long() -> ScriptedResponse {
    ScriptedResponse::error(
        400,
        r#"{"error":{"message":"This model's maximum context length is 40000 tokens. However, your messages resulted in 41234 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
    )
}

fn is_compaction(request: &RecordedRequest) -> bool {
    request.body["messages"][0]["content"].as_str() == Some(COMPACTION_SYSTEM)
}

fn is_oversized(request: &RecordedRequest) -> bool {
    request.raw_body.len() > SERVER_LIMIT_BYTES
}

fn summary(n: usize) -> ScriptedResponse {
    ScriptedResponse::sse(vec![
        text(&format!(
            "SUMMARY-{n}: Goal: answer the numbered tasks. Files: none."
        )),
        finish("stop"),
        usage(30_000, 40),
        done(),
    ])
}

fn tool_turn(task: usize) -> ScriptedResponse {
    let args = json!({"tag": format!("t{task}-{}", "a".repeat(BULK))}).to_string();
    ScriptedResponse::sse(vec![
        call_start(0, &format!("call_{task}"), "read"),
        call_args(0, &args),
        finish("tool_calls"),
        done(),
    ])
}

fn answer_turn(task: usize) -> ScriptedResponse {
    ScriptedResponse::sse(vec![
        text(&format!("answer {task} {}", "b".repeat(BULK))),
        finish("stop"),
        done(),
    ])
}

/// A server that refuses anything over its limit and answers compaction requests with a
/// summary, whatever else is queued.
async fn server() -> MockServer {
    let server = MockServer::start().await;
    for _ in 0..20 {
        server.push_matching(is_oversized, too_long());
    }
    for n in 1..=10 {
        server.push_matching(is_compaction, summary(n));
    }
    server
}

fn config(server: &MockServer, log: &ExecLog) -> AgentConfig {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let provider = OpenAiChatProvider::new(&ProviderConfig {
        base_url: server.url(),
        ..ProviderConfig::default()
    })
    .unwrap();
    let mut config = test_config(Arc::new(provider), vec![FakeTool::reader("read", 0, log)]);
    config.policy.context = ContextPolicy {
        window_override: Some(WINDOW),
        ..ContextPolicy::default()
    };
    config
}

/// Every `tool` message answers a call of the assistant message right before the tool run.
fn assert_paired(request: &RecordedRequest) {
    let messages = request.body["messages"].as_array().unwrap();
    let mut open: Vec<String> = Vec::new();
    for m in messages {
        match m["role"].as_str().unwrap() {
            "assistant" => {
                open = m["tool_calls"]
                    .as_array()
                    .map(|calls| {
                        calls
                            .iter()
                            .map(|c| c["id"].as_str().unwrap().to_owned())
                            .collect()
                    })
                    .unwrap_or_default();
            }
            "tool" => {
                let id = m["tool_call_id"].as_str().unwrap();
                assert!(open.iter().any(|o| o == id), "result {id} without its call");
            }
            _ => open.clear(),
        }
    }
}

fn main_requests(server: &MockServer) -> Vec<RecordedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| !is_compaction(r))
        .collect()
}

async fn run_tasks(
    handle: &mut AgentHandle,
    server: &MockServer,
    range: std::ops::Range<usize>,
) -> Vec<CoreEvent> {
    let mut all = Vec::new();
    for task in range {
        server.push_matching(|r| !is_compaction(r), tool_turn(task));
        server.push_matching(|r| !is_compaction(r), answer_turn(task));
        let events = run_task(handle, &format!("task {task}")).await;
        check_invariants(&events, &["todo_write"]).unwrap();
        assert!(
            matches!(
                events.last(),
                Some(CoreEvent::TaskFinished {
                    stop_reason: StopReason::EndTurn,
                    error: None,
                    ..
                })
            ),
            "task {task} did not succeed: {:#?}",
            events.last()
        );
        all.extend(events);
    }
    all
}

#[tokio::test]
async fn sixty_tasks_succeed_under_a_small_window_by_compacting_before_the_limit() {
    let server = server().await;
    let log = ExecLog::default();
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let recorder = Arc::new(store.create(cwd.path(), "long-1", "main-model").unwrap());
    let mut handle = spawn_agent_observed(config(&server, &log), recorder);
    let events = run_tasks(&mut handle, &server, 0..60).await;
    shut_down(handle).await;

    let requests = server.requests();
    assert!(
        requests.iter().all(|r| !is_oversized(r)),
        "corvid sent a request over the server's limit"
    );
    let compactions: Vec<&RecordedRequest> = requests.iter().filter(|r| is_compaction(r)).collect();
    assert!(compactions.len() >= 2, "{} compactions", compactions.len());
    for request in &compactions {
        // No tools: the answer can only be the summary.
        assert!(request.body.get("tools").is_none(), "{}", request.body);
        let last = request.body["messages"].as_array().unwrap().last().unwrap();
        // The whole instruction, as its JSON text sits in the request body.
        let instruction = json!(COMPACTION_INSTRUCTION).to_string();
        assert!(
            last.to_string()
                .contains(&instruction[1..instruction.len() - 1]),
            "{last}"
        );
        assert_paired(request);
    }
    let compacted: Vec<&CoreEvent> = events
        .iter()
        .filter(|e| matches!(e, CoreEvent::Compacted { .. }))
        .collect();
    assert_eq!(compacted.len(), compactions.len());
    for event in &compacted {
        let CoreEvent::Compacted {
            tokens_before,
            tokens_after,
            ..
        } = event
        else {
            unreachable!()
        };
        assert!(tokens_after < tokens_before, "{event:?}");
    }
    // The compaction's own usage is counted under its prompt id.
    assert!(events.iter().any(|e| matches!(e,
        CoreEvent::Usage { prompt_id, .. } if prompt_id == COMPACTION_PROMPT_ID)));

    // After the last compaction: the marked summary first, then recent turns verbatim.
    let last = main_requests(&server).pop().unwrap();
    assert_paired(&last);
    let messages = last.body["messages"].as_array().unwrap();
    let first = messages[1]["content"].to_string();
    assert!(first.contains(&SUMMARY_HEADER[..40]), "{first}");
    assert!(
        first.contains(&format!("SUMMARY-{}", compactions.len())),
        "{first}"
    );
    let body = last.body.to_string();
    assert!(
        body.contains("task 59") && body.contains("answer 58"),
        "recent turns kept"
    );
    assert!(!body.contains("answer 1 "), "old turns summarized away");

    // Resumed, the session sends the compacted history, not the whole recording.
    let loaded = store.load(cwd.path(), "long-1").unwrap();
    server.push_matching(|r| !is_compaction(r), answer_turn(60));
    let resumed = spawn_resumed(config(&server, &log), &store, &loaded).unwrap();
    let mut handle = resumed.handle;
    run_task(&mut handle, "task 60").await;
    let resumed_request = main_requests(&server).pop().unwrap();
    let resumed_messages = resumed_request.body["messages"].as_array().unwrap();
    assert_eq!(
        resumed_messages[1], messages[1],
        "the resumed history starts with the same summary"
    );
    assert_paired(&resumed_request);
    assert!(resumed_request.raw_body.len() < SERVER_LIMIT_BYTES);
    shut_down(handle).await;
}

#[tokio::test]
async fn a_refusal_under_the_threshold_is_recovered_by_one_compaction_and_a_retry() {
    let server = MockServer::start().await;
    server.push_matching(is_compaction, summary(1));
    let log = ExecLog::default();
    let mut handle = spawn_agent(config(&server, &log));
    run_tasks(&mut handle, &server, 0..3).await;
    // The estimate says it fits; the server disagrees once.
    server.push_matching(|r| !is_compaction(r), too_long());
    server.push_matching(|r| !is_compaction(r), answer_turn(3));
    let events = run_task(&mut handle, "task 3").await;
    check_invariants(&events, &["todo_write"]).unwrap();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, CoreEvent::Compacted { .. })),
        "{events:#?}"
    );
    assert!(matches!(
        events.last(),
        Some(CoreEvent::TaskFinished {
            stop_reason: StopReason::EndTurn,
            error: None,
            ..
        })
    ));
    let retried = main_requests(&server).pop().unwrap();
    assert!(retried.body.to_string().contains("SUMMARY-1"));
    assert_paired(&retried);
    shut_down(handle).await;
}

#[tokio::test]
async fn a_server_that_still_refuses_after_compacting_fails_the_turn_with_advice_and_the_next_prompt_works()
 {
    let server = MockServer::start().await;
    server.push_matching(is_compaction, summary(1));
    let log = ExecLog::default();
    let mut handle = spawn_agent(config(&server, &log));
    run_tasks(&mut handle, &server, 0..2).await;
    server.push_matching(|r| !is_compaction(r), too_long());
    server.push_matching(|r| !is_compaction(r), too_long());
    let events = run_task(&mut handle, "task 2").await;
    let Some(CoreEvent::TaskFinished {
        stop_reason: StopReason::Error,
        error: Some(error),
        ..
    }) = events.last()
    else {
        panic!("{events:#?}");
    };
    assert_eq!(error.kind, ErrorKind::ContextTooLong);
    assert!(
        error
            .message
            .contains("even after the conversation was compacted"),
        "{}",
        error.message
    );
    assert!(error.message.contains("/clear"), "{}", error.message);
    // The session is not broken: the next prompt is answered.
    server.push_matching(|r| !is_compaction(r), answer_turn(3));
    let events = run_task(&mut handle, "task 3").await;
    assert!(
        matches!(
            events.last(),
            Some(CoreEvent::TaskFinished {
                stop_reason: StopReason::EndTurn,
                error: None,
                ..
            })
        ),
        "{events:#?}"
    );
    shut_down(handle).await;
}

#[tokio::test]
async fn compress_that_would_make_the_conversation_larger_keeps_the_history_and_says_so() {
    let server = MockServer::start().await;
    let log = ExecLog::default();
    let mut config = config(&server, &log);
    config.policy.context = ContextPolicy {
        window_override: Some(1_000),
        auto_compact: false,
        ..ContextPolicy::default()
    };
    // The summary is far longer than the three answers it would replace.
    server.push_matching(
        is_compaction,
        ScriptedResponse::sse(vec![
            text(&"a long summary ".repeat(2_000)),
            finish("stop"),
            done(),
        ]),
    );
    let mut handle = spawn_agent(config);
    for task in 0..3 {
        server.push_matching(|r| !is_compaction(r), answer_turn(task));
        run_task(&mut handle, &format!("task {task}")).await;
    }
    handle.submit(corvid_protocol::Op::Compact).unwrap();
    let events = common::collect_task(&mut handle).await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, CoreEvent::Compacted { .. })),
        "{events:#?}"
    );
    assert!(
        events.iter().any(
            |e| matches!(e, CoreEvent::Warning { message } if message.contains("not worth it"))
        ),
        "{events:#?}"
    );
    server.push_matching(|r| !is_compaction(r), answer_turn(9));
    run_task(&mut handle, "after").await;
    shut_down(handle).await;
    let last = main_requests(&server).pop().unwrap();
    let body = String::from_utf8_lossy(&last.raw_body).into_owned();
    assert!(
        body.contains("task 0") && !body.contains("a long summary"),
        "{body}"
    );
}
