//! Ctrl+O: the transcript view shows the whole session with every diff and all tool output,
//! even for groups shown compact, scrolls with the keys and closes with Esc.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Instant;

use common::*;
use corvid_protocol::{ApprovalMode, CoreEvent, ToolOutput, ToolStatus};
use corvid_tui::app::{App, TuiOptions};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use insta::assert_snapshot;
use pretty_assertions::assert_eq;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn compact_app() -> App {
    let mut a = App::new(&TuiOptions {
        compact: true,
        model: "demo".into(),
        approval_mode: ApprovalMode::Default,
        no_color: false,
        transcript: Vec::new(),
        models: None,
        theme: corvid_core::settings::UiTheme::Dark,
        sessions: None,
    });
    a.screen_rows = 40;
    a
}

/// A compact session: a prompt, an edit with a diff and a command with seven output lines.
fn session(a: &mut App) {
    let edit = ToolOutput {
        text: "Edited src/lib.rs".into(),
        diffs: vec![sample_diff()],
        ..Default::default()
    };
    let events = vec![
        task_started("fix the build"),
        started("e1", "edit", "Edit src/lib.rs"),
        finished("e1", "edit", ToolStatus::Completed, edit),
        started("s1", "run_shell_command", "Run cargo test"),
        ok(
            "s1",
            "run_shell_command",
            "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\ntest result: ok",
        ),
        batch(&["e1", "s1"]),
        summary("Fixed and tested", &["e1", "s1"]),
        text("Done."),
        task_finished(0),
    ];
    for ev in &events {
        a.on_core_event(ev);
    }
}

fn press(a: &mut App, code: KeyCode, modifiers: KeyModifiers) {
    a.on_key(KeyEvent::new(code, modifiers), Instant::now());
}

fn drawn(a: &App) -> String {
    let view = a.view(Instant::now());
    let (lines, _) = view.lines(70);
    let h = u16::try_from(lines.len()).unwrap();
    let mut t = Terminal::new(TestBackend::new(70, h)).unwrap();
    t.draw(|f| {
        view.render(f.area(), f.buffer_mut());
    })
    .unwrap();
    t.backend().to_string()
}

#[test]
fn ctrl_o_shows_every_diff_and_all_output_of_a_group_shown_compact() {
    let mut a = compact_app();
    session(&mut a);
    let before = drawn(&a);
    assert!(!before.contains("more();"), "{before}");
    press(&mut a, KeyCode::Char('o'), KeyModifiers::CONTROL);
    let out = drawn(&a);
    assert!(out.contains("more();") && out.contains("line 1"), "{out}");
    assert_snapshot!(out);
}

#[test]
fn the_transcript_view_scrolls_and_esc_closes_it_back_to_the_prompt() {
    let mut a = compact_app();
    a.screen_rows = 6;
    session(&mut a);
    press(&mut a, KeyCode::Char('o'), KeyModifiers::CONTROL);
    let (bottom, _) = a.view(Instant::now()).lines(70);
    assert_eq!(bottom.len(), 6, "it fills the terminal");
    assert!(bottom[4].to_string().contains("Done."), "{bottom:#?}");
    press(&mut a, KeyCode::Home, KeyModifiers::NONE);
    let (top, _) = a.view(Instant::now()).lines(70);
    assert!(
        top[0].to_string().contains("fix the build")
            || top[1].to_string().contains("fix the build"),
        "{top:#?}"
    );
    assert!(
        top[5].to_string().starts_with("transcript · rows 1-5 of "),
        "{top:#?}"
    );
    // Keys scroll the view; they never reach the composer.
    press(&mut a, KeyCode::Char('x'), KeyModifiers::NONE);
    assert!(a.composer.is_empty());
    press(&mut a, KeyCode::Esc, KeyModifiers::NONE);
    assert!(a.transcript_view.is_none());
    let (lines, _) = a.view(Instant::now()).lines(70);
    assert!(
        lines
            .last()
            .unwrap()
            .to_string()
            .contains("ctrl+o transcript")
    );
}

#[test]
fn the_transcript_view_shows_the_live_group_of_a_running_task() {
    let mut a = compact_app();
    for ev in [
        task_started("look"),
        started("r1", "read_file", "Read a.txt"),
        ok("r1", "read_file", "alpha\nbeta"),
    ] {
        a.on_core_event(&ev);
    }
    press(&mut a, KeyCode::Char('o'), KeyModifiers::CONTROL);
    let out = drawn(&a);
    assert!(out.contains("Read a.txt") && out.contains("beta"), "{out}");
    let _: CoreEvent = task_finished(0);
}
