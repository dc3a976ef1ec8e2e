//! Test helpers shared by the core's integration tests: a scripted provider, fake tools, an
//! event collector and the SPEC §5.2 invariant checker.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod approvals;
pub mod fake_tools;
pub mod invariants;
pub mod openai_sse;
pub mod scripted;
pub mod settings_env;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use corvid_core::agent::{AgentConfig, AgentHandle};
use corvid_core::retry::RetryPolicy;
use corvid_protocol::{ApprovalDecision, ApprovalMode, CoreEvent, Op};
use corvid_providers::Provider;
use corvid_tools::{Tool, ToolRegistry};

/// A session config for tests: yolo unless changed, quick retries, summaries off.
pub fn test_config(provider: Arc<dyn Provider>, tools: Vec<Arc<dyn Tool>>) -> AgentConfig {
    AgentConfig {
        session_id: "test-session".into(),
        provider,
        model: "main-model".into(),
        fallback_model: None,
        max_output_tokens: Some(1000),
        system_prompt: "you are a test".into(),
        cwd: PathBuf::from("/tmp/corvid-test"),
        tools: ToolRegistry::new(tools),
        fs: Arc::new(fake_tools::NoFs),
        approval_mode: ApprovalMode::Yolo,
        retry: RetryPolicy {
            max_attempts: 3,
            initial_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
        },
        shell_timeout: Duration::from_secs(60),
        summaries: None,
        history: Vec::new(),
        policy: Default::default(),
        instructions: Default::default(),
    }
}

/// The config with a fallback model and room for the retries before falling back to it.
pub fn with_fallback(mut config: AgentConfig) -> AgentConfig {
    config.retry.max_attempts = 5;
    config.fallback_model = Some("fallback-model".into());
    config
}

/// Submits a user prompt, starting a task (or being refused while one runs).
pub fn prompt(handle: &AgentHandle, text: &str) {
    handle.submit(Op::user_turn(text)).unwrap();
}

/// Submits a prompt and reads the task it starts until it finishes.
pub async fn run_task(handle: &mut AgentHandle, text: &str) -> Vec<CoreEvent> {
    prompt(handle, text);
    collect_task(handle).await
}

/// Reads events until one matches, returning all read so far (that one included).
pub async fn read_until(
    handle: &mut AgentHandle,
    pred: impl Fn(&CoreEvent) -> bool,
) -> Vec<CoreEvent> {
    let mut events = Vec::new();
    loop {
        let ev = handle.next_event().await.unwrap();
        let hit = pred(&ev);
        events.push(ev);
        if hit {
            return events;
        }
    }
}

/// Reads events until one matches, cancels the task there and reads on until it finishes.
pub async fn cancel_when(
    handle: &mut AgentHandle,
    pred: impl Fn(&CoreEvent) -> bool,
) -> Vec<CoreEvent> {
    let mut events = read_until(handle, pred).await;
    handle.submit(Op::Cancel).unwrap();
    events.extend(collect_task(handle).await);
    events
}

/// Reads the current task until it finishes, answering each permission request with
/// `decide(call_id)` as soon as it is asked.
pub async fn collect_task_deciding(
    handle: &mut AgentHandle,
    decide: impl Fn(&str) -> ApprovalDecision,
) -> Vec<CoreEvent> {
    let mut events = Vec::new();
    loop {
        let ev = handle.next_event().await.unwrap();
        if let CoreEvent::PermissionRequested { call_id, .. } = &ev {
            handle
                .submit(Op::Approval {
                    call_id: call_id.clone(),
                    decision: decide(call_id),
                })
                .unwrap();
        }
        let done = matches!(ev, CoreEvent::TaskFinished { .. });
        events.push(ev);
        if done {
            return events;
        }
    }
}

/// Asserts the whole tool-card lifecycle of `events` (see [`lifecycle`]).
#[track_caller]
pub fn assert_lifecycle(events: &[CoreEvent], expected: &[&str]) {
    pretty_assertions::assert_eq!(lifecycle(events), expected);
}

/// Stops the agent and waits until it is gone, with everything it held (the session
/// recorder, and so the recording's lock): its event stream closes only then.
pub async fn shut_down(handle: AgentHandle) {
    let (ops, mut events) = handle.split();
    drop(ops);
    while events.next_event().await.is_ok() {}
}

/// Reads events until the current task finishes (that event included).
pub async fn collect_task(handle: &mut AgentHandle) -> Vec<CoreEvent> {
    let mut events = Vec::new();
    loop {
        let ev = handle
            .next_event()
            .await
            .expect("the agent closed before the task finished");
        let done = matches!(ev, CoreEvent::TaskFinished { .. });
        events.push(ev);
        if done {
            return events;
        }
    }
}

/// Each event's serialized `type` tag, for whole-value asserts on an event sequence.
pub fn event_types(events: &[CoreEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            serde_json::to_value(e).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// The events that matter for a tool card's lifecycle, as short strings (for whole-value asserts).
pub fn lifecycle(events: &[CoreEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|ev| match ev {
            CoreEvent::TaskStarted { .. } => Some("task_started".to_owned()),
            CoreEvent::TurnStarted { turn, model } => Some(format!("turn {turn} {model}")),
            CoreEvent::ToolPreparing { call_id, .. } => Some(format!("preparing {call_id}")),
            CoreEvent::ToolStarted {
                call_id,
                was_prepared,
                ..
            } => Some(format!("started {call_id} prepared={was_prepared}")),
            CoreEvent::PermissionRequested { call_id, .. } => Some(format!("asked {call_id}")),
            CoreEvent::PermissionResolved { call_id, decision } => {
                Some(format!("resolved {call_id} {decision:?}"))
            }
            CoreEvent::ToolFinished {
                call_id, status, ..
            } => Some(format!("finished {call_id} {status:?}")),
            CoreEvent::PreparationDiscarded {
                call_id, reason, ..
            } => Some(format!("discarded {call_id} {reason:?}")),
            CoreEvent::AttemptRetried { attempt, error, .. } => Some(format!(
                "retried attempt {attempt} ({})",
                error.kind.as_str()
            )),
            CoreEvent::ModelFellBack { from, to, .. } => Some(format!("fell back {from} -> {to}")),
            CoreEvent::BatchCompleted { call_ids } => Some(format!("batch {}", call_ids.join(","))),
            CoreEvent::Plan { todos } => Some(format!("plan {}", todos.len())),
            CoreEvent::TaskFinished { stop_reason, .. } => {
                Some(format!("task_finished {stop_reason:?}"))
            }
            _ => None,
        })
        .collect()
}
