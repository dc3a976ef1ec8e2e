//! Background processes with the real binary against the loopback mock provider: they end
//! with the run, and nothing they started (children in sessions of their own included)
//! survives a `kill -9` of corvid: the shell watchdog finds them by their owner marker.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::time::Duration;

use common::{Sandbox, assert_success, run, text_turn, turn};
use corvid_testkit::{MockServer, ScriptedResponse};
use serde_json::json;

/// A background command leaving a child in a session of its own, one under nohup, and the
/// shell itself (replaced by a sleep), each pid on a line of `bg.pid`.
const ESCAPING: &str = "setsid sleep 300 & echo $! > bg.pid; \
     nohup sleep 301 >/dev/null 2>&1 & echo $! >> bg.pid; \
     echo $$ >> bg.pid; exec sleep 302";

fn start_in_background() -> ScriptedResponse {
    let args = json!({"command": ESCAPING, "run_in_background": true}).to_string();
    ScriptedResponse::sse(turn(
        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_bg",
               "type": "function", "function": {"name": "run_shell_command",
               "arguments": args}}]}),
        "tool_calls",
    ))
}

fn corvid(sb: &Sandbox, server: &MockServer) -> tokio::process::Command {
    let mut cmd = sb.against(
        server,
        "sk-test",
        &["-p", "start the server", "--approval-mode", "yolo"],
    );
    cmd.env("OPENAI_MODEL", "mock-model");
    cmd
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
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The three pids the command records, once it recorded them all.
async fn recorded_pids(project: &Path) -> Vec<i32> {
    let file = project.join("bg.pid");
    let read = || -> Vec<i32> {
        std::fs::read_to_string(&file)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    };
    wait_until("the background command to record its pids", || {
        read().len() == 3
    })
    .await;
    read()
}

async fn assert_all_gone(pids: &[i32]) {
    for &pid in pids {
        wait_until(&format!("process {pid} to be gone"), || !alive(pid)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_processes_end_when_the_headless_run_ends() {
    let server = MockServer::start().await;
    server.push(start_in_background());
    server.push(text_turn("It runs."));
    let sb = Sandbox::new();

    let out = run(corvid(&sb, &server)).await;

    assert_success(&out);
    let requests = server.requests();
    let result = String::from_utf8_lossy(&requests[1].raw_body).into_owned();
    assert!(
        result.contains("Started in the background as bg-1."),
        "{result}"
    );
    let pids = recorded_pids(sb.project_dir()).await;
    assert_all_gone(&pids).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_a_background_command_started_survives_kill_9_of_corvid() {
    let server = MockServer::start().await;
    server.push(start_in_background());
    // The model goes silent after the tool result, so corvid is busy when it is killed.
    server.push(ScriptedResponse::sse(Vec::new()).hang());
    let sb = Sandbox::new();
    let mut child = corvid(&sb, &server).spawn().unwrap();
    server.wait_for_requests(2).await;
    let pids = recorded_pids(sb.project_dir()).await;
    assert!(pids.iter().all(|&p| alive(p)), "{pids:?}");

    child.start_kill().unwrap();
    let status = child.wait().await.unwrap();

    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
    assert_all_gone(&pids).await;
}
