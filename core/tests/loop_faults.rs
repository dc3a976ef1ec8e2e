//! Retry, fallback and cancellation with a scripted provider: abandoned attempts leave
//! nothing behind and their calls never run (SPEC §3.4, §5.2).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use std::sync::Arc;

use common::fake_tools::{ExecLog, FakeTool};
use common::invariants::check_invariants;
use common::scripted::*;
use common::{assert_lifecycle, cancel_when, prompt, run_task, test_config, with_fallback};
use corvid_core::agent::{AgentConfig, spawn_agent};
use corvid_protocol::{ApprovalMode, CoreEvent, ErrorKind, FinishReason, Part, StopReason};
use pretty_assertions::assert_eq;
use serde_json::json;

fn config(provider: &ScriptedProvider, log: &ExecLog) -> AgentConfig {
    test_config(
        Arc::new(provider.clone()),
        vec![
            FakeTool::reader("read", 10, log),
            FakeTool::shell("shell", log),
        ],
    )
}

fn final_error(events: &[CoreEvent]) -> (StopReason, Option<ErrorKind>) {
    match events.last() {
        Some(CoreEvent::TaskFinished {
            stop_reason, error, ..
        }) => (*stop_reason, error.as_ref().map(|e| e.kind)),
        other => panic!("not a finished task: {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_stream_cut_mid_arguments_discards_the_card_backs_off_and_runs_only_the_retry() {
    let log = ExecLog::default();
    let provider = ScriptedProvider::new(vec![
        vec![preparing("a", "read"), delay_ms(50)],
        vec![
            preparing("b", "read"),
            call("b", "read", json!({"tag": "b"})),
            finish(FinishReason::ToolCalls),
        ],
        answer("done"),
    ]);
    let mut handle = spawn_agent(config(&provider, &log));
    let started = tokio::time::Instant::now();
    let events = run_task(&mut handle, "go").await;
    check_invariants(&events, &[]).unwrap();
    assert_lifecycle(
        &events,
        &[
            "task_started",
            "turn 1 main-model",
            "preparing a",
            "discarded a Retry",
            "retried attempt 1 (stream_truncated)",
            "preparing b",
            "started b prepared=true",
            "finished b Completed",
            "batch b",
            "turn 2 main-model",
            "task_finished EndTurn",
        ],
    );
    let delay = events.iter().find_map(|e| match e {
        CoreEvent::AttemptRetried { delay_ms, .. } => Some(*delay_ms),
        _ => None,
    });
    let delay = delay.unwrap();
    assert!(
        (80..=120).contains(&delay),
        "backoff with jitter around 100 ms: {delay}"
    );
    assert!(
        started.elapsed().as_millis() as u64 >= 50 + delay,
        "the retry waited for the backoff"
    );
    assert_eq!(log.tags(), vec!["b"]);
}

#[tokio::test(start_paused = true)]
async fn a_cut_after_complete_arguments_still_discards_and_never_runs_the_call() {
    let log = ExecLog::default();
    let provider = ScriptedProvider::new(vec![
        vec![
            preparing("a", "read"),
            call("a", "read", json!({"tag": "a"})),
            call("n", "read", json!({"tag": "n"})),
            fail(ErrorKind::StreamTruncated, "connection reset"),
        ],
        answer("nothing to do"),
    ]);
    let mut handle = spawn_agent(config(&provider, &log));
    let events = run_task(&mut handle, "go").await;
    check_invariants(&events, &[]).unwrap();
    assert_lifecycle(
        &events,
        &[
            "task_started",
            "turn 1 main-model",
            "preparing a",
            "discarded a Retry",
            "retried attempt 1 (stream_truncated)",
            "task_finished EndTurn",
        ],
    );
    assert!(log.all().is_empty());
    // The retry's request does not carry the abandoned attempt's calls.
    assert_eq!(provider.requests()[1].messages.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn persistent_rate_limits_fall_back_to_the_fallback_model_and_announce_it() {
    let log = ExecLog::default();
    let provider = ScriptedProvider::new(vec![
        vec![fail_retry_after(ErrorKind::RateLimited, "quota", 0)],
        vec![fail_retry_after(ErrorKind::RateLimited, "quota", 0)],
        vec![
            preparing("p", "read"),
            fail(ErrorKind::Overloaded, "overloaded"),
        ],
        answer("from the fallback"),
    ]);
    let mut handle = spawn_agent(with_fallback(config(&provider, &log)));
    let events = run_task(&mut handle, "go").await;
    check_invariants(&events, &[]).unwrap();
    assert_lifecycle(
        &events,
        &[
            "task_started",
            "turn 1 main-model",
            "retried attempt 1 (rate_limited)",
            "retried attempt 2 (rate_limited)",
            "preparing p",
            "discarded p Fallback",
            "fell back main-model -> fallback-model",
            "task_finished EndTurn",
        ],
    );
    let models: Vec<String> = provider
        .requests()
        .iter()
        .map(|r| r.model.clone())
        .collect();
    assert_eq!(
        models,
        vec!["main-model", "main-model", "main-model", "fallback-model"]
    );
    // retry-after 0 is honoured: no backoff delay reported.
    let delays: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            CoreEvent::AttemptRetried { delay_ms, .. } => Some(*delay_ms),
            _ => None,
        })
        .collect();
    assert_eq!(delays, vec![0, 0]);
}

#[tokio::test(start_paused = true)]
async fn without_a_fallback_persistent_errors_end_the_task_with_a_clear_error() {
    let log = ExecLog::default();
    let provider = ScriptedProvider::new(vec![
        vec![fail(ErrorKind::Overloaded, "the model is overloaded")],
        vec![fail(ErrorKind::Overloaded, "the model is overloaded")],
        vec![
            preparing("p", "read"),
            fail(ErrorKind::Overloaded, "the model is overloaded"),
        ],
    ]);
    let mut handle = spawn_agent(config(&provider, &log));
    let events = run_task(&mut handle, "go").await;
    check_invariants(&events, &[]).unwrap();
    assert_lifecycle(
        &events,
        &[
            "task_started",
            "turn 1 main-model",
            "retried attempt 1 (overloaded)",
            "retried attempt 2 (overloaded)",
            "preparing p",
            "discarded p StreamError",
            "task_finished Error",
        ],
    );
    match events.last() {
        Some(CoreEvent::TaskFinished {
            error: Some(error), ..
        }) => {
            assert_eq!(
                error.to_string(),
                "overloaded error: the model is overloaded"
            )
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn non_retryable_errors_end_the_task_at_once() {
    let log = ExecLog::default();
    let provider = ScriptedProvider::new(vec![vec![
        preparing("p", "read"),
        fail(ErrorKind::Auth, "bad key"),
    ]]);
    let mut handle = spawn_agent(config(&provider, &log));
    let events = run_task(&mut handle, "go").await;
    check_invariants(&events, &[]).unwrap();
    assert_lifecycle(
        &events,
        &[
            "task_started",
            "turn 1 main-model",
            "preparing p",
            "discarded p StreamError",
            "task_finished Error",
        ],
    );
    assert_eq!(
        final_error(&events),
        (StopReason::Error, Some(ErrorKind::Auth))
    );
    assert_eq!(provider.requests().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn cancel_while_arguments_stream_discards_the_card_and_ends_cancelled() {
    let log = ExecLog::default();
    let provider = ScriptedProvider::new(vec![vec![
        text("Reading"),
        preparing("a", "read"),
        Step::Hang,
    ]]);
    let mut handle = spawn_agent(config(&provider, &log));
    prompt(&handle, "go");
    let events = cancel_when(&mut handle, |e| {
        matches!(e, CoreEvent::ToolPreparing { .. })
    })
    .await;
    check_invariants(&events, &[]).unwrap();
    assert_lifecycle(
        &events,
        &[
            "task_started",
            "turn 1 main-model",
            "preparing a",
            "discarded a Cancelled",
            "task_finished Cancelled",
        ],
    );
    assert!(log.all().is_empty());
    // The partial text is kept so the next request shows what the user saw.
    let _ = run_task(&mut handle, "again").await;
    let texts: Vec<String> = provider.requests()[1]
        .messages
        .iter()
        .map(|m| m.text())
        .collect();
    assert_eq!(texts, vec!["go", "Reading", "again"]);
}

#[tokio::test(start_paused = true)]
async fn cancel_while_a_shell_command_runs_stops_it_and_ends_cancelled() {
    let log = ExecLog::default();
    let provider = ScriptedProvider::new(vec![
        vec![
            preparing("s", "shell"),
            call("s", "shell", json!({"tag": "s"})),
            call("later", "read", json!({"tag": "later"})),
            finish(FinishReason::ToolCalls),
        ],
        answer("ok"),
    ]);
    let mut handle = spawn_agent(config(&provider, &log));
    prompt(&handle, "go");
    let events = cancel_when(&mut handle, |e| matches!(e, CoreEvent::ToolStarted { .. })).await;
    check_invariants(&events, &[]).unwrap();
    assert_lifecycle(
        &events,
        &[
            "task_started",
            "turn 1 main-model",
            "preparing s",
            "started s prepared=true",
            "finished s Failed",
            "batch s",
            "task_finished Cancelled",
        ],
    );
    let runs = log.all();
    assert_eq!(runs.len(), 1);
    assert!(runs[0].cancelled);
    // Every call of the assistant message has a result in history, also the one that never ran.
    let _ = run_task(&mut handle, "again").await;
    let results: Vec<(String, bool)> = provider.requests()[1]
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolResult(r) => Some((r.call_id.clone(), r.is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        vec![("s".to_owned(), true), ("later".to_owned(), true)]
    );
}

#[tokio::test(start_paused = true)]
async fn cancel_while_waiting_for_approval_resolves_it_as_cancelled() {
    let log = ExecLog::default();
    let provider = ScriptedProvider::new(vec![vec![
        preparing("s", "shell"),
        call("s", "shell", json!({"tag": "s"})),
        finish(FinishReason::ToolCalls),
    ]]);
    let mut config = config(&provider, &log);
    config.approval_mode = ApprovalMode::AutoEdit;
    let mut handle = spawn_agent(config);
    prompt(&handle, "go");
    let events = cancel_when(&mut handle, |e| {
        matches!(e, CoreEvent::PermissionRequested { .. })
    })
    .await;
    check_invariants(&events, &[]).unwrap();
    assert_lifecycle(
        &events,
        &[
            "task_started",
            "turn 1 main-model",
            "preparing s",
            "asked s",
            "resolved s Cancelled",
            "finished s Failed",
            "batch s",
            "task_finished Cancelled",
        ],
    );
    assert!(log.all().is_empty());
}

#[tokio::test(start_paused = true)]
async fn cancel_during_backoff_ends_the_task_without_another_attempt() {
    let log = ExecLog::default();
    let provider = ScriptedProvider::new(vec![vec![fail_retry_after(
        ErrorKind::RateLimited,
        "quota",
        60_000,
    )]]);
    let mut handle = spawn_agent(config(&provider, &log));
    prompt(&handle, "go");
    let events = cancel_when(&mut handle, |e| {
        matches!(e, CoreEvent::AttemptRetried { .. })
    })
    .await;
    check_invariants(&events, &[]).unwrap();
    assert_eq!(final_error(&events), (StopReason::Cancelled, None));
    assert_eq!(provider.requests().len(), 1);
}
