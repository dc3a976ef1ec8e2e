//! `/clear` (issue 32 item 16): a new recorded session where sessions are kept, the old one
//! resumable and named; the context meter starts over.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use common::listed_sessions;
use corvid_protocol::{ApprovalMode, CoreEvent, Op};
use corvid_tui::app::{Action, App, TuiOptions};
use corvid_tui::cells::{HistoryCell, NoticeKind};
use pretty_assertions::assert_eq;

fn app(with_sessions: bool) -> App {
    App::new(&TuiOptions {
        compact: false,
        model: "demo".into(),
        approval_mode: ApprovalMode::Default,
        no_color: false,
        transcript: Vec::new(),
        models: None,
        theme: corvid_core::settings::UiTheme::Dark,
        sessions: with_sessions.then(|| listed_sessions() as _),
    })
}

fn context_used(app: &mut App) {
    app.on_core_event(&CoreEvent::ContextUsage {
        used: 50_000,
        window: 100_000,
    });
}

#[test]
fn slash_clear_starts_a_new_session_and_names_the_old_one_for_resuming() {
    let mut app = app(true);
    app.session_id = "old-session".into();
    app.on_core_event(&common::task_started("hello"));
    app.on_core_event(&common::task_finished(0));
    app.resumable = true;
    context_used(&mut app);
    assert!(app.status.context.is_some());

    assert_eq!(
        app.command("/clear"),
        vec![Action::NewSession, Action::ClearScreen]
    );
    assert!(app.chat.transcript().is_empty());
    assert!(app.status.context.is_none(), "the ctx meter starts over");
    app.on_new_session("new-session");
    assert_eq!(app.session_id, "new-session");
    assert!(!app.resumable, "nothing to go back to in the new one yet");
    assert_eq!(
        app.chat.transcript(),
        &[HistoryCell::Notice(
            NoticeKind::Info,
            "New session new-session. The previous one stays resumable: corvid --resume old-session (or /resume)".into()
        )]
    );
}

#[test]
fn slash_clear_on_an_unused_session_does_not_offer_to_resume_it() {
    let mut app = app(true);
    app.session_id = "empty".into();
    app.command("/clear");
    app.on_new_session("next");
    assert_eq!(
        app.chat.transcript(),
        &[HistoryCell::Notice(
            NoticeKind::Info,
            "New session next".into()
        )]
    );
}

#[test]
fn without_sessions_slash_clear_clears_the_history_in_place() {
    let mut app = app(false);
    assert_eq!(
        app.command("/clear"),
        vec![Action::Submit(Op::ClearHistory), Action::ClearScreen]
    );
}
