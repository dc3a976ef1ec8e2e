//! `ask_user` (issue 30): the checked questions reach the front end as `QuestionAsked` after
//! the call's card, the answers come back with `Op::AnswerQuestion` and become the call's
//! result; dismissing them cancels the task; malformed questions are tool errors; subagents
//! and front ends that cannot answer do not get the tool.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::approvals::{Ran, finished, one_call, turns, workspace_config};
use common::{collect_task, prompt};
use corvid_core::agent::{AgentHandle, spawn_agent};
use corvid_core::agents::ToolChoice;
use corvid_protocol::{
    ApprovalMode, CoreEvent, Op, Question, QuestionAnswer, QuestionOption, QuestionReply,
    StopReason, ToolStatus,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn ask_args() -> Value {
    json!({"questions": [{
        "question": "Which database?\u{1b}[2J",
        "header": "Db",
        "options": [
            {"label": "Postgres", "description": "the server one"},
            {"label": "SQLite", "description": "one file"}
        ],
        "multiSelect": false
    }]})
}

/// Reads events until a question is asked, answers it with `reply`, then reads the task out.
async fn answer_with(handle: &mut AgentHandle, reply: QuestionReply) -> Vec<CoreEvent> {
    let mut events = Vec::new();
    loop {
        let ev = handle.next_event().await.unwrap();
        if let CoreEvent::QuestionAsked { call_id, .. } = &ev {
            handle
                .submit(Op::AnswerQuestion {
                    call_id: call_id.clone(),
                    reply: reply.clone(),
                })
                .unwrap();
        }
        let done = matches!(ev, CoreEvent::TaskFinished { .. });
        events.push(ev);
        if done {
            return events;
        }
    }
}

#[tokio::test]
async fn the_questions_reach_the_front_end_cleaned_and_the_answers_are_the_result() {
    let ws = tempfile::tempdir().unwrap();
    let provider = turns(vec![one_call("q1", "ask_user", ask_args())]);
    let config = workspace_config(&provider, ws.path(), ApprovalMode::Default, &Ran::default());
    let mut handle = spawn_agent(config);
    prompt(&handle, "go");
    let reply = QuestionReply::Answered {
        answers: vec![QuestionAnswer {
            header: "Db".into(),
            labels: vec!["SQLite".into()],
            other: None,
        }],
    };
    let events = answer_with(&mut handle, reply).await;
    let asked: Vec<&CoreEvent> = events
        .iter()
        .filter(|ev| matches!(ev, CoreEvent::QuestionAsked { .. }))
        .collect();
    assert_eq!(
        asked,
        vec![&CoreEvent::QuestionAsked {
            call_id: "q1".into(),
            questions: vec![Question {
                question: "Which database?[2J".into(),
                header: "Db".into(),
                options: vec![
                    QuestionOption {
                        label: "Postgres".into(),
                        description: "the server one".into()
                    },
                    QuestionOption {
                        label: "SQLite".into(),
                        description: "one file".into()
                    },
                ],
                multi_select: false,
            }],
        }]
    );
    let title = events.iter().find_map(|ev| match ev {
        CoreEvent::ToolStarted { display, .. } => Some(display.title.clone()),
        _ => None,
    });
    assert_eq!(title.as_deref(), Some("Which database?[2J"));
    let answer = "The user answered:\n- Db: SQLite";
    assert_eq!(
        finished(&events),
        vec![("q1".to_owned(), ToolStatus::Completed, answer.to_owned())]
    );
    let told = serde_json::to_string(&provider.requests()[1].messages).unwrap();
    assert!(told.contains("- Db: SQLite"), "{told}");
}

#[tokio::test]
async fn dismissing_the_questions_cancels_the_task() {
    let ws = tempfile::tempdir().unwrap();
    let provider = turns(vec![one_call("q1", "ask_user", ask_args())]);
    let config = workspace_config(&provider, ws.path(), ApprovalMode::Default, &Ran::default());
    let mut handle = spawn_agent(config);
    prompt(&handle, "go");
    let events = answer_with(&mut handle, QuestionReply::Cancelled).await;
    let stop = events.iter().find_map(|ev| match ev {
        CoreEvent::TaskFinished { stop_reason, .. } => Some(*stop_reason),
        _ => None,
    });
    assert_eq!(stop, Some(StopReason::Cancelled));
    assert_eq!(
        provider.requests().len(),
        1,
        "no request after the dismissal"
    );
}

#[tokio::test]
async fn malformed_questions_are_a_tool_error_and_nobody_is_asked() {
    let ws = tempfile::tempdir().unwrap();
    let args = json!({"questions": [{"question": "Which?", "header": "Db", "options": [],
                                     "multiSelect": false}]});
    let provider = turns(vec![one_call("q1", "ask_user", args)]);
    let config = workspace_config(&provider, ws.path(), ApprovalMode::Default, &Ran::default());
    let mut handle = spawn_agent(config);
    prompt(&handle, "go");
    let events = collect_task(&mut handle).await;
    assert!(
        !events
            .iter()
            .any(|ev| matches!(ev, CoreEvent::QuestionAsked { .. }))
    );
    assert_eq!(
        finished(&events),
        vec![(
            "q1".to_owned(),
            ToolStatus::Failed,
            "question \"Db\": it has no options; give 2 to 4 options (\"Other\" is added for you)"
                .to_owned()
        )]
    );
}

#[tokio::test]
async fn a_session_where_nobody_answers_neither_offers_the_tool_nor_hides_why() {
    let ws = tempfile::tempdir().unwrap();
    let provider = turns(vec![]);
    let config = workspace_config(&provider, ws.path(), ApprovalMode::Default, &Ran::default())
        .without_questions();
    let mut handle = spawn_agent(config);
    prompt(&handle, "go");
    collect_task(&mut handle).await;
    let request = &provider.requests()[0];
    let names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(!names.contains(&"ask_user"), "{names:?}");
    assert!(names.contains(&"enter_plan_mode"), "{names:?}");
    assert!(
        request
            .system
            .contains("the ask_user tool is not available"),
        "{}",
        request.system
    );
}

#[test]
fn no_subagent_type_is_offered_ask_user_or_the_plan_mode_tools() {
    for choice in [
        ToolChoice::All,
        ToolChoice::ReadOnly,
        ToolChoice::Named(vec![
            "ask_user".into(),
            "enter_plan_mode".into(),
            "exit_plan_mode".into(),
        ]),
    ] {
        for tool in corvid_tools::builtin_tools().iter() {
            if ["ask_user", "enter_plan_mode", "exit_plan_mode"].contains(&tool.name()) {
                assert!(!choice.allows(tool.as_ref()), "{choice:?} {}", tool.name());
            }
        }
    }
}

#[tokio::test]
async fn a_resumed_session_replays_the_card_and_the_answers_but_asks_nothing() {
    use corvid_core::session::{SessionStore, spawn_resumed};
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let recorder = std::sync::Arc::new(store.create(ws.path(), "q1", "main-model").unwrap());
    let provider = turns(vec![one_call("q1", "ask_user", ask_args())]);
    let config = workspace_config(&provider, ws.path(), ApprovalMode::Default, &Ran::default());
    let mut handle = corvid_core::agent::spawn_agent_observed(config, recorder);
    prompt(&handle, "go");
    let reply = QuestionReply::Answered {
        answers: vec![QuestionAnswer {
            header: "Db".into(),
            labels: vec!["Postgres".into()],
            other: None,
        }],
    };
    answer_with(&mut handle, reply).await;
    common::shut_down(handle).await;

    let loaded = store.load(ws.path(), "q1").unwrap();
    let provider = turns(vec![]);
    let config = workspace_config(&provider, ws.path(), ApprovalMode::Default, &Ran::default());
    let resumed = spawn_resumed(config, &store, &loaded).unwrap();
    let transcript = &resumed.transcript;
    assert!(
        !transcript
            .iter()
            .any(|ev| matches!(ev, CoreEvent::QuestionAsked { .. }))
    );
    let title = transcript.iter().find_map(|ev| match ev {
        CoreEvent::ToolStarted { display, .. } => Some(display.title.clone()),
        _ => None,
    });
    assert_eq!(title.as_deref(), Some("Which database?[2J"));
    assert_eq!(
        finished(transcript),
        vec![(
            "q1".to_owned(),
            ToolStatus::Completed,
            "The user answered:\n- Db: Postgres".to_owned()
        )]
    );
}
