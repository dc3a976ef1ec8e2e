//! The SPEC §5.2 invariant checker must catch each kind of violation (a checker that never
//! fails would make the fault-injection property meaningless).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use common::invariants::check_invariants;
use corvid_protocol::{
    ApprovalDecision, ApprovalPreview, CoreEvent, DiscardReason, ErrorInfo, ErrorKind, Provenance,
    StopReason, ToolDisplay, ToolKind, ToolOutput, ToolStatus,
};
use serde_json::json;

fn task_started() -> CoreEvent {
    CoreEvent::TaskStarted {
        task_id: "t".into(),
        prompt: "p".into(),
    }
}
fn turn() -> CoreEvent {
    CoreEvent::TurnStarted {
        turn: 1,
        model: "m".into(),
    }
}
fn preparing(id: &str, name: &str) -> CoreEvent {
    CoreEvent::ToolPreparing {
        call_id: id.into(),
        tool_name: name.into(),
        display_name: name.into(),
        kind: ToolKind::Read,
        provenance: Provenance::Builtin,
    }
}
fn display() -> ToolDisplay {
    ToolDisplay {
        title: "Read x".into(),
        kind: ToolKind::Read,
        locations: vec![],
    }
}
fn started(id: &str, was_prepared: bool) -> CoreEvent {
    CoreEvent::ToolStarted {
        call_id: id.into(),
        tool_name: "read".into(),
        args: json!({"x": 1}),
        display: display(),
        provenance: Provenance::Builtin,
        was_prepared,
    }
}
fn finished(id: &str) -> CoreEvent {
    CoreEvent::ToolFinished {
        call_id: id.into(),
        tool_name: "read".into(),
        status: ToolStatus::Completed,
        output: ToolOutput::text("ok"),
        provenance: Provenance::Builtin,
    }
}
fn discarded(id: &str) -> CoreEvent {
    CoreEvent::PreparationDiscarded {
        call_id: id.into(),
        tool_name: "read".into(),
        reason: DiscardReason::Retry,
        provenance: Provenance::Builtin,
    }
}
fn retried() -> CoreEvent {
    CoreEvent::AttemptRetried {
        attempt: 1,
        max_attempts: 3,
        delay_ms: 0,
        error: ErrorInfo::new(ErrorKind::Server, "x"),
    }
}
fn task_finished() -> CoreEvent {
    CoreEvent::TaskFinished {
        task_id: "t".into(),
        stop_reason: StopReason::EndTurn,
        error: None,
        pending_summaries: 0,
    }
}

fn check(events: Vec<CoreEvent>) -> Result<(), String> {
    check_invariants(&events, &["todo_write"])
}

#[test]
fn a_clean_lifecycle_passes() {
    let events = vec![
        task_started(),
        turn(),
        preparing("a", "read"),
        discarded("a"),
        retried(),
        preparing("a", "read"),
        CoreEvent::PermissionRequested {
            call_id: "a".into(),
            tool_name: "read".into(),
            args: json!({}),
            display: display(),
            preview: ApprovalPreview::Text { text: "x".into() },
            reason: None,
            always_scope: None,
            server: None,
        },
        CoreEvent::PermissionResolved {
            call_id: "a".into(),
            decision: ApprovalDecision::AllowOnce,
        },
        started("a", true),
        finished("a"),
        started("b", false),
        finished("b"),
        task_finished(),
    ];
    check(events).unwrap();
}

#[test]
fn a_second_preparing_event_in_one_attempt_is_caught() {
    let events = vec![
        task_started(),
        turn(),
        preparing("a", "read"),
        discarded("a"),
        preparing("a", "read"),
        discarded("a"),
        task_finished(),
    ];
    assert!(check(events).unwrap_err().contains("second preparing"));
}

#[test]
fn a_preparing_card_for_a_suppressed_tool_is_caught() {
    let events = vec![
        task_started(),
        turn(),
        preparing("t", "todo_write"),
        discarded("t"),
        task_finished(),
    ];
    assert!(check(events).unwrap_err().contains("suppressed"));
}

#[test]
fn a_card_left_pending_when_the_task_ends_is_caught() {
    let events = vec![
        task_started(),
        turn(),
        preparing("a", "read"),
        task_finished(),
    ];
    assert!(check(events).unwrap_err().contains("pending"));
}

#[test]
fn a_discard_after_in_progress_is_caught() {
    let events = vec![
        task_started(),
        turn(),
        preparing("a", "read"),
        started("a", true),
        discarded("a"),
        task_finished(),
    ];
    assert!(check(events).unwrap_err().contains("in_progress"));
}

#[test]
fn a_retry_that_leaves_a_prepared_card_is_caught() {
    let events = vec![
        task_started(),
        turn(),
        preparing("a", "read"),
        retried(),
        task_finished(),
    ];
    assert!(check(events).unwrap_err().contains("abandoned attempt"));
}

#[test]
fn a_wrong_was_prepared_flag_is_caught() {
    let events = vec![
        task_started(),
        turn(),
        preparing("a", "read"),
        started("a", false),
        finished("a"),
        task_finished(),
    ];
    assert!(check(events).unwrap_err().contains("was_prepared"));
    let events = vec![
        task_started(),
        turn(),
        started("b", true),
        finished("b"),
        task_finished(),
    ];
    assert!(check(events).unwrap_err().contains("was_prepared"));
}

#[test]
fn a_finish_without_a_start_is_caught() {
    let events = vec![
        task_started(),
        turn(),
        preparing("a", "read"),
        finished("a"),
        task_finished(),
    ];
    assert!(check(events).unwrap_err().contains("finished from state"));
}

#[test]
fn a_task_that_never_finishes_is_caught() {
    let events = vec![task_started(), turn()];
    assert!(check(events).unwrap_err().contains("inside a task"));
}
