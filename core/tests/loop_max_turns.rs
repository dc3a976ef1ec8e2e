//! The turn limit of a task (`agent.maxTurns`, issue 14 defect 6): a model that keeps calling
//! tools is stopped with a clear final message, and the next prompt goes on.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::fake_tools::{ExecLog, FakeTool};
use common::scripted::*;
use common::{lifecycle, run_task, test_config};
use corvid_core::policy::MaxTurns;
use corvid_protocol::{CoreEvent, FinishReason, StopReason};
use pretty_assertions::assert_eq;
use serde_json::json;

fn calling(id: &str) -> Vec<Step> {
    vec![
        call(id, "read", json!({"tag": id})),
        finish(FinishReason::ToolCalls),
    ]
}

#[tokio::test]
async fn the_task_stops_at_max_turns_with_a_clear_message() {
    let log = ExecLog::default();
    let provider = ScriptedProvider::new((1..=3).map(|i| calling(&format!("c{i}"))).collect());
    let mut config = test_config(
        Arc::new(provider.clone()),
        vec![FakeTool::reader("read", 1, &log)],
    );
    config.policy.max_turns = MaxTurns(3);
    let mut handle = corvid_core::agent::spawn_agent(config);
    let events = run_task(&mut handle, "loop forever").await;

    let turns: Vec<String> = lifecycle(&events)
        .into_iter()
        .filter(|l| l.starts_with("turn ") || l.starts_with("task_finished"))
        .collect();
    assert_eq!(
        turns,
        vec![
            "turn 1 main-model",
            "turn 2 main-model",
            "turn 3 main-model",
            "task_finished MaxTurns",
        ]
    );
    assert_eq!(log.tags(), vec!["c1", "c2", "c3"]);
    let tail: Vec<CoreEvent> = events[events.len() - 2..].to_vec();
    assert_eq!(
        tail,
        vec![
            CoreEvent::Warning {
                message: "stopped after 3 model turns (agent.maxTurns); send another prompt to \
                          continue, or raise agent.maxTurns"
                    .into(),
            },
            CoreEvent::TaskFinished {
                task_id: "test-session-1".into(),
                stop_reason: StopReason::MaxTurns,
                error: None,
                pending_summaries: 0,
            },
        ]
    );

    // Another prompt goes on from there, with every call of the stopped task answered.
    provider.push(answer("done"));
    let events = run_task(&mut handle, "go on").await;
    assert!(matches!(
        events.last(),
        Some(CoreEvent::TaskFinished {
            stop_reason: StopReason::EndTurn,
            ..
        })
    ));
    assert_eq!(provider.requests().len(), 4);
}

#[test]
fn the_default_limit_is_100_turns() {
    assert_eq!(
        corvid_core::policy::SessionPolicy::default().max_turns,
        MaxTurns(100)
    );
}
