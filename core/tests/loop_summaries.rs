//! The tool-use summary trigger (SPEC §7.2): requested in the background after a batch,
//! never delaying the next turn; stale or cancelled summaries dropped; every pending summary
//! settles exactly once, also after the task finished.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use std::sync::Arc;

use common::fake_tools::{ExecLog, FakeTool};
use common::invariants::check_invariants;
use common::scripted::*;
use common::{cancel_when, prompt, run_task, test_config};
use corvid_core::agent::{AgentHandle, spawn_agent};
use corvid_core::summary::SummaryConfig;
use corvid_protocol::{CoreEvent, FinishReason, SUMMARY_PROMPT_ID, StopReason};
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio::sync::Notify;

fn start(main: &ScriptedProvider, fast: &ScriptedProvider, log: &ExecLog) -> AgentHandle {
    let mut config = test_config(
        Arc::new(main.clone()),
        vec![FakeTool::reader("read", 5, log), FakeTool::todo(log)],
    );
    config.summaries = Some(SummaryConfig {
        provider: Arc::new(fast.clone()),
        model: "fast-model".into(),
    });
    spawn_agent(config)
}

fn label(text_: &str, gate: Option<&Arc<Notify>>) -> Vec<Step> {
    let mut steps = Vec::new();
    if let Some(gate) = gate {
        steps.push(Step::Wait(gate.clone()));
    }
    steps.extend([text(text_), usage(30, 4), finish(FinishReason::Stop)]);
    steps
}

/// The summary-related events, as short strings.
fn summaries(events: &[CoreEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|ev| match ev {
            CoreEvent::ToolUseSummary {
                summary,
                preceding_tool_use_ids,
            } => Some(format!(
                "summary {summary:?} {}",
                preceding_tool_use_ids.join(",")
            )),
            CoreEvent::SummaryDropped {
                preceding_tool_use_ids,
                reason,
            } => Some(format!(
                "dropped {} ({reason})",
                preceding_tool_use_ids.join(",")
            )),
            CoreEvent::Usage { prompt_id, usage } if prompt_id == SUMMARY_PROMPT_ID => {
                Some(format!("summary usage {}", usage.input_tokens))
            }
            CoreEvent::TaskFinished {
                pending_summaries, ..
            } => Some(format!("task_finished pending={pending_summaries}")),
            CoreEvent::BatchCompleted { call_ids } => Some(format!("batch {}", call_ids.join(","))),
            _ => None,
        })
        .collect()
}

async fn next_n(handle: &mut AgentHandle, n: usize) -> Vec<CoreEvent> {
    let mut events = Vec::new();
    for _ in 0..n {
        events.push(handle.next_event().await.unwrap());
    }
    events
}

#[tokio::test(start_paused = true)]
async fn a_slow_summary_never_delays_the_next_turn_and_settles_after_the_task() {
    let log = ExecLog::default();
    let gate = Arc::new(Notify::new());
    let main = ScriptedProvider::new(vec![
        vec![
            text("I will read both files."),
            call("a", "read", json!({"tag": "a"})),
            call("b", "read", json!({"tag": "b"})),
            finish(FinishReason::ToolCalls),
        ],
        answer("done"),
    ]);
    let fast = ScriptedProvider::new(vec![label("Read both files", Some(&gate))]);
    let mut handle = start(&main, &fast, &log);
    let mut events = run_task(&mut handle, "go").await;
    assert_eq!(
        main.requests().len(),
        2,
        "the next turn went out while the summary was running"
    );
    gate.notify_one();
    events.extend(next_n(&mut handle, 2).await);
    check_invariants(&events, &["todo_write"]).unwrap();
    assert_eq!(
        summaries(&events),
        vec![
            "batch a,b",
            "task_finished pending=1",
            "summary usage 30",
            "summary \"Read both files\" a,b",
        ]
    );
    let request = &fast.requests()[0];
    assert_eq!(request.model, "fast-model");
    assert!(request.tools.is_empty());
    assert!(
        request.messages[0]
            .text()
            .contains("I will read both files.")
    );
}

#[tokio::test(start_paused = true)]
async fn a_summary_that_returns_after_a_later_batch_is_dropped_as_stale() {
    let log = ExecLog::default();
    let gate = Arc::new(Notify::new());
    let main = ScriptedProvider::new(vec![
        vec![
            call("a", "read", json!({"tag": "a"})),
            finish(FinishReason::ToolCalls),
        ],
        vec![
            call("b", "read", json!({"tag": "b"})),
            finish(FinishReason::ToolCalls),
        ],
        // Slow enough for the second summary to come back before the task ends.
        vec![delay_ms(100), text("done"), finish(FinishReason::Stop)],
    ]);
    let fast = ScriptedProvider::new(vec![
        label("First label", Some(&gate)),
        label("Second label", None),
    ]);
    let mut handle = start(&main, &fast, &log);
    let mut events = run_task(&mut handle, "go").await;
    gate.notify_one();
    events.extend(next_n(&mut handle, 2).await);
    check_invariants(&events, &["todo_write"]).unwrap();
    assert_eq!(
        summaries(&events),
        vec![
            "batch a",
            "batch b",
            "summary usage 30",
            "summary \"Second label\" b",
            "task_finished pending=1",
            "summary usage 30",
            "dropped a (stale: a later batch already completed)",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_task_drops_its_pending_summaries() {
    let log = ExecLog::default();
    let main = ScriptedProvider::new(vec![
        vec![
            call("a", "read", json!({"tag": "a"})),
            finish(FinishReason::ToolCalls),
        ],
        vec![text("thinking"), Step::Hang],
    ]);
    let fast = ScriptedProvider::new(vec![vec![Step::Hang]]);
    let mut handle = start(&main, &fast, &log);
    prompt(&handle, "go");
    let mut events = cancel_when(&mut handle, |e| matches!(e, CoreEvent::TextDelta { .. })).await;
    let pending = match events.last() {
        Some(CoreEvent::TaskFinished {
            stop_reason: StopReason::Cancelled,
            pending_summaries,
            ..
        }) => *pending_summaries,
        other => panic!("{other:?}"),
    };
    events.extend(next_n(&mut handle, pending as usize).await);
    check_invariants(&events, &["todo_write"]).unwrap();
    let settled: Vec<String> = summaries(&events)
        .into_iter()
        .filter(|s| s.starts_with("dropped") || s.starts_with("summary"))
        .collect();
    assert_eq!(settled, vec!["dropped a (the task was cancelled)"]);
}

#[tokio::test(start_paused = true)]
async fn plans_and_failed_batches_are_not_summarised() {
    let log = ExecLog::default();
    let main = ScriptedProvider::new(vec![
        vec![
            call("t", "todo_write", json!({"tag": "plan"})),
            finish(FinishReason::ToolCalls),
        ],
        vec![
            call("u", "unknown_tool", json!({})),
            finish(FinishReason::ToolCalls),
        ],
        answer("done"),
    ]);
    let fast = ScriptedProvider::new(vec![]);
    let mut handle = start(&main, &fast, &log);
    let events = run_task(&mut handle, "go").await;
    check_invariants(&events, &["todo_write"]).unwrap();
    assert_eq!(
        summaries(&events),
        vec!["batch t", "batch u", "task_finished pending=0"]
    );
    assert!(fast.requests().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_plan_update_after_a_batch_does_not_make_its_label_stale() {
    let log = ExecLog::default();
    let gate = Arc::new(Notify::new());
    let main = ScriptedProvider::new(vec![
        vec![
            call("a", "read", json!({"tag": "a"})),
            finish(FinishReason::ToolCalls),
        ],
        vec![
            call("t", "todo_write", json!({"tag": "plan"})),
            finish(FinishReason::ToolCalls),
        ],
        answer("done"),
    ]);
    let fast = ScriptedProvider::new(vec![label("Read a", Some(&gate))]);
    let mut handle = start(&main, &fast, &log);
    let mut events = run_task(&mut handle, "go").await;
    gate.notify_one();
    events.extend(next_n(&mut handle, 2).await);
    check_invariants(&events, &["todo_write"]).unwrap();
    assert_eq!(
        summaries(&events),
        vec![
            "batch a",
            "batch t",
            "task_finished pending=1",
            "summary usage 30",
            "summary \"Read a\" a",
        ]
    );
}
