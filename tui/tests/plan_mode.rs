//! Plan mode in the TUI (issue 14 item 17): Shift+Tab cycles default → auto-edit → plan →
//! default, tells the agent each time and shows the mode on the status line; a mode the agent
//! switched itself (leaving plan mode) shows there too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use corvid_protocol::{ApprovalMode, CoreEvent, Op};
use corvid_tui::app::{Action, App, TuiOptions};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use pretty_assertions::assert_eq;

fn app(mode: ApprovalMode) -> App {
    App::new(&TuiOptions {
        compact: false,
        model: "demo".into(),
        approval_mode: mode,
        no_color: false,
        transcript: Vec::new(),
        models: None,
        theme: corvid_core::settings::UiTheme::Dark,
        sessions: None,
    })
}

fn shift_tab(app: &mut App) -> Vec<Action> {
    app.on_key(
        KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT),
        Instant::now(),
    )
}

fn status_line(app: &App) -> String {
    let (lines, _) = app.view(Instant::now()).lines(100);
    lines.last().unwrap().to_string()
}

#[test]
fn shift_tab_cycles_through_plan_mode_and_the_status_line_shows_it() {
    let mut a = app(ApprovalMode::Default);
    let mut seen = Vec::new();
    for _ in 0..4 {
        let actions = shift_tab(&mut a);
        let [Action::Submit(Op::SetApprovalMode { mode })] = actions.as_slice() else {
            panic!("expected one mode switch, got {actions:?}");
        };
        seen.push(*mode);
        assert!(
            status_line(&a).starts_with(&format!("demo · {} · full", mode.as_str())),
            "{}",
            status_line(&a)
        );
    }
    assert_eq!(
        seen,
        vec![
            ApprovalMode::Auto,
            ApprovalMode::AutoEdit,
            ApprovalMode::Plan,
            ApprovalMode::Default
        ]
    );
}

#[test]
fn yolo_cycles_back_to_default_and_leaving_plan_mode_shows_on_the_status_line() {
    let mut a = app(ApprovalMode::Yolo);
    assert_eq!(
        shift_tab(&mut a),
        vec![Action::Submit(Op::SetApprovalMode {
            mode: ApprovalMode::Default
        })]
    );
    let mut a = app(ApprovalMode::Plan);
    assert!(status_line(&a).starts_with("demo · plan · full"));
    a.on_core_event(&CoreEvent::ApprovalModeChanged {
        mode: ApprovalMode::AutoEdit,
    });
    assert!(status_line(&a).starts_with("demo · auto-edit · full"));
}

#[test]
fn the_question_to_leave_plan_mode_says_what_each_answer_does() {
    let mut a = app(ApprovalMode::Plan);
    a.chat.on_event(&CoreEvent::TaskStarted {
        task_id: "t".into(),
        prompt: "plan it".into(),
    });
    a.chat.on_event(&CoreEvent::PermissionRequested {
        call_id: "p".into(),
        tool_name: "exit_plan_mode".into(),
        args: serde_json::json!({}),
        display: corvid_protocol::ToolDisplay {
            title: "Ready to code?".into(),
            kind: corvid_protocol::ToolKind::Think,
            locations: Vec::new(),
        },
        preview: corvid_protocol::ApprovalPreview::Text {
            text: "1. Split the loader".into(),
        },
        reason: None,
        always_scope: None,
        server: None,
    });
    let (lines, _) = a.view(Instant::now()).lines(100);
    let shown: String = lines.iter().map(|l| format!("{l}\n")).collect();
    for choice in [
        "y Yes, start working",
        "Yes, and auto-accept edits",
        "n No, keep planning",
    ] {
        assert!(shown.contains(choice), "{choice:?} missing:\n{shown}");
    }
    assert!(!shown.contains("Always allow"), "{shown}");
}
