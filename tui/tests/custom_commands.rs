//! Custom commands and skills in the terminal UI (issue 29): `/name args` is submitted for
//! the core to expand, `/help` lists them with their source, `/skills` lists the skills.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use corvid_core::commands::{Library, Roots};
use corvid_core::settings::{ProjectTrust, Trust};
use corvid_protocol::{ApprovalMode, Op};
use corvid_tui::app::{Action, App, TuiOptions};
use corvid_tui::cells::{HistoryCell, NoticeKind};
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
    let roots = Roots {
        cwd: dir.to_owned(),
        project_dirs: vec![dir.to_owned()],
        ..Roots::default()
    };
    let trust = ProjectTrust::vouched(Some(dir.to_owned()), Trust::Trusted);
    app.commands = Some(Library::new(roots, trust));
    app
}

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The text of the last info notice.
fn last_info(app: &App) -> String {
    app.chat
        .transcript()
        .iter()
        .rev()
        .find_map(|c| match c {
            HistoryCell::Notice(NoticeKind::Info, text) => Some(text.clone()),
            _ => None,
        })
        .unwrap()
}

#[test]
fn a_custom_command_is_submitted_as_typed_and_help_and_skills_list_them() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join(".claude/commands/review.md"),
        "---\ndescription: Review a file\nargument-hint: FILE\n---\nReview $0.\n",
    );
    write(
        &dir.path().join(".claude/skills/pdf/SKILL.md"),
        "---\nname: pdf\ndescription: Work with PDF files\n---\nUse pdftotext.\n",
    );
    let mut app = app_in(dir.path());
    assert_eq!(
        app.command("/review src/lib.rs"),
        vec![Action::Submit(Op::UserTurn {
            prompt: "/review src/lib.rs".into(),
            images: Vec::new(),
            context: Vec::new(),
        })]
    );
    app.command("/help");
    let help = last_info(&app);
    assert!(
        help.contains("/review FILE    Review a file (project-claude)"),
        "{help}"
    );
    assert!(
        help.contains("/pdf            Work with PDF files (skill)"),
        "{help}"
    );
    app.command("/skills");
    let skills = last_info(&app);
    assert!(
        skills.starts_with("Skills\npdf: Work with PDF files [model and /name]\n"),
        "{skills}"
    );
}

/// The live area's rows as text.
fn screen(app: &App) -> String {
    let view = app.view(std::time::Instant::now());
    let (lines, _) = view.lines(70);
    let h = u16::try_from(lines.len()).unwrap();
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(70, h)).unwrap();
    t.draw(|f| {
        view.render(f.area(), f.buffer_mut());
    })
    .unwrap();
    t.backend().to_string()
}

#[test]
fn the_slash_popup_offers_custom_commands_and_skills_with_their_source_and_tab_completes_them() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join(".claude/commands/review.md"),
        "---\ndescription: Review a file\x1b[2J\nargument-hint: FILE\n---\nReview $0.\n",
    );
    write(
        &dir.path().join(".claude/skills/release/SKILL.md"),
        "---\nname: release\ndescription: Cut a release\n---\nTag it.\n",
    );
    let mut app = app_in(dir.path());
    for c in "/re".chars() {
        app.on_key(
            KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE),
            std::time::Instant::now(),
        );
    }
    let names: Vec<String> = app.command_popup().into_iter().map(|e| e.name).collect();
    assert_eq!(names, vec!["/resume", "/rewind", "/release", "/review"]);
    let shown = screen(&app);
    assert!(!shown.contains('\x1b'), "{shown}");
    insta::assert_snapshot!(shown);
    for code in [KeyCode::Down, KeyCode::Down, KeyCode::Down, KeyCode::Tab] {
        app.on_key(
            KeyEvent::new(code, KeyModifiers::NONE),
            std::time::Instant::now(),
        );
    }
    assert_eq!(app.composer.text(), "/review ");
    assert!(app.command_popup().is_empty());
}
