//! A running command's output reaches the front ends as it appears (`ToolOutputDelta`),
//! between the call's start and its finish, for the model's calls and for `!command`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::approvals::{shell, turns};
use common::invariants::check_invariants;
use common::{collect_task, run_task, test_config};
use corvid_core::agent::{AgentHandle, spawn_agent};
use corvid_protocol::{CoreEvent, Op};

/// Prints three lines with pauses far longer than the feed's interval, so each one is sent.
const SLOW_PRINTER: &str = "echo one; sleep 0.3; echo two; sleep 0.3; echo three";

fn agent(dir: &std::path::Path, provider: common::scripted::ScriptedProvider) -> AgentHandle {
    let mut config = test_config(Arc::new(provider), Vec::new());
    config.tools = corvid_tools::builtin_tools();
    config.cwd = dir.to_owned();
    config.fs = Arc::new(corvid_tools::LocalFs);
    spawn_agent(config)
}

/// The live output of `call_id`, checking it came while the call was running.
fn live_output(events: &[CoreEvent], call_id: &str) -> String {
    check_invariants(events, &["todo_write"]).unwrap();
    let mut text = String::new();
    for ev in events {
        if let CoreEvent::ToolOutputDelta {
            call_id: id,
            text: t,
        } = ev
        {
            assert_eq!(id, call_id);
            text.push_str(t);
        }
    }
    text
}

fn final_output(events: &[CoreEvent]) -> String {
    events
        .iter()
        .find_map(|ev| match ev {
            CoreEvent::ToolFinished { output, .. } => Some(output.text.clone()),
            _ => None,
        })
        .expect("a finished card")
}

#[tokio::test]
async fn a_model_called_command_shows_its_output_while_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut handle = agent(dir.path(), turns(vec![shell("c1", SLOW_PRINTER)]));
    let events = run_task(&mut handle, "run it").await;
    let live = live_output(&events, "c1");
    assert!(live.starts_with("one\n"), "{live:?}\n{events:#?}");
    assert!(live.contains("two\n"), "{live:?}");
    // The preview is what the command printed, which the result also carries.
    let result = final_output(&events);
    for line in live.lines() {
        assert!(result.contains(line), "{line:?} not in {result:?}");
    }
}

#[tokio::test]
async fn a_bang_command_shows_its_output_while_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut handle = agent(dir.path(), turns(Vec::new()));
    handle
        .submit(Op::UserShell {
            command: SLOW_PRINTER.into(),
        })
        .unwrap();
    let events = collect_task(&mut handle).await;
    let call_id = events
        .iter()
        .find_map(|ev| match ev {
            CoreEvent::ToolStarted { call_id, .. } => Some(call_id.clone()),
            _ => None,
        })
        .unwrap();
    let live = live_output(&events, &call_id);
    assert!(
        live.starts_with("one\n") && live.contains("two\n"),
        "{live:?}"
    );
}

#[tokio::test]
async fn a_silent_command_sends_no_live_output() {
    let dir = tempfile::tempdir().unwrap();
    let mut handle = agent(dir.path(), turns(vec![shell("c1", "true")]));
    let events = run_task(&mut handle, "run it").await;
    assert_eq!(live_output(&events, "c1"), "");
}
