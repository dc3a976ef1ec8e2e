//! `Op::Steer`: a prompt sent into the running task reaches the model at the next tool
//! boundary (or in one more turn when the model was about to stop), and is never lost.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::approvals::{Ran, shell, tools_with_fake_shell, turns};
use common::scripted::*;
use common::{collect_task, collect_task_deciding, prompt, read_until, shut_down, test_config};
use corvid_core::agent::spawn_agent;
use corvid_protocol::{
    ApprovalDecision, ApprovalMode, CoreEvent, FinishReason, Message, Op, Part, Role, StopReason,
};
use pretty_assertions::assert_eq;

fn steer(text: &str) -> Op {
    Op::Steer {
        prompt: text.into(),
    }
}

fn user_text(text: &str) -> Message {
    Message {
        role: Role::User,
        parts: vec![Part::Text { text: text.into() }],
    }
}

fn stop_reason(events: &[CoreEvent]) -> Option<StopReason> {
    match events.last() {
        Some(CoreEvent::TaskFinished { stop_reason, .. }) => Some(*stop_reason),
        _ => None,
    }
}

#[tokio::test]
async fn a_prompt_sent_while_a_call_waits_reaches_the_model_right_after_the_tool_results() {
    let ran = Ran::default();
    // `make` is not a read-only command, so it waits for the approval this test gives.
    let provider = turns(vec![shell("c1", "make")]);
    let mut config = test_config(Arc::new(provider.clone()), Vec::new());
    config.tools = tools_with_fake_shell(&ran);
    config.approval_mode = ApprovalMode::Default;
    let mut handle = spawn_agent(config);
    prompt(&handle, "look around");
    let mut events = read_until(&mut handle, |ev| {
        matches!(ev, CoreEvent::PermissionRequested { .. })
    })
    .await;
    handle.submit(steer("only the src folder")).unwrap();
    handle
        .submit(Op::Approval {
            call_id: "c1".into(),
            decision: ApprovalDecision::AllowOnce,
        })
        .unwrap();
    events.extend(collect_task_deciding(&mut handle, |_| ApprovalDecision::AllowOnce).await);
    shut_down(handle).await;

    let order: Vec<&str> = events
        .iter()
        .filter_map(|ev| match ev {
            CoreEvent::BatchCompleted { .. } => Some("batch"),
            CoreEvent::Steered { .. } => Some("steered"),
            CoreEvent::TurnStarted { .. } => Some("turn"),
            _ => None,
        })
        .collect();
    assert_eq!(order, vec!["turn", "batch", "steered", "turn"]);
    assert!(events.contains(&CoreEvent::Steered {
        prompt: "only the src folder".into()
    }));
    let second = &provider.requests()[1].messages;
    assert_eq!(second.last(), Some(&user_text("only the src folder")));
    let before = &second[second.len() - 2];
    assert!(
        matches!(&before.parts[..], [Part::ToolResult(r)] if r.call_id == "c1"),
        "{before:#?}"
    );
    assert_eq!(stop_reason(&events), Some(StopReason::EndTurn));
}

#[tokio::test(start_paused = true)]
async fn a_prompt_sent_while_the_model_answers_without_tools_gets_one_more_turn() {
    let provider = ScriptedProvider::new(vec![
        vec![
            text("almost done"),
            delay_ms(1_000),
            finish(FinishReason::Stop),
        ],
        answer("also in French"),
    ]);
    let mut handle = spawn_agent(test_config(Arc::new(provider.clone()), Vec::new()));
    prompt(&handle, "say hello");
    let mut events = read_until(&mut handle, |ev| matches!(ev, CoreEvent::TextDelta { .. })).await;
    handle.submit(steer("in French too")).unwrap();
    events.extend(collect_task(&mut handle).await);
    shut_down(handle).await;

    let requests = provider.requests();
    assert_eq!(requests.len(), 2, "one more turn for the steering prompt");
    assert_eq!(
        requests[1].messages.last(),
        Some(&user_text("in French too"))
    );
    assert!(events.contains(&CoreEvent::Steered {
        prompt: "in French too".into()
    }));
    assert_eq!(stop_reason(&events), Some(StopReason::EndTurn));
}

#[tokio::test]
async fn a_prompt_sent_with_no_task_running_starts_one() {
    let provider = ScriptedProvider::new(vec![answer("hi")]);
    let mut handle = spawn_agent(test_config(Arc::new(provider.clone()), Vec::new()));
    handle.submit(steer("hello")).unwrap();
    let events = collect_task(&mut handle).await;
    shut_down(handle).await;
    assert!(
        matches!(&events[0], CoreEvent::TaskStarted { prompt, .. } if prompt == "hello"),
        "{events:#?}"
    );
    assert_eq!(provider.requests()[0].messages, vec![user_text("hello")]);
}

#[tokio::test]
async fn a_prompt_the_cancelled_task_never_read_is_named_in_a_warning_before_it_ends() {
    let ran = Ran::default();
    let provider = turns(vec![shell("c1", "make")]);
    let mut config = test_config(Arc::new(provider.clone()), Vec::new());
    config.tools = tools_with_fake_shell(&ran);
    config.approval_mode = ApprovalMode::Default;
    let mut handle = spawn_agent(config);
    prompt(&handle, "look around");
    read_until(&mut handle, |ev| {
        matches!(ev, CoreEvent::PermissionRequested { .. })
    })
    .await;
    handle.submit(steer("and the tests")).unwrap();
    handle.submit(Op::Cancel).unwrap();
    let events = collect_task(&mut handle).await;
    shut_down(handle).await;

    assert!(
        !events
            .iter()
            .any(|ev| matches!(ev, CoreEvent::Steered { .. }))
    );
    let warned = events.iter().any(
        |ev| matches!(ev, CoreEvent::Warning { message } if message.contains("and the tests")),
    );
    assert!(warned, "{events:#?}");
    assert_eq!(stop_reason(&events), Some(StopReason::Cancelled));
    assert_eq!(provider.requests().len(), 1);
}

#[tokio::test]
async fn a_prompt_sent_during_a_user_shell_command_is_refused_with_a_warning() {
    let ran = Ran::default();
    let provider = ScriptedProvider::new(Vec::new());
    let mut config = test_config(Arc::new(provider.clone()), Vec::new());
    config.tools = tools_with_fake_shell(&ran);
    let mut handle = spawn_agent(config);
    handle
        .submit(Op::UserShell {
            command: "ls".into(),
        })
        .unwrap();
    handle.submit(steer("and then?")).unwrap();
    let events = collect_task(&mut handle).await;
    shut_down(handle).await;
    let refused = events.iter().any(
        |ev| matches!(ev, CoreEvent::Warning { message } if message.contains("already running")),
    );
    assert!(refused, "{events:#?}");
    assert!(provider.requests().is_empty());
}

#[tokio::test]
async fn a_steered_prompt_is_recorded_and_a_resumed_transcript_shows_it_as_a_prompt() {
    use corvid_core::agent::spawn_agent_observed;
    use corvid_core::session::{SessionStore, spawn_resumed};

    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let ran = Ran::default();
    let provider = turns(vec![shell("c1", "make")]);
    let mut config = test_config(Arc::new(provider.clone()), Vec::new());
    config.tools = tools_with_fake_shell(&ran);
    config.approval_mode = ApprovalMode::Default;
    let recorder = Arc::new(store.create(cwd.path(), "steer-1", "main-model").unwrap());
    let mut handle = spawn_agent_observed(config, recorder);
    prompt(&handle, "look around");
    read_until(&mut handle, |ev| {
        matches!(ev, CoreEvent::PermissionRequested { .. })
    })
    .await;
    handle.submit(steer("skip target/")).unwrap();
    handle
        .submit(Op::Approval {
            call_id: "c1".into(),
            decision: ApprovalDecision::AllowOnce,
        })
        .unwrap();
    collect_task(&mut handle).await;
    shut_down(handle).await;

    let loaded = store.load(cwd.path(), "steer-1").unwrap();
    let resumed = spawn_resumed(
        test_config(Arc::new(ScriptedProvider::new(Vec::new())), Vec::new()),
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
    assert_eq!(prompts, vec!["look around", "skip target/"]);
    shut_down(resumed.handle).await;
}
