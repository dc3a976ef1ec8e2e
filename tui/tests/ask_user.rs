//! `ask_user` in the TUI (issue 30): the model's questions as a picker in the live area
//! (snapshot), answered with the keys: arrows, Space toggles a multi-select option, the Other
//! row takes typed text, Enter confirms, Esc dismisses (which cancels the task).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use corvid_protocol::{
    ApprovalMode, CoreEvent, Op, Question, QuestionAnswer, QuestionOption, QuestionReply,
};
use corvid_tui::app::{Action, App, TuiOptions};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use insta::assert_snapshot;
use pretty_assertions::assert_eq;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const WIDTH: u16 = 60;

fn app() -> App {
    App::new(&TuiOptions {
        compact: false,
        model: "demo-large".into(),
        approval_mode: ApprovalMode::Default,
        no_color: false,
        transcript: Vec::new(),
        sessions: None,
        models: None,
        theme: corvid_core::settings::UiTheme::Dark,
    })
}

fn option(label: &str, description: &str) -> QuestionOption {
    QuestionOption {
        label: label.into(),
        description: description.into(),
    }
}

fn questions() -> Vec<Question> {
    vec![
        Question {
            question: "Which database should the service use? It decides the migrations.".into(),
            header: "Database".into(),
            options: vec![
                option("Postgres", "a server, like production"),
                option("SQLite", "one file, no setup"),
            ],
            multi_select: false,
        },
        Question {
            question: "Which extras do you want?".into(),
            header: "Extras".into(),
            options: vec![
                option("Auth", "login pages"),
                option("Cache", "an in-memory cache"),
                option("Logs", ""),
            ],
            multi_select: true,
        },
    ]
}

fn asked(app: &mut App) {
    for ev in [
        task_started("set it up"),
        started("q1", "ask_user", "Which database should the service use?"),
        CoreEvent::QuestionAsked {
            call_id: "q1".into(),
            questions: questions(),
        },
    ] {
        app.on_core_event(&ev);
    }
}

/// A key pressed after the picker's guard against typing meant for the prompt box.
fn press(app: &mut App, code: KeyCode) -> Vec<Action> {
    app.on_key(
        KeyEvent::new(code, KeyModifiers::NONE),
        Instant::now() + Duration::from_secs(5),
    )
}

fn live(app: &App) -> String {
    let view = app.view(Instant::now() + Duration::from_secs(1));
    let (lines, _) = view.lines(WIDTH);
    let h = u16::try_from(lines.len()).unwrap();
    let mut t = Terminal::new(TestBackend::new(WIDTH, h)).unwrap();
    t.draw(|f| {
        view.render(f.area(), f.buffer_mut());
    })
    .unwrap();
    t.backend().to_string()
}

#[test]
fn the_questions_show_as_the_models_words_in_a_picker() {
    let mut a = app();
    asked(&mut a);
    assert_snapshot!("first_question", live(&a));
    press(&mut a, KeyCode::Down);
    press(&mut a, KeyCode::Enter);
    press(&mut a, KeyCode::Char(' '));
    assert_snapshot!("second_question_multi_select", live(&a));
}

#[test]
fn keys_answer_each_question_and_the_answers_go_to_the_agent() {
    let mut a = app();
    asked(&mut a);
    // Question 1: the Other row (below the two options) takes typed text.
    press(&mut a, KeyCode::Up);
    assert_eq!(press(&mut a, KeyCode::Enter), vec![]);
    for c in "MySQL".chars() {
        press(&mut a, KeyCode::Char(c));
    }
    press(&mut a, KeyCode::Backspace);
    press(&mut a, KeyCode::Char('L'));
    assert_eq!(press(&mut a, KeyCode::Enter), vec![]);
    // Question 2: toggle Auth and Logs, untoggle nothing, confirm.
    press(&mut a, KeyCode::Char(' '));
    press(&mut a, KeyCode::Down);
    press(&mut a, KeyCode::Down);
    press(&mut a, KeyCode::Char(' '));
    let actions = press(&mut a, KeyCode::Enter);
    assert_eq!(
        actions,
        vec![Action::Submit(Op::AnswerQuestion {
            call_id: "q1".into(),
            reply: QuestionReply::Answered {
                answers: vec![
                    QuestionAnswer {
                        header: "Database".into(),
                        labels: vec![],
                        other: Some("MySQL".into()),
                    },
                    QuestionAnswer {
                        header: "Extras".into(),
                        labels: vec!["Auth".into(), "Logs".into()],
                        other: None,
                    },
                ],
            },
        })]
    );
    assert!(a.chat.question.is_none());
}

#[test]
fn a_multi_select_question_needs_a_choice_and_esc_dismisses_the_questions() {
    let mut a = app();
    asked(&mut a);
    press(&mut a, KeyCode::Enter);
    // Nothing toggled: Enter stays on the question.
    assert_eq!(press(&mut a, KeyCode::Enter), vec![]);
    assert!(a.chat.question.is_some());
    assert_eq!(
        press(&mut a, KeyCode::Esc),
        vec![Action::Submit(Op::AnswerQuestion {
            call_id: "q1".into(),
            reply: QuestionReply::Cancelled,
        })]
    );
    assert!(a.chat.question.is_none());
}

#[test]
fn the_picker_closes_when_the_task_ends_without_an_answer() {
    let mut a = app();
    asked(&mut a);
    a.on_core_event(&task_finished(0));
    assert!(a.chat.question.is_none());
}

#[test]
fn keys_typed_as_the_picker_appears_do_not_answer_it() {
    let mut a = app();
    asked(&mut a);
    let typed = a.on_key(
        KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE),
        Instant::now(),
    );
    assert_eq!(typed, vec![]);
    assert!(a.chat.question.is_some());
    assert!(live(&a).contains("› 1. Postgres"), "{}", live(&a));
}
