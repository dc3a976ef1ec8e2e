//! Background processes seen from the session: they end with it, and a compaction reminds
//! the model of them. Real processes; every wait polls towards a deadline.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::approvals::{one_call, turns};
use common::scripted::{ScriptedProvider, answer};
use common::{collect_task, run_task, shut_down, test_config};
use corvid_core::agent::{AgentHandle, spawn_agent};
use corvid_protocol::{CoreEvent, Op};
use corvid_tools::shell::background::ProcessState;
use corvid_tools::shell::{BackgroundLimits, BackgroundProcesses};
use serde_json::json;

fn agent(dir: &std::path::Path, provider: ScriptedProvider) -> AgentHandle {
    let mut config = test_config(Arc::new(provider), Vec::new());
    config.tools = corvid_tools::builtin_tools();
    config.cwd = dir.to_owned();
    config.fs = Arc::new(corvid_tools::LocalFs);
    // A small window, so `/compress` keeps only the last turns.
    config.policy.context = corvid_core::context::ContextPolicy {
        window_override: Some(1_000),
        auto_compact: false,
        ..Default::default()
    };
    config.policy.shell.background = Some(Arc::new(BackgroundProcesses::new(
        BackgroundLimits::default(),
    )));
    spawn_agent(config)
}

fn start_in_background(id: &str, command: &str) -> Vec<common::scripted::Step> {
    one_call(
        id,
        "run_shell_command",
        json!({"command": command, "run_in_background": true}),
    )
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().next());
        !matches!(state, Some("Z" | "X"))
    })
}

async fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn ending_the_session_kills_its_background_processes() {
    let dir = tempfile::tempdir().unwrap();
    let provider = turns(vec![start_in_background(
        "c1",
        "sleep 300 & echo $! > pid; exec sleep 301",
    )]);
    let mut handle = agent(dir.path(), provider);
    let events = run_task(&mut handle, "start a server").await;
    assert!(
        events.iter().any(|e| matches!(e,
            CoreEvent::ToolFinished { output, .. } if output.text.starts_with("Started in the background as bg-1.")
        )),
        "{events:#?}"
    );
    let background = handle.background().unwrap();
    let pid_file = dir.path().join("pid");
    wait_until("the child to record its pid", || {
        std::fs::read_to_string(&pid_file).is_ok_and(|s| s.ends_with('\n'))
    })
    .await;
    let child: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(background.running(), 1);
    assert!(alive(child));

    shut_down(handle).await;

    wait_until("the background child to die with the session", || {
        !alive(child)
    })
    .await;
    wait_until("the shell to be recorded as killed", || {
        background.list()[0].state != ProcessState::Running
    })
    .await;
}

#[tokio::test]
async fn after_a_compaction_the_model_is_reminded_what_runs_in_the_background() {
    let dir = tempfile::tempdir().unwrap();
    let mut script = vec![start_in_background("c1", "exec sleep 300")];
    script.push(answer("started it"));
    script.push(answer("noted"));
    script.push(answer("noted again"));
    script.push(answer("the summary of the work"));
    let provider = turns(script);
    let mut handle = agent(dir.path(), provider);
    run_task(&mut handle, "start a watcher").await;
    // Enough conversation that a summary is worth it.
    run_task(&mut handle, &"a long remark ".repeat(500)).await;
    run_task(&mut handle, &"another long remark ".repeat(500)).await;

    handle.submit(Op::Compact).unwrap();
    let events = collect_task(&mut handle).await;

    let summary = events
        .iter()
        .find_map(|e| match e {
            CoreEvent::Compacted { summary, .. } => Some(summary.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no compaction: {events:#?}"));
    assert!(
        summary.ends_with(
            "Background processes of this session (read with shell_output, stop with \
             kill_shell):\n- bg-1 running: exec sleep 300"
        ),
        "{summary}"
    );
    let background = handle.background().unwrap();
    shut_down(handle).await;
    wait_until("the watcher to die with the session", || {
        background.running() == 0
    })
    .await;
}
