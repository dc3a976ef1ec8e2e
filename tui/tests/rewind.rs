//! `/undo`, `/rewind` and Esc Esc (issue 26): the dialog over real checkpoints of a temporary
//! folder, the operation it sends, and the prompt put back after a conversation rewind.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use corvid_core::checkpoints::{CheckpointSettings, SessionCheckpoints};
use corvid_protocol::{ApprovalMode, CoreEvent, Op, RewindReport, RewindScope};
use corvid_tui::app::{Action, App, TuiOptions};
use corvid_tui::cells::HistoryCell;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use insta::assert_snapshot;
use pretty_assertions::assert_eq;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tempfile::TempDir;

/// A session's checkpoints on a temporary folder (kept alive by the two folders).
struct Workspace {
    dir: TempDir,
    _home: TempDir,
    checkpoints: Arc<SessionCheckpoints>,
}

impl Workspace {
    fn new() -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "old\n").unwrap();
        let checkpoints = Arc::new(
            SessionCheckpoints::open(
                home.path(),
                dir.path(),
                "s-1",
                CheckpointSettings::default(),
            )
            .unwrap(),
        );
        Workspace {
            dir,
            _home: home,
            checkpoints,
        }
    }

    /// A turn as the loop records it, in which `write` changes the files.
    fn turn(&self, prompt: &str, history_len: usize, write: impl FnOnce(&Path)) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            assert!(
                self.checkpoints
                    .turn_started(prompt, history_len)
                    .await
                    .is_empty()
            );
            assert!(self.checkpoints.before_call().await.is_empty());
            write(self.dir.path());
            assert!(self.checkpoints.turn_finished().await.is_empty());
        });
    }

    /// Two turns: one writes a file, one only talks.
    fn with_turns() -> Workspace {
        let w = Workspace::new();
        w.turn("rewrite the notes", 1, |dir| {
            std::fs::write(dir.join("notes.txt"), "new\n").unwrap();
            std::fs::write(dir.join("added.txt"), "added\n").unwrap();
        });
        w.turn("explain the notes", 3, |_| {});
        w
    }

    fn app(&self) -> App {
        let mut a = app();
        a.checkpoints = Some(self.checkpoints.clone());
        a
    }
}

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

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

/// A key press, with any preview it asks for computed at once (see `settle_previews`).
fn press(a: &mut App, code: KeyCode) -> Vec<Action> {
    let actions = a.on_key(key(code), Instant::now());
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

fn rewound(turn: u32, scope: RewindScope) -> CoreEvent {
    CoreEvent::Rewound {
        turn,
        scope,
        report: RewindReport::default(),
        error: None,
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
fn undo_previews_the_last_turn_then_sends_the_rewind_and_puts_its_prompt_back() {
    let w = Workspace::new();
    w.turn("rewrite the notes", 1, |dir| {
        std::fs::write(dir.join("notes.txt"), "new\n").unwrap();
    });
    let turn = w.checkpoints.last_turn().unwrap();
    let mut a = w.app();
    assert_eq!(command(&mut a, "/undo"), Vec::new());
    assert!(a.rewind.is_some(), "the preview waits for a yes");
    let shown = live(&a);
    assert!(shown.contains("restore  notes.txt"), "{shown}");
    assert_eq!(
        press(&mut a, KeyCode::Enter),
        vec![Action::Submit(Op::Rewind {
            turn,
            scope: RewindScope::Both,
            overwrite_conflicts: false,
        })]
    );
    assert!(a.rewind.is_none());
    assert!(a.composer.is_empty(), "not before the core has rewound");
    a.on_core_event(&rewound(turn, RewindScope::Both));
    assert_eq!(a.composer.text(), "rewrite the notes");
}

#[test]
fn a_conversation_rewind_puts_back_the_whole_prompt_of_several_lines() {
    let w = Workspace::new();
    let prompt = "rewrite the notes\nkeep the title\nand sign them";
    w.turn(prompt, 1, |dir| {
        std::fs::write(dir.join("notes.txt"), "new\n").unwrap();
    });
    let turn = w.checkpoints.last_turn().unwrap();
    let mut a = w.app();
    a.on_core_event(&task_started(prompt));
    a.on_core_event(&task_finished(0));
    a.on_core_event(&task_started("rewrite the notes again"));
    a.on_core_event(&task_finished(0));
    command(&mut a, "/undo");
    press(&mut a, KeyCode::Char('y'));
    for c in "typed since".chars() {
        press(&mut a, KeyCode::Char(c));
    }
    a.on_core_event(&rewound(turn, RewindScope::Both));
    assert_eq!(a.composer.text(), format!("{prompt}\ntyped since"));
}

#[test]
fn a_prompt_with_a_first_line_longer_than_the_checkpoints_keep_comes_back_whole() {
    let w = Workspace::new();
    let prompt = format!("{}\nsecond line", "word ".repeat(80));
    w.turn(&prompt, 1, |dir| {
        std::fs::write(dir.join("notes.txt"), "new\n").unwrap();
    });
    let turn = w.checkpoints.last_turn().unwrap();
    let mut a = w.app();
    a.on_core_event(&task_started(&prompt));
    a.on_core_event(&task_finished(0));
    command(&mut a, "/undo");
    press(&mut a, KeyCode::Enter);
    a.on_core_event(&rewound(turn, RewindScope::Both));
    assert_eq!(a.composer.text(), prompt);
}

#[test]
fn a_failed_rewind_puts_nothing_back() {
    let w = Workspace::with_turns();
    let turn = w.checkpoints.last_turn().unwrap();
    let mut a = w.app();
    command(&mut a, "/undo");
    press(&mut a, KeyCode::Enter);
    a.on_core_event(&CoreEvent::Rewound {
        turn,
        scope: RewindScope::Both,
        report: RewindReport::default(),
        error: Some("the store is damaged".into()),
    });
    assert!(a.composer.is_empty());
}

#[test]
fn esc_or_n_on_the_preview_sends_nothing() {
    let w = Workspace::with_turns();
    let mut a = w.app();
    command(&mut a, "/undo");
    assert_eq!(press(&mut a, KeyCode::Char('n')), Vec::new());
    assert!(a.rewind.is_none());
    command(&mut a, "/undo");
    assert_eq!(press(&mut a, KeyCode::Esc), Vec::new());
    assert!(a.rewind.is_none());
    a.on_core_event(&rewound(2, RewindScope::Both));
    assert!(
        a.composer.is_empty(),
        "nothing was asked, nothing comes back"
    );
}

#[test]
fn a_conflict_offers_keeping_or_overwriting_the_users_edits() {
    let w = Workspace::new();
    w.turn("rewrite the notes", 1, |dir| {
        std::fs::write(dir.join("notes.txt"), "new\n").unwrap();
    });
    // The user edits the file after the agent did.
    std::fs::write(w.dir.path().join("notes.txt"), "mine\n").unwrap();
    let turn = w.checkpoints.last_turn().unwrap();
    let mut a = w.app();
    command(&mut a, "/undo");
    assert_snapshot!(live(&a));
    press(&mut a, KeyCode::Down);
    assert_eq!(
        press(&mut a, KeyCode::Enter),
        vec![Action::Submit(Op::Rewind {
            turn,
            scope: RewindScope::Both,
            overwrite_conflicts: true,
        })]
    );
    command(&mut a, "/undo");
    press(&mut a, KeyCode::Down);
    press(&mut a, KeyCode::Down);
    assert_eq!(press(&mut a, KeyCode::Enter), Vec::new(), "cancel");
    assert!(a.rewind.is_none());
}

#[test]
fn rewind_with_a_turn_number_goes_straight_to_what_to_put_back_and_a_bad_one_is_named() {
    let w = Workspace::with_turns();
    let first = w.checkpoints.turns().unwrap()[0].turn;
    let mut a = w.app();
    assert_eq!(command(&mut a, &format!("/rewind {first}")), Vec::new());
    let shown = live(&a);
    assert!(
        shown.contains(&format!("Rewind to before turn {first}")),
        "{shown}"
    );
    assert!(shown.contains("rewrite the notes"), "{shown}");
    press(&mut a, KeyCode::Esc);
    assert_eq!(command(&mut a, "/rewind 99"), Vec::new());
    assert!(a.rewind.is_none());
    assert!(
        last_notice(&a).starts_with("Turn 99 cannot be rewound to"),
        "{}",
        last_notice(&a)
    );
    assert_eq!(command(&mut a, "/rewind last"), Vec::new());
    assert!(a.rewind.is_none());
    assert!(
        last_notice(&a).contains("\"last\" is not one"),
        "{}",
        last_notice(&a)
    );
}

#[test]
fn rewind_picks_an_earlier_prompt_then_what_to_put_back() {
    let w = Workspace::with_turns();
    let turns = w.checkpoints.turns().unwrap();
    let mut a = w.app();
    command(&mut a, "/rewind");
    assert_snapshot!("rewind_picker", live(&a));
    press(&mut a, KeyCode::Up);
    press(&mut a, KeyCode::Enter);
    assert_snapshot!("rewind_scope", live(&a));
    press(&mut a, KeyCode::Down);
    assert_eq!(
        press(&mut a, KeyCode::Enter),
        Vec::new(),
        "the preview first"
    );
    assert!(live(&a).contains("Rewind (code) to before turn"));
    assert_eq!(
        press(&mut a, KeyCode::Char('y')),
        vec![Action::Submit(Op::Rewind {
            turn: turns[0].turn,
            scope: RewindScope::Code,
            overwrite_conflicts: false,
        })]
    );
    a.on_core_event(&rewound(turns[0].turn, RewindScope::Code));
    assert!(
        a.composer.is_empty(),
        "a code rewind keeps the conversation"
    );
}

#[test]
fn esc_esc_opens_the_picker_only_with_an_empty_box() {
    let w = Workspace::with_turns();
    let mut a = w.app();
    let t0 = Instant::now();
    for c in "draft".chars() {
        press(&mut a, KeyCode::Char(c));
    }
    a.on_key(key(KeyCode::Esc), t0);
    a.on_key(key(KeyCode::Esc), t0 + Duration::from_millis(300));
    assert!(a.composer.is_empty(), "with text, Esc Esc clears the box");
    assert!(a.rewind.is_none());
    a.on_key(key(KeyCode::Esc), t0 + Duration::from_millis(600));
    assert!(a.rewind.is_none(), "one Esc opens nothing");
    assert_eq!(
        a.status.hint.as_deref(),
        Some("esc again to rewind to an earlier prompt")
    );
    a.on_key(key(KeyCode::Esc), t0 + Duration::from_millis(900));
    assert!(
        a.rewind.is_some(),
        "Esc Esc on an empty box opens the picker"
    );
    a.on_key(key(KeyCode::Esc), t0 + Duration::from_millis(1_000));
    assert!(a.rewind.is_none(), "Esc closes it");
}

#[test]
fn undo_and_rewind_are_refused_while_a_task_runs_and_without_checkpoints() {
    let w = Workspace::with_turns();
    let mut a = w.app();
    a.on_core_event(&task_started("go on"));
    for line in ["/undo", "/rewind"] {
        assert_eq!(command(&mut a, line), Vec::new());
        assert!(a.rewind.is_none());
        assert!(last_notice(&a).contains("A task is running"), "{line}");
    }
    let mut off = app();
    for line in ["/undo", "/rewind"] {
        assert_eq!(command(&mut off, line), Vec::new());
        assert!(off.rewind.is_none());
        assert!(
            last_notice(&off).contains("Checkpoints are off"),
            "{}",
            last_notice(&off)
        );
    }
}

#[test]
fn undo_in_a_session_without_turns_says_there_is_nothing_to_undo() {
    let w = Workspace::new();
    let mut a = w.app();
    command(&mut a, "/undo");
    assert!(a.rewind.is_none());
    assert!(
        last_notice(&a).contains("nothing to undo"),
        "{}",
        last_notice(&a)
    );
}

#[test]
fn undo_and_rewind_are_in_help() {
    let mut a = app();
    command(&mut a, "/help");
    let help = last_notice(&a);
    assert!(help.contains("/undo"));
    assert!(help.contains("/rewind"));
}

#[test]
fn a_file_name_or_prompt_with_terminal_escapes_is_shown_without_them() {
    let w = Workspace::new();
    w.turn("evil \u{1b}]0;owned\u{7} prompt", 1, |dir| {
        std::fs::write(dir.join("x\u{1b}[2Jy.txt"), "new\n").unwrap();
    });
    let mut a = w.app();
    command(&mut a, "/rewind");
    let picker = live(&a);
    assert!(
        !picker.contains('\u{1b}') && !picker.contains('\u{7}'),
        "{picker:?}"
    );
    press(&mut a, KeyCode::Enter);
    let scope = live(&a);
    assert!(
        !scope.contains('\u{1b}') && !scope.contains('\u{7}'),
        "{scope:?}"
    );
    press(&mut a, KeyCode::Enter);
    let preview = live(&a);
    assert!(preview.contains("delete"), "{preview}");
    assert!(
        !preview.contains('\u{1b}') && !preview.contains('\u{7}'),
        "{preview:?}"
    );
}

#[test]
fn a_turn_that_changed_many_files_lists_ten_and_counts_the_rest() {
    let w = Workspace::new();
    w.turn("make files", 1, |dir| {
        for i in 0..25 {
            std::fs::write(dir.join(format!("f{i:02}.txt")), "x\n").unwrap();
        }
    });
    let mut a = w.app();
    command(&mut a, "/undo");
    let shown = live(&a);
    assert_eq!(shown.matches("delete   f").count(), 10, "{shown}");
    assert!(shown.contains("… and 15 more files"), "{shown}");
    assert!(shown.contains("rewind"), "the choices stay: {shown}");
}

/// Types `line` and Enter without computing the preview it asks for: the request, as the run
/// loop gets it.
fn ask_preview(a: &mut App, line: &str) -> corvid_tui::rewind::PreviewRequest {
    for c in line.chars() {
        a.on_key(key(KeyCode::Char(c)), Instant::now());
    }
    match a.on_key(key(KeyCode::Enter), Instant::now()).as_slice() {
        [Action::Preview(request)] => request.clone(),
        other => panic!("no preview asked for: {other:?}"),
    }
}

#[test]
fn the_preview_is_prepared_off_the_ui_thread_while_the_dialog_says_so_and_esc_cancels_it() {
    let w = Workspace::with_turns();
    let mut a = w.app();
    let request = ask_preview(&mut a, "/undo");
    assert_eq!((request.turn, request.scope), (None, RewindScope::Both));
    assert_snapshot!("rewind_preparing", live(&a));
    assert_eq!(
        a.on_key(key(KeyCode::Enter), Instant::now()),
        Vec::new(),
        "nothing to choose yet"
    );
    assert!(live(&a).contains("preparing preview…"));

    a.on_key(key(KeyCode::Esc), Instant::now());
    assert!(a.rewind.is_none(), "esc cancels the wait");
    // The answer that comes after the cancel opens nothing.
    a.previewed(&request, request.run(&w.checkpoints));
    assert!(a.rewind.is_none());

    // Only the answer to the newest request is shown.
    let newer = ask_preview(&mut a, "/undo");
    a.previewed(&request, request.run(&w.checkpoints));
    assert!(live(&a).contains("preparing preview…"));
    a.previewed(&newer, newer.run(&w.checkpoints));
    assert!(live(&a).contains("Rewind?"), "{}", live(&a));
}

#[test]
fn a_preview_that_fails_closes_the_dialog_with_a_notice() {
    let w = Workspace::with_turns();
    let mut a = w.app();
    let request = ask_preview(&mut a, "/branch 1");
    assert!(request.branch);
    a.previewed(&request, Err("the store is damaged".into()));
    assert!(a.rewind.is_none());
    assert_eq!(
        last_notice(&a),
        "Nothing was branched: the store is damaged"
    );
}

#[test]
fn the_earlier_prompts_are_read_off_the_ui_thread_and_esc_cancels_the_wait() {
    let w = Workspace::with_turns();
    let mut a = w.app();
    for c in "/rewind".chars() {
        a.on_key(key(KeyCode::Char(c)), Instant::now());
    }
    let request = match a.on_key(key(KeyCode::Enter), Instant::now()).as_slice() {
        [Action::ListTurns(request)] => request.clone(),
        other => panic!("no listing asked for: {other:?}"),
    };
    assert_eq!(request.wanted, None);
    assert!(
        live(&a).contains("reading the earlier prompts…"),
        "{}",
        live(&a)
    );
    a.on_key(key(KeyCode::Esc), Instant::now());
    assert!(a.rewind.is_none());
    a.listed(&request, request.run(&w.checkpoints));
    assert!(
        a.rewind.is_none(),
        "an answer after the cancel opens nothing"
    );
}
