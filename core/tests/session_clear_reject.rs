//! What a recording keeps of a rejection and of `/clear`: a resumed transcript shows the
//! rejected card as rejected, and a resumed session's history starts after the last clear.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::approvals::{Ran, shell, tools_with_fake_shell, turns};
use common::scripted::*;
use common::{collect_task_deciding, prompt, run_task, shut_down, test_config};
use corvid_core::agent::spawn_agent_observed;
use corvid_core::session::{Record, SessionStore, spawn_resumed};
use corvid_protocol::{ApprovalDecision, ApprovalMode, CoreEvent, Message, Op, Role};
use pretty_assertions::assert_eq;

#[tokio::test]
async fn a_rejected_call_is_recorded_and_replays_as_rejected_before_its_finish() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let ran = Ran::default();
    let provider = turns(vec![shell("c1", "rm -rf build")]);
    let mut config = test_config(Arc::new(provider), Vec::new());
    config.tools = tools_with_fake_shell(&ran);
    config.approval_mode = ApprovalMode::Default;
    let recorder = Arc::new(store.create(cwd.path(), "rej-1", "main-model").unwrap());
    let mut handle = spawn_agent_observed(config, recorder);
    prompt(&handle, "clean up");
    collect_task_deciding(&mut handle, |_| ApprovalDecision::RejectOnce).await;
    shut_down(handle).await;
    assert!(ran.all().is_empty());

    let loaded = store.load(cwd.path(), "rej-1").unwrap();
    assert!(loaded.records.contains(&Record::CallRejected {
        call_id: "c1".into()
    }));
    let resumed = spawn_resumed(
        test_config(Arc::new(ScriptedProvider::new(Vec::new())), Vec::new()),
        &store,
        &loaded,
    )
    .unwrap();
    let c1: Vec<&CoreEvent> = resumed
        .transcript
        .iter()
        .filter(|ev| match ev {
            CoreEvent::ToolStarted { call_id, .. }
            | CoreEvent::PermissionResolved { call_id, .. }
            | CoreEvent::ToolFinished { call_id, .. } => call_id == "c1",
            _ => false,
        })
        .collect();
    assert!(matches!(c1[0], CoreEvent::ToolStarted { .. }), "{c1:#?}");
    assert!(
        matches!(
            c1[1],
            CoreEvent::PermissionResolved {
                decision: ApprovalDecision::RejectOnce,
                ..
            }
        ),
        "{c1:#?}"
    );
    assert!(matches!(c1[2], CoreEvent::ToolFinished { .. }), "{c1:#?}");
    shut_down(resumed.handle).await;
}

#[tokio::test]
async fn a_resumed_session_starts_its_history_and_transcript_after_the_last_clear() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let provider = ScriptedProvider::new(vec![answer("first answer"), answer("second answer")]);
    let config = test_config(Arc::new(provider.clone()), Vec::new());
    let recorder = Arc::new(store.create(cwd.path(), "clr-1", "main-model").unwrap());
    let mut handle = spawn_agent_observed(config, recorder);
    run_task(&mut handle, "before the clear").await;
    handle.submit(Op::ClearHistory).unwrap();
    assert_eq!(
        handle.next_event().await.unwrap(),
        CoreEvent::HistoryCleared
    );
    run_task(&mut handle, "after the clear").await;
    // Live, the model saw only the prompt after the clear.
    assert_eq!(
        provider.requests()[1].messages,
        vec![Message::user_text("after the clear")]
    );
    shut_down(handle).await;

    let loaded = store.load(cwd.path(), "clr-1").unwrap();
    assert!(loaded.records.contains(&Record::HistoryCleared));
    let history_roles: Vec<Role> = loaded.history().iter().map(|m| m.role).collect();
    assert_eq!(history_roles, vec![Role::User, Role::Assistant]);
    assert_eq!(loaded.history()[0], Message::user_text("after the clear"));
    assert_eq!(loaded.whole_history().len(), 4);

    let resumed_provider = ScriptedProvider::new(vec![answer("third answer")]);
    let resumed = spawn_resumed(
        test_config(Arc::new(resumed_provider.clone()), Vec::new()),
        &store,
        &loaded,
    )
    .unwrap();
    let prompts: Vec<&str> = resumed
        .transcript
        .iter()
        .filter_map(|ev| match ev {
            CoreEvent::TaskStarted { prompt, .. } => Some(prompt.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(prompts, vec!["after the clear"]);
    let mut handle = resumed.handle;
    run_task(&mut handle, "and now?").await;
    let sent: Vec<String> = resumed_provider.requests()[0]
        .messages
        .iter()
        .map(Message::text)
        .collect();
    assert_eq!(sent, vec!["after the clear", "second answer", "and now?"]);
    shut_down(handle).await;
}

#[tokio::test]
async fn a_subagents_recorded_messages_never_join_the_sessions_history() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let recorder = store.create(cwd.path(), "sub-1", "main-model").unwrap();
    for record in [
        Record::Message {
            message: Message::user_text("what do my notes say?"),
        },
        Record::SubagentMessage {
            parent_call_id: "task_1".into(),
            message: Message::user_text("Read notes.txt and report."),
        },
        Record::Message {
            message: Message {
                role: Role::Assistant,
                parts: vec![corvid_protocol::Part::Text { text: "42".into() }],
            },
        },
    ] {
        recorder.append(&record).unwrap();
    }
    drop(recorder);
    let loaded = store.load(cwd.path(), "sub-1").unwrap();
    let texts: Vec<String> = loaded.history().iter().map(Message::text).collect();
    assert_eq!(texts, vec!["what do my notes say?", "42"]);
}
