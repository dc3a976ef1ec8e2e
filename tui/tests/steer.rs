//! Ctrl+S: a prompt typed while a task runs goes into it (`Op::Steer`), shows as waiting
//! until the model reads it, then as a prompt in the transcript; one never read comes back.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Instant;

use common::*;
use corvid_protocol::{ApprovalMode, CoreEvent, Op, StopReason};
use corvid_tui::app::{Action, App, TuiOptions};
use corvid_tui::cells::HistoryCell;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use pretty_assertions::assert_eq;

fn app() -> App {
    App::new(&TuiOptions {
        compact: false,
        model: "demo".into(),
        approval_mode: ApprovalMode::Default,
        no_color: false,
        transcript: Vec::new(),
        models: None,
        theme: corvid_core::settings::UiTheme::Dark,
        sessions: None,
    })
}

fn typed(app: &mut App, s: &str) {
    for c in s.chars() {
        app.on_key(
            KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE),
            Instant::now(),
        );
    }
}

fn ctrl_s(app: &mut App) -> Vec<Action> {
    app.on_key(
        KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL),
        Instant::now(),
    )
}

fn enter(app: &mut App) -> Vec<Action> {
    app.on_key(
        KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE),
        Instant::now(),
    )
}

/// An app whose model task for "first" is running.
fn running() -> App {
    let mut a = app();
    typed(&mut a, "first");
    enter(&mut a);
    a.on_core_event(&task_started("first"));
    a
}

fn steer(text: &str) -> Action {
    Action::Submit(Op::Steer {
        prompt: text.into(),
    })
}

fn finished(stop_reason: StopReason) -> CoreEvent {
    CoreEvent::TaskFinished {
        task_id: "t1".into(),
        stop_reason,
        error: None,
        pending_summaries: 0,
    }
}

#[test]
fn ctrl_s_sends_the_box_into_the_running_task_and_shows_it_waiting_until_read() {
    let mut a = running();
    typed(&mut a, "only the src folder");
    assert_eq!(ctrl_s(&mut a), vec![steer("only the src folder")]);
    assert!(a.composer.is_empty());
    let (lines, _) = a.view(Instant::now()).lines(80);
    assert!(
        lines.iter().any(|l| l
            .to_string()
            .starts_with("steering only the src folder · read after the running tools")),
        "{lines:#?}"
    );

    a.on_core_event(&CoreEvent::Steered {
        prompt: "only the src folder".into(),
    });
    assert!(a.steering.is_empty());
    assert_eq!(
        a.chat.transcript().last(),
        Some(&HistoryCell::UserPrompt("only the src folder".into()))
    );
    let (lines, _) = a.view(Instant::now()).lines(80);
    assert!(!lines.iter().any(|l| l.to_string().starts_with("steering")));
}

#[test]
fn ctrl_s_on_an_empty_box_sends_the_queued_prompt_into_the_task() {
    let mut a = running();
    typed(&mut a, "then the tests");
    assert_eq!(enter(&mut a), vec![]);
    assert_eq!(a.queued.as_deref(), Some("then the tests"));
    assert_eq!(ctrl_s(&mut a), vec![steer("then the tests")]);
    assert_eq!(a.queued, None);
    assert_eq!(a.steering, vec!["then the tests".to_string()]);
}

#[test]
fn a_prompt_the_cancelled_task_never_read_goes_back_into_the_box() {
    let mut a = running();
    typed(&mut a, "and the docs");
    ctrl_s(&mut a);
    a.on_core_event(&finished(StopReason::Cancelled));
    assert_eq!(a.composer.text(), "and the docs");
    assert!(a.steering.is_empty());
}

#[test]
fn a_prompt_sent_as_the_task_ended_normally_waits_for_the_task_it_starts() {
    let mut a = running();
    typed(&mut a, "one more thing");
    ctrl_s(&mut a);
    a.on_core_event(&finished(StopReason::EndTurn));
    assert!(a.composer.is_empty(), "not put back: the core starts it");
    a.on_core_event(&task_started("one more thing"));
    assert!(a.steering.is_empty());
}

#[test]
fn ctrl_s_when_idle_sends_like_enter_and_commands_are_not_steered() {
    let mut a = app();
    typed(&mut a, "hello");
    assert_eq!(ctrl_s(&mut a), vec![Action::Submit(Op::user_turn("hello"))]);

    let mut a = running();
    typed(&mut a, "/stats");
    assert_eq!(ctrl_s(&mut a), vec![]);
    assert_eq!(a.composer.text(), "/stats", "left for enter to queue");
}

#[test]
fn ctrl_s_during_a_shell_command_sends_nothing() {
    let mut a = app();
    typed(&mut a, "!ls");
    enter(&mut a);
    a.on_core_event(&task_started("!ls"));
    typed(&mut a, "what now");
    assert_eq!(ctrl_s(&mut a), vec![]);
    assert_eq!(a.composer.text(), "what now");
}
