//! Keys and slash commands: what the app sends to the agent and how its state changes.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use std::time::{Duration, Instant};

use common::*;
use corvid_protocol::{ApprovalDecision, ApprovalMode, ApprovalPreview, CoreEvent, Op, Usage};
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
    })
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn typed(app: &mut App, s: &str) {
    for c in s.chars() {
        app.on_key(key(KeyCode::Char(c)), Instant::now());
    }
}

#[test]
fn enter_sends_the_prompt_and_shift_enter_or_ctrl_j_insert_newlines() {
    let mut a = app();
    typed(&mut a, "one");
    a.on_key(
        KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT),
        Instant::now(),
    );
    typed(&mut a, "two");
    a.on_key(ctrl('j'), Instant::now());
    typed(&mut a, "three");
    let actions = a.on_key(key(KeyCode::Enter), Instant::now());
    assert_eq!(
        actions,
        vec![Action::Submit(Op::UserTurn {
            prompt: "one\ntwo\nthree".into()
        })]
    );
    assert!(a.composer.is_empty());
    a.on_key(key(KeyCode::Up), Instant::now());
    assert_eq!(a.composer.text(), "one\ntwo\nthree");
}

#[test]
fn esc_and_ctrl_c_cancel_a_running_task() {
    let mut a = app();
    a.on_core_event(&task_started("go"));
    assert_eq!(
        a.on_key(key(KeyCode::Esc), Instant::now()),
        vec![Action::Submit(Op::Cancel)]
    );
    assert_eq!(
        a.on_key(ctrl('c'), Instant::now()),
        vec![Action::Submit(Op::Cancel)]
    );
}

#[test]
fn ctrl_c_twice_on_an_idle_prompt_exits_but_not_when_too_slow() {
    let mut a = app();
    let t0 = Instant::now();
    assert_eq!(a.on_key(ctrl('c'), t0), vec![]);
    assert_eq!(a.on_key(ctrl('c'), t0 + Duration::from_secs(5)), vec![]);
    assert_eq!(
        a.on_key(ctrl('c'), t0 + Duration::from_secs(6)),
        vec![Action::Quit]
    );
}

#[test]
fn ctrl_o_and_slash_compact_toggle_compact_mode() {
    let mut a = app();
    a.on_key(ctrl('o'), Instant::now());
    assert!(a.chat.compact);
    typed(&mut a, "/compact");
    a.on_key(key(KeyCode::Enter), Instant::now());
    assert!(!a.chat.compact);
}

#[test]
fn approval_keys_answer_the_pending_request() {
    let mut a = app();
    a.on_core_event(&task_started("go"));
    a.on_core_event(&permission(
        "s1",
        "run_shell_command",
        "Run ls",
        ApprovalPreview::Command {
            command: "ls".into(),
        },
    ));
    assert_eq!(
        a.on_key(key(KeyCode::Char('a')), Instant::now()),
        vec![Action::Submit(Op::Approval {
            call_id: "s1".into(),
            decision: ApprovalDecision::AllowAlways
        })]
    );
    a.on_key(key(KeyCode::Right), Instant::now());
    a.on_key(key(KeyCode::Right), Instant::now());
    assert_eq!(
        a.on_key(key(KeyCode::Enter), Instant::now()),
        vec![Action::Submit(Op::Approval {
            call_id: "s1".into(),
            decision: ApprovalDecision::RejectOnce
        })]
    );
}

#[test]
fn slash_model_switches_the_model_and_slash_quit_exits() {
    let mut a = app();
    assert_eq!(
        a.command("/model big-model"),
        vec![Action::Submit(Op::SetModel {
            model: "big-model".into()
        })]
    );
    assert_eq!(a.status.model, "big-model");
    assert_eq!(a.command("/quit"), vec![Action::Quit]);
    assert_eq!(a.command("/clear"), vec![Action::ClearScreen]);
    assert!(a.chat.transcript().is_empty());
}

#[test]
fn slash_stats_reports_usage_per_prompt_id_turns_and_tool_calls() {
    let mut a = app();
    let usage = |i, o| Usage {
        input_tokens: i,
        output_tokens: o,
        total_tokens: i + o,
        ..Default::default()
    };
    for ev in [
        task_started("go"),
        CoreEvent::TurnStarted {
            turn: 1,
            model: "demo".into(),
        },
        CoreEvent::Usage {
            prompt_id: "main".into(),
            usage: usage(100, 20),
        },
        ok("a", "read_file", "x"),
        CoreEvent::Usage {
            prompt_id: "tool_use_summary_generation".into(),
            usage: usage(50, 5),
        },
    ] {
        a.on_core_event(&ev);
    }
    a.command("/stats");
    let Some(HistoryCell::Notice(_, text)) = a.chat.transcript().last() else {
        panic!("no stats notice");
    };
    assert_eq!(
        text,
        "Session stats\nturns 1 · tool calls 1 (1 completed, 0 failed)\n\
         main: input 100 (cached 0) · output 20 (reasoning 0) · total 120\n\
         tool_use_summary_generation: input 50 (cached 0) · output 5 (reasoning 0) · total 55"
    );
}
