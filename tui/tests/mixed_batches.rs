//! A batch whose label names only some of its calls (the core leaves `todo_write` and rejected
//! calls out of a summary's ids) still gets that label: the `●` line in full mode, the
//! labelled header in compact mode.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use std::time::Instant;

use common::*;
use corvid_protocol::{
    ApprovalDecision, ApprovalMode, ApprovalPreview, CoreEvent, Todo, TodoStatus, ToolStatus,
};
use corvid_tui::app::{App, TuiOptions};
use pretty_assertions::assert_eq;

/// Every terminal row (scrollback and screen) after the UI applied `events` live.
fn shown_live(compact: bool, events: &[CoreEvent]) -> Vec<String> {
    let term = VtTerm::new(24, 80);
    let mut screen = term.screen(false);
    let mut app = App::new(&TuiOptions {
        compact,
        model: "demo".into(),
        approval_mode: ApprovalMode::Default,
        no_color: false,
        transcript: Vec::new(),
        models: None,
        theme: corvid_core::settings::UiTheme::Dark,
        sessions: None,
    });
    for ev in events {
        app.on_core_event(ev);
        screen.frame(&app, Instant::now()).unwrap();
    }
    term.all_rows()
}

fn count(rows: &[String], needle: &str) -> usize {
    rows.iter().filter(|r| r.contains(needle)).count()
}

/// `read_file` and `todo_write` in one batch, as the core emits it: no card for the plan
/// call, and a label whose ids leave it out.
fn read_and_plan_batch() -> Vec<CoreEvent> {
    vec![
        task_started("Plan the config work"),
        preparing("r1", "read_file", "ReadFile"),
        started("r1", "read_file", "Read src/config.rs"),
        CoreEvent::Plan {
            todos: vec![Todo {
                id: "1".into(),
                content: "Split the loader".into(),
                status: TodoStatus::Pending,
            }],
        },
        ok("r1", "read_file", "a\nb"),
        batch(&["r1", "t1"]),
        summary("Read the config and planned", &["r1"]),
        text("I read it and made a plan.\n\n"),
        task_finished(0),
    ]
}

/// A read that runs and a shell call the user rejects, in one batch; the label names the read.
fn batch_with_a_rejected_call() -> Vec<CoreEvent> {
    vec![
        task_started("Look and clean"),
        started("r1", "read_file", "Read src/config.rs"),
        permission(
            "s1",
            "run_shell_command",
            "Run rm -rf build",
            ApprovalPreview::Command {
                command: "rm -rf build".into(),
            },
        ),
        CoreEvent::PermissionResolved {
            call_id: "s1".into(),
            decision: ApprovalDecision::RejectOnce,
        },
        finished(
            "s1",
            "run_shell_command",
            ToolStatus::Failed,
            output(
                "The user rejected this `run_shell_command` call; it did not run. Do not retry it \
                 as is; ask the user how to proceed or take another approach.",
            ),
        ),
        ok("r1", "read_file", "a\nb"),
        batch(&["r1", "s1"]),
        summary("Read the config", &["r1"]),
        text("I did not clean.\n\n"),
        task_finished(0),
    ]
}

#[test]
fn a_read_and_plan_batch_shows_its_label_line_in_full_mode() {
    let rows = shown_live(false, &read_and_plan_batch());
    assert_eq!(
        count(&rows, "● Read the config and planned"),
        1,
        "{rows:#?}"
    );
    assert_eq!(count(&rows, "  ✓ Read src/config.rs"), 1, "{rows:#?}");
}

#[test]
fn a_read_and_plan_batch_shows_its_labelled_header_in_compact_mode() {
    let rows = shown_live(true, &read_and_plan_batch());
    assert_eq!(
        count(&rows, "✓ Read the config and planned · 1 tool"),
        1,
        "{rows:#?}"
    );
    assert_eq!(count(&rows, "Tool × "), 0, "{rows:#?}");
    assert_eq!(count(&rows, "●"), 0, "{rows:#?}");
}

#[test]
fn a_batch_with_a_rejected_call_shows_its_label_line_in_full_mode() {
    let rows = shown_live(false, &batch_with_a_rejected_call());
    assert_eq!(count(&rows, "● Read the config"), 1, "{rows:#?}");
}

#[test]
fn a_batch_with_a_rejected_call_shows_its_labelled_header_in_compact_mode() {
    let rows = shown_live(true, &batch_with_a_rejected_call());
    assert_eq!(count(&rows, "Read the config · 2 tools"), 1, "{rows:#?}");
    assert_eq!(count(&rows, "Tool × "), 0, "{rows:#?}");
    assert_eq!(count(&rows, "●"), 0, "{rows:#?}");
}

#[test]
fn a_label_of_calls_outside_the_last_batch_is_still_stale() {
    let mut events = read_and_plan_batch();
    events.insert(6, summary("Read something else", &["r1", "x9"]));
    assert!(matches!(events[5], CoreEvent::BatchCompleted { .. }));
    let rows = shown_live(false, &events);
    assert_eq!(count(&rows, "Read something else"), 0, "{rows:#?}");
    assert_eq!(
        count(&rows, "● Read the config and planned"),
        1,
        "{rows:#?}"
    );
}
