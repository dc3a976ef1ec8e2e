//! `/model` (issue 32 item 16): a picker over the provider's listed models, a typed name
//! checked against the listing, and names from the server drawn without control characters.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use std::time::Instant;

use corvid_protocol::{ApprovalMode, Op, ReasoningEffort};
use corvid_tui::app::{Action, App, TuiOptions};
use corvid_tui::cells::{HistoryCell, NoticeKind};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use insta::assert_snapshot;
use pretty_assertions::assert_eq;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const WIDTH: u16 = 60;

fn app() -> App {
    App::new(&TuiOptions {
        compact: false,
        model: "gpt-5".into(),
        approval_mode: ApprovalMode::Default,
        no_color: false,
        transcript: Vec::new(),
        models: None,
        theme: corvid_core::settings::UiTheme::Dark,
        sessions: None,
    })
}

fn listed(app: &mut App, names: &[&str]) {
    app.on_models(Ok(names.iter().map(|s| (*s).to_owned()).collect()));
}

fn key(app: &mut App, code: KeyCode) -> Vec<Action> {
    app.on_key(KeyEvent::new(code, KeyModifiers::NONE), Instant::now())
}

fn typed(app: &mut App, text: &str) {
    for c in text.chars() {
        key(app, KeyCode::Char(c));
    }
}

fn screen(app: &App) -> String {
    let view = app.view(Instant::now());
    let (lines, _) = view.lines(WIDTH);
    let h = u16::try_from(lines.len()).unwrap();
    let mut t = Terminal::new(TestBackend::new(WIDTH, h)).unwrap();
    t.draw(|f| {
        view.render(f.area(), f.buffer_mut());
    })
    .unwrap();
    t.backend().to_string()
}

fn last_notice(app: &App) -> (NoticeKind, String) {
    app.chat
        .transcript()
        .iter()
        .rev()
        .find_map(|c| match c {
            HistoryCell::Notice(kind, text) => Some((*kind, text.clone())),
            _ => None,
        })
        .unwrap()
}

#[test]
fn slash_model_opens_a_picker_over_the_listed_models_with_the_one_in_use_marked() {
    let mut app = app();
    listed(&mut app, &["gpt-5", "gpt-5-mini", "o3", "o4-mini"]);
    app.command("/model");
    key(&mut app, KeyCode::Down);
    assert_snapshot!(screen(&app));
}

#[test]
fn typing_in_the_model_picker_searches_and_enter_switches_the_model() {
    let mut app = app();
    listed(&mut app, &["gpt-5", "gpt-5-mini", "o3", "o4-mini"]);
    app.command("/model");
    typed(&mut app, "mini");
    key(&mut app, KeyCode::Down);
    assert!(screen(&app).contains("search: mini · 2 of 4"));
    let actions = key(&mut app, KeyCode::Enter);
    assert_eq!(
        actions,
        vec![Action::Submit(Op::SetModel {
            model: "o4-mini".into()
        })]
    );
    assert!(app.model_picker.is_none());
    assert_eq!(app.status.model, "o4-mini");
    assert_eq!(
        last_notice(&app),
        (
            NoticeKind::Info,
            "Model set to o4-mini for later turns".into()
        )
    );
}

#[test]
fn esc_closes_the_model_picker_without_changing_the_model() {
    let mut app = app();
    listed(&mut app, &["gpt-5", "o3"]);
    app.command("/model");
    assert!(key(&mut app, KeyCode::Esc).is_empty());
    assert!(app.model_picker.is_none());
    assert_eq!(app.status.model, "gpt-5");
}

#[test]
fn a_typed_model_the_provider_does_not_list_is_refused_naming_close_matches() {
    let mut app = app();
    listed(&mut app, &["gpt-5", "gpt-5-mini", "o3"]);
    assert!(app.command("/model gpt5 high").is_empty());
    assert_eq!(
        last_notice(&app),
        (
            NoticeKind::Warning,
            "Unknown model gpt5 for this provider; close matches: gpt-5 · /model lists them all"
                .into()
        )
    );
    assert_eq!(app.status.model, "gpt-5");
    assert_eq!(
        app.command("/model o3 high"),
        vec![
            Action::Submit(Op::SetModel { model: "o3".into() }),
            Action::Submit(Op::SetReasoningEffort {
                effort: ReasoningEffort::High
            }),
        ]
    );
}

#[test]
fn without_a_listing_a_typed_model_is_taken_with_a_note_and_the_picker_says_why_it_is_missing() {
    let mut app = app();
    app.on_models(Err(
        "the provider did not list its models within 15 s".into()
    ));
    assert_eq!(
        app.command("/model my-local-model"),
        vec![Action::Submit(Op::SetModel {
            model: "my-local-model".into()
        })]
    );
    assert_eq!(
        last_notice(&app).1,
        "Model set to my-local-model for later turns (the provider's model list is unavailable, so the name was not checked)"
    );
    app.command("/model");
    assert!(app.model_picker.is_none());
    assert!(
        last_notice(&app)
            .1
            .contains("the provider's model list is unavailable")
    );
    // An effort alone needs no listing and gets no note.
    app.command("/model low");
    assert_eq!(last_notice(&app).1, "Reasoning effort low for later turns");
}

#[test]
fn model_names_from_the_server_are_drawn_without_control_characters() {
    let mut app = app();
    listed(&mut app, &["gpt-5", "evil\x1b]0;pwned\x07\x1b[2J-model"]);
    app.command("/model");
    let shown = screen(&app);
    assert!(shown.contains("evil]0;pwned[2J-model"), "{shown}");
    assert!(!shown.contains('\x1b'), "{shown}");
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Enter);
    let (_, notice) = last_notice(&app);
    assert!(!notice.chars().any(char::is_control), "{notice:?}");
    let status = screen(&app);
    assert!(
        status.contains("evil]0;pwned[2J-model · default"),
        "{status}"
    );
}
