//! `@path` in the composer: Tab completes the path, and the sent turn carries the file's
//! contents as context while the prompt stays as typed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use corvid_protocol::{ApprovalMode, Op};
use corvid_tui::app::{Action, App, TuiOptions};
use corvid_tui::mention::Mentions;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use pretty_assertions::assert_eq;

fn app_in(dir: &std::path::Path) -> App {
    let mut app = App::new(&TuiOptions {
        compact: false,
        model: "demo".into(),
        approval_mode: ApprovalMode::Default,
        no_color: false,
        transcript: Vec::new(),
        models: None,
        theme: corvid_core::settings::UiTheme::Dark,
        sessions: None,
    });
    app.mentions = Mentions::new(dir.to_owned());
    app
}

fn key(app: &mut App, code: KeyCode) -> Vec<Action> {
    app.on_key(KeyEvent::new(code, KeyModifiers::NONE), Instant::now())
}

fn typed(app: &mut App, s: &str) {
    for c in s.chars() {
        key(app, KeyCode::Char(c));
    }
}

#[test]
fn tab_completes_an_at_path_and_enter_attaches_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/lib.rs"),
        "pub fn answer() -> u32 { 42 }\n",
    )
    .unwrap();
    let mut app = app_in(dir.path());
    typed(&mut app, "explain @lib");
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.composer.text(), "explain @src/lib.rs");
    let actions = key(&mut app, KeyCode::Enter);
    assert_eq!(
        actions,
        vec![Action::Submit(Op::UserTurn {
            prompt: "explain @src/lib.rs".into(),
            images: Vec::new(),
            context: vec![
                "<context ref=\"src/lib.rs\">\npub fn answer() -> u32 { 42 }\n\n</context>".into()
            ],
        })]
    );
}

#[test]
fn an_at_path_outside_the_workspace_is_not_attached() {
    let outer = tempfile::tempdir().unwrap();
    std::fs::write(outer.path().join("secret.txt"), "hunter2").unwrap();
    let inner = outer.path().join("project");
    std::fs::create_dir(&inner).unwrap();
    let mut app = app_in(&inner);
    typed(&mut app, "read @../secret.txt");
    let actions = key(&mut app, KeyCode::Enter);
    assert_eq!(
        actions,
        vec![Action::Submit(Op::UserTurn {
            prompt: "read @../secret.txt".into(),
            images: Vec::new(),
            context: Vec::new(),
        })]
    );
}

#[test]
fn a_prompt_starting_with_a_bang_runs_the_command_through_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app_in(dir.path());
    typed(&mut app, "!echo hi");
    let actions = key(&mut app, KeyCode::Enter);
    assert_eq!(
        actions,
        vec![Action::Submit(Op::UserShell {
            command: "echo hi".into()
        })]
    );
    assert!(app.composer.is_empty());
}

#[test]
fn an_at_word_at_the_cursor_opens_a_file_popup_walked_with_arrows_and_completed_in_place() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    for f in ["src/lib.rs", "src/lexer.rs", "README.md"] {
        std::fs::write(dir.path().join(f), "x\n").unwrap();
    }
    let mut app = app_in(dir.path());
    typed(&mut app, "compare @l and the parser");
    // Back to the end of `@l`: the popup follows the cursor, not only the end of the line.
    for _ in 0.." and the parser".len() {
        key(&mut app, KeyCode::Left);
    }
    assert_eq!(app.mention_matches, vec!["src/lib.rs", "src/lexer.rs"]);
    let (lines, _) = app.view(Instant::now()).lines(60);
    assert!(
        lines
            .iter()
            .any(|l| l.to_string().trim_end() == "  @src/lexer.rs"),
        "{lines:#?}"
    );
    key(&mut app, KeyCode::Down);
    assert_eq!(key(&mut app, KeyCode::Enter), vec![]);
    assert_eq!(app.composer.text(), "compare @src/lexer.rs and the parser");
    assert!(
        app.mention_matches.is_empty(),
        "the popup closes once completed"
    );
}

/// The live area as drawn on a 60-column `TestBackend`.
fn drawn(app: &App) -> String {
    let view = app.view(Instant::now());
    let (lines, _) = view.lines(60);
    let h = u16::try_from(lines.len()).unwrap();
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(60, h)).unwrap();
    t.draw(|f| {
        view.render(f.area(), f.buffer_mut());
    })
    .unwrap();
    t.backend().to_string()
}

#[test]
fn the_at_popup_offers_folders_and_choosing_one_goes_on_inside_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("tests/fixtures")).unwrap();
    std::fs::write(dir.path().join("tests/fixtures/a.json"), "{}\n").unwrap();
    std::fs::write(dir.path().join("tests/smoke.rs"), "x\n").unwrap();
    std::fs::write(dir.path().join("testing.md"), "x\n").unwrap();
    let mut app = app_in(dir.path());
    typed(&mut app, "run @test");
    assert_eq!(
        app.mention_matches,
        vec![
            "tests/",
            "testing.md",
            "tests/smoke.rs",
            "tests/fixtures/",
            "tests/fixtures/a.json"
        ]
    );
    insta::assert_snapshot!(drawn(&app));
    // Enter on a folder completes it and keeps the popup open on what it holds.
    assert_eq!(key(&mut app, KeyCode::Enter), vec![]);
    assert_eq!(app.composer.text(), "run @tests/");
    assert_eq!(
        app.mention_matches,
        vec!["tests/smoke.rs", "tests/fixtures/", "tests/fixtures/a.json"]
    );
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.composer.text(), "run @tests/fixtures/");
    assert_eq!(app.mention_matches, vec!["tests/fixtures/a.json"]);
}

#[test]
fn a_mentioned_folder_attaches_its_entries_without_ignored_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    std::fs::write(dir.path().join(".gitignore"), "*.log\n").unwrap();
    std::fs::create_dir_all(dir.path().join("src/parser")).unwrap();
    std::fs::write(dir.path().join("src/main.rs"), "x\n").unwrap();
    std::fs::write(dir.path().join("src/debug.log"), "secret\n").unwrap();
    let mut app = app_in(dir.path());
    typed(&mut app, "what is in @src/ ?");
    let actions = key(&mut app, KeyCode::Enter);
    assert_eq!(
        actions,
        vec![Action::Submit(Op::UserTurn {
            prompt: "what is in @src/ ?".into(),
            images: Vec::new(),
            context: vec![
                "<context ref=\"src/\" kind=\"folder\">\nmain.rs\nparser/\n</context>".into()
            ],
        })]
    );
}
