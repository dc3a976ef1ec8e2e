//! `run_shell_command`: output, exit status, caps, and killing the whole process group.

mod common;

use std::path::Path;
use std::time::Duration;

use common::Workspace;
use corvid_protocol::{ApprovalPreview, ToolDisplay, ToolKind};
use corvid_tools::{ApprovalNeed, RunShellCommand, Tool};
use pretty_assertions::assert_eq;
use serde_json::json;

/// Starts two background sleepers and a foreground wait, recording every pid (the shell's
/// own pid, which is also the process group id, comes last).
const SLEEPERS: &str =
    "sleep 30 & echo $! >> pids; sleep 30 & echo $! >> pids; echo $$ >> pids; wait";

/// Whether `pid` is a live process (zombies count as gone: they no longer run).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().next());
            !matches!(state, Some("Z" | "X"))
        }
    }
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

async fn wait_for_pids(file: &Path) -> Vec<i32> {
    let read = || {
        std::fs::read_to_string(file)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect::<Vec<i32>>()
    };
    wait_until("the shell to record its pids", || read().len() == 3).await;
    read()
}

async fn assert_all_gone(pids: &[i32]) {
    for &pid in pids {
        wait_until(&format!("process {pid} to be killed"), || !alive(pid)).await;
    }
}

#[tokio::test]
async fn stdout_stderr_and_the_exit_code_are_reported() {
    let ws = Workspace::new();

    let out = ws
        .run_ok(
            &RunShellCommand,
            json!({"command": "echo out; echo err >&2; exit 3", "description": "demo"}),
        )
        .await;

    assert_eq!(out.text, "Exit code: 3\n\nStdout:\nout\n\nStderr:\nerr");
    assert_eq!(
        out.raw,
        json!({
            "command": "echo out; echo err >&2; exit 3",
            "description": "demo",
            "exit_code": 3,
            "signal": null,
            "timed_out": false,
            "stdout": "out\n",
            "stderr": "err\n",
            "truncated": false,
        })
    );
}

#[tokio::test]
async fn the_command_runs_in_the_working_directory() {
    let ws = Workspace::new();
    let out = ws.run_ok(&RunShellCommand, json!({"command": "pwd"})).await;
    assert_eq!(out.raw["stdout"], json!(format!("{}\n", ws.root.display())));
}

#[tokio::test]
async fn a_command_killed_by_a_signal_reports_the_signal() {
    let ws = Workspace::new();
    let out = ws
        .run_ok(&RunShellCommand, json!({"command": "kill -9 $$"}))
        .await;
    assert_eq!(out.text, "Killed by signal 9 (SIGKILL)\n\n(no output)");
    assert_eq!(out.raw["signal"], json!("SIGKILL"));
    assert_eq!(out.raw["exit_code"], json!(null));
}

#[tokio::test]
async fn long_output_is_truncated_in_the_middle_with_a_note() {
    let ws = Workspace::new();
    let out = ws
        .run_ok(
            &RunShellCommand,
            json!({"command": "head -c 100000 /dev/zero | tr '\\0' a; echo; echo END"}),
        )
        .await;
    assert!(
        out.text
            .contains("\n[... 67237 bytes of output omitted ...]\n")
    );
    assert!(out.text.ends_with("aaa\nEND"));
    assert!(out.text.len() < 34 * 1024);
    assert_eq!(out.raw["truncated"], json!(true));
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let ws = Workspace::new();

    let out = ws
        .run_ok(
            &RunShellCommand,
            json!({"command": format!("{SLEEPERS}"), "timeout_ms": 1500}),
        )
        .await;

    assert_eq!(
        out.text,
        "Timed out after 1500 ms; the command and its child processes were killed.\n\n(no output)"
    );
    assert_eq!(out.raw["timed_out"], json!(true));
    let pids = wait_for_pids(&ws.path("pids")).await;
    assert_all_gone(&pids).await;
}

#[tokio::test]
async fn cancelling_kills_the_whole_process_group() {
    let ws = Workspace::new();
    let ctx = ws.ctx();
    let running = tokio::spawn(RunShellCommand.execute(json!({"command": SLEEPERS}), ctx.clone()));

    let pids = wait_for_pids(&ws.path("pids")).await;
    assert!(pids.iter().all(|&pid| alive(pid)));
    ctx.cancel.cancel();
    let result = running.await.unwrap();

    assert_eq!(
        result.unwrap_err().message,
        "cancelled: the command and its child processes were killed"
    );
    assert_all_gone(&pids).await;
}

#[tokio::test]
async fn dropping_a_running_call_kills_the_whole_process_group() {
    let ws = Workspace::new();
    let running = tokio::spawn(RunShellCommand.execute(json!({"command": SLEEPERS}), ws.ctx()));

    let pids = wait_for_pids(&ws.path("pids")).await;
    running.abort();
    let _ = running.await;

    assert_all_gone(&pids).await;
}

#[tokio::test]
async fn an_already_cancelled_call_runs_nothing() {
    let ws = Workspace::new();
    let ctx = ws.ctx();
    ctx.cancel.cancel();

    let result = RunShellCommand
        .execute(json!({"command": "touch ran"}), ctx)
        .await;

    assert!(result.is_err());
    assert!(!ws.path("ran").exists());
}

#[tokio::test]
async fn shell_commands_need_execute_approval_and_valid_arguments() {
    let ws = Workspace::new();
    let ctx = ws.ctx();
    assert_eq!(
        RunShellCommand
            .approval(&json!({"command": "cargo test"}), &ctx)
            .await,
        ApprovalNeed::Execute(ApprovalPreview::Command {
            command: "cargo test".to_owned()
        })
    );
    assert_eq!(
        RunShellCommand.display(&json!({"command": "cargo test"}), &ctx),
        ToolDisplay {
            title: "Run cargo test".to_owned(),
            kind: ToolKind::Execute,
            locations: vec![],
        }
    );
    assert_eq!(
        ws.run_err(&RunShellCommand, json!({})).await,
        "invalid arguments for run_shell_command: missing field `command`"
    );
    assert_eq!(
        ws.run_err(
            &RunShellCommand,
            json!({"command": "true", "timeout_ms": 0})
        )
        .await,
        "timeout_ms must be at least 1"
    );
}
