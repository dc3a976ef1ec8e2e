//! `/branch [N]` (issue 30): the whole session forks at once; from before turn N the
//! preview of restoring that turn's files comes first, under the rewind's conflict rules.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use std::sync::Arc;
use std::time::Instant;

use common::settle_previews;
use corvid_core::checkpoints::{CheckpointSettings, SessionCheckpoints};
use corvid_protocol::{ApprovalMode, RewindReport};
use corvid_tui::app::{Action, App, TuiOptions};
use corvid_tui::cells::HistoryCell;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use insta::assert_snapshot;
use pretty_assertions::assert_eq;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn app() -> App {
    App::new(&TuiOptions {
        compact: false,
        model: "demo".into(),
        approval_mode: ApprovalMode::Default,
        no_color: false,
        transcript: Vec::new(),
        sessions: None,
        models: None,
        theme: corvid_core::settings::UiTheme::Dark,
    })
}

/// A key press, with any preview it asks for computed at once (see `settle_previews`).
fn press(a: &mut App, code: KeyCode) -> Vec<Action> {
    let actions = a.on_key(KeyEvent::new(code, KeyModifiers::NONE), Instant::now());
    settle_previews(a, actions)
}

fn command(a: &mut App, line: &str) -> Vec<Action> {
    for c in line.chars() {
        press(a, KeyCode::Char(c));
    }
    press(a, KeyCode::Enter)
}

fn last_notice(a: &App) -> String {
    match a.chat.transcript().last() {
        Some(HistoryCell::Notice(_, text)) => text.clone(),
        other => panic!("no notice: {other:?}"),
    }
}

/// The live area, rendered at 80 columns.
fn live(a: &App) -> String {
    let view = a.view(Instant::now());
    let (lines, _) = view.lines(80);
    let h = u16::try_from(lines.len()).unwrap();
    let mut t = Terminal::new(TestBackend::new(80, h)).unwrap();
    t.draw(|f| {
        view.render(f.area(), f.buffer_mut());
    })
    .unwrap();
    t.backend().to_string()
}

#[test]
fn branch_alone_forks_the_whole_session_at_once() {
    let mut a = app();
    assert_eq!(
        command(&mut a, "/branch"),
        vec![Action::Branch {
            turn: None,
            overwrite_conflicts: false
        }]
    );
}

#[test]
fn branch_with_a_bad_turn_says_what_it_takes() {
    let mut a = app();
    assert_eq!(command(&mut a, "/branch two"), Vec::new());
    assert!(
        last_notice(&a).contains("takes a turn number"),
        "{}",
        last_notice(&a)
    );
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    a.checkpoints = Some(Arc::new(
        SessionCheckpoints::open(
            home.path(),
            dir.path(),
            "s-1",
            CheckpointSettings::default(),
        )
        .unwrap(),
    ));
    assert_eq!(command(&mut a, "/branch 7"), Vec::new());
    assert!(
        last_notice(&a).starts_with("Nothing was branched: turn 7 has no checkpoint"),
        "{}",
        last_notice(&a)
    );
}

#[test]
fn branch_from_an_earlier_turn_previews_the_restore_with_its_conflicts_then_forks() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "old\n").unwrap();
    std::fs::write(dir.path().join("mine.txt"), "old\n").unwrap();
    let checkpoints = Arc::new(
        SessionCheckpoints::open(
            home.path(),
            dir.path(),
            "s-1",
            CheckpointSettings::default(),
        )
        .unwrap(),
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        assert!(
            checkpoints
                .turn_started("rewrite the notes", 1)
                .await
                .is_empty()
        );
        std::fs::write(dir.path().join("notes.txt"), "new\n").unwrap();
        std::fs::write(dir.path().join("mine.txt"), "agent\n").unwrap();
        assert!(checkpoints.turn_finished().await.is_empty());
    });
    // The user's own edit after the turn: a conflict.
    std::fs::write(dir.path().join("mine.txt"), "my edit\n").unwrap();
    let turn = checkpoints.last_turn().unwrap();
    let mut a = app();
    a.checkpoints = Some(checkpoints);
    assert_eq!(command(&mut a, &format!("/branch {turn}")), Vec::new());
    assert_snapshot!("branch_preview_with_a_conflict", live(&a));
    assert_eq!(
        press(&mut a, KeyCode::Enter),
        vec![Action::Branch {
            turn: Some(turn),
            overwrite_conflicts: false
        }]
    );
    assert!(a.rewind.is_none());
}

#[test]
fn a_finished_branch_says_where_the_session_went_and_what_came_back() {
    let mut a = app();
    a.session_id = "parent-1".into();
    let report = RewindReport {
        restored: vec!["notes.txt".into()],
        kept_conflicts: vec!["mine.txt".into()],
        ..RewindReport::default()
    };
    a.on_branched("parent-1", "child-2", &[], Some((1, &report)));
    assert_eq!(a.session_id, "child-2");
    let notices: Vec<String> = a
        .chat
        .transcript()
        .iter()
        .filter_map(|c| match c {
            HistoryCell::Notice(_, text) => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        notices,
        vec![
            "Rewound (code) to before turn 1. Restored 1 file(s); kept your later edits to \
             mine.txt."
                .to_owned(),
            "Branched: now in session child-2, a fork of parent-1 (kept as it was; /resume \
             parent-1 goes back to it). The fork's transcript follows"
                .to_owned(),
        ]
    );
}
