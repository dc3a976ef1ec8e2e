//! `!command`: the user's own command runs through the built-in shell tool as a task of its
//! own, shows as a card, and its output reaches the model with the next prompt.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::scripted::*;
use common::{collect_task, run_task, test_config};
use corvid_core::agent::spawn_agent;
use corvid_protocol::{CoreEvent, Message, Op, StopReason, ToolStatus};
use pretty_assertions::assert_eq;

#[tokio::test]
async fn bang_echo_hi_adds_its_output_to_the_conversation_the_model_sees_next() {
    let dir = tempfile::tempdir().unwrap();
    let provider = ScriptedProvider::new(vec![answer("It printed hi.")]);
    let mut config = test_config(Arc::new(provider.clone()), Vec::new());
    config.tools = corvid_tools::builtin_tools();
    config.cwd = dir.path().to_owned();
    config.fs = Arc::new(corvid_tools::LocalFs);
    let mut handle = spawn_agent(config);
    handle
        .submit(Op::UserShell {
            command: "echo hi".into(),
        })
        .unwrap();
    let events = collect_task(&mut handle).await;
    let finished: Vec<(String, ToolStatus, String)> = events
        .iter()
        .filter_map(|e| match e {
            CoreEvent::ToolFinished {
                tool_name,
                status,
                output,
                ..
            } => Some((tool_name.clone(), *status, output.text.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(finished.len(), 1, "{events:#?}");
    assert_eq!(
        (finished[0].0.as_str(), finished[0].1),
        ("run_shell_command", ToolStatus::Completed)
    );
    assert!(finished[0].2.contains("hi"), "{finished:?}");
    assert!(matches!(
        events.last(),
        Some(CoreEvent::TaskFinished {
            stop_reason: StopReason::EndTurn,
            error: None,
            ..
        })
    ));
    // Nothing went to the model for the command itself.
    assert_eq!(provider.requests().len(), 0);

    run_task(&mut handle, "what did it print?").await;
    let messages = &provider.requests()[0].messages;
    assert_eq!(
        messages[0],
        Message::user_text(format!(
            "I ran this shell command myself:\n$ echo hi\n{}",
            finished[0].2
        ))
    );
    assert_eq!(messages[1], Message::user_text("what did it print?"));
}
