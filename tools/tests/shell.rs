//! `run_shell_command`: output, exit status, caps, and killing the whole process group.

mod common;

use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::Workspace;
use corvid_protocol::{ApprovalPreview, ToolDisplay, ToolKind};
use corvid_tools::shell::{EnvFilter, SandboxLevel, ShellPolicy};
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
            "sandbox": "workspace-write",
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
async fn confined_shell_commands_need_sandboxed_approval_and_valid_arguments() {
    let ws = Workspace::new();
    let ctx = ws.ctx();
    assert_eq!(
        RunShellCommand
            .approval(&json!({"command": "cargo test"}), &ctx)
            .await,
        ApprovalNeed::Sandboxed(ApprovalPreview::Command {
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

#[tokio::test]
async fn shell_env_has_no_provider_keys() {
    let ws = Workspace::new();
    let mut ctx = ws.ctx();
    let vars = [
        ("OPENAI_API_KEY", "sk-openai"),
        ("ANTHROPIC_API_KEY", "sk-ant"),
        ("CUSTOM_LLM_CREDENTIAL", "sk-custom"),
        ("AWS_SECRET_ACCESS_KEY", "aws"),
        ("GITHUB_TOKEN", "ghp"),
        ("db_password", "hunter2"),
        ("SSH_AUTH_SOCK", "/run/agent"),
        ("CORP_PROXY_HOST", "proxy"),
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ("LANG", "C.UTF-8"),
    ];
    ctx.shell = ShellPolicy {
        // `model.apiKeyEnv` names CUSTOM_LLM_CREDENTIAL; the user keeps the agent socket and
        // drops the proxy.
        env: EnvFilter::new(
            &["CUSTOM_LLM_CREDENTIAL".to_owned()],
            &["SSH_AUTH_SOCK".to_owned()],
            &["CORP_*".to_owned()],
        )
        .unwrap(),
        base_env: Some(Arc::new(
            vars.iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v)))
                .collect(),
        )),
        ..ShellPolicy::default()
    };

    // bash adds PWD, SHLVL and `_`; corvid adds the run and owner markers, and the sandbox
    // names a private TMPDIR when the workspace lies in a temp dir.
    let names = "env | cut -d= -f1 \
                 | grep -vxE 'PWD|SHLVL|_|CORVID_SHELL_RUN|CORVID_SHELL_OWNER|TMPDIR' | sort";
    let out = RunShellCommand
        .execute(json!({"command": names}), ctx.clone())
        .await
        .unwrap();
    assert_eq!(out.raw["stdout"], json!("LANG\nPATH\nSSH_AUTH_SOCK\n"));

    let out = RunShellCommand
        .execute(json!({"command": "env"}), ctx)
        .await
        .unwrap();
    for (_, secret) in &vars[..6] {
        assert!(!out.text.contains(secret), "{secret} leaked: {}", out.text);
    }
}

/// An allow rule judges the line it sees: an exported function, `BASH_ENV` or `SHELLOPTS`
/// from corvid's environment must not change what that line runs.
#[tokio::test]
async fn inherited_shell_start_up_hooks_cannot_change_what_a_command_runs() {
    let ws = Workspace::new();
    let mut ctx = ws.ctx();
    let planted = ws.path("planted.sh");
    std::fs::write(&planted, "touch bash_env_ran\n").unwrap();
    let vars = [
        ("BASH_FUNC_echo%%", "() { touch function_ran; }".to_owned()),
        ("BASH_ENV", planted.display().to_string()),
        ("ENV", planted.display().to_string()),
        ("SHELLOPTS", "xtrace".to_owned()),
        ("PS4", "$(touch ps4_ran)".to_owned()),
        ("PATH", "/usr/local/bin:/usr/bin:/bin".to_owned()),
    ];
    ctx.shell = ShellPolicy {
        base_env: Some(Arc::new(
            vars.iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v)))
                .collect(),
        )),
        ..ShellPolicy::default()
    };

    let out = RunShellCommand
        .execute(json!({"command": "echo hello; ls"}), ctx)
        .await
        .unwrap();

    assert_eq!(
        out.raw["stdout"],
        json!("hello\nplanted.sh\n"),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn a_timeout_longer_than_the_user_limit_is_capped() {
    let ws = Workspace::new();
    let mut ctx = ws.ctx();
    ctx.shell_timeout = Duration::from_millis(1200);

    let out = RunShellCommand
        .execute(json!({"command": "sleep 30", "timeout_ms": 600_000}), ctx)
        .await
        .unwrap();

    assert_eq!(
        out.text,
        "Timed out after 1200 ms; the command and its child processes were killed.\n\n(no output)"
    );
}

#[tokio::test]
async fn a_setsid_child_does_not_outlive_a_cancel() {
    let ws = Workspace::new();
    let ctx = ws.ctx();
    // One child in a session of its own, one that double-forks away from the shell's tree
    // (`setsid -f`), and the shell itself.
    let command = "setsid sleep 30 & echo $! >> pids; \
                   setsid -f bash -c 'echo $$ >> pids; exec sleep 30'; \
                   echo $$ >> pids; wait";
    let running = tokio::spawn(RunShellCommand.execute(json!({"command": command}), ctx.clone()));

    let pids = wait_for_pids(&ws.path("pids")).await;
    assert!(pids.iter().all(|&pid| alive(pid)));
    ctx.cancel.cancel();
    let result = running.await.unwrap();

    assert!(result.is_err());
    assert_all_gone(&pids).await;
}

#[tokio::test]
async fn a_sandbox_the_user_turned_off_is_never_escalated() {
    let ws = Workspace::new();
    let mut ctx = ws.ctx();
    ctx.cwd = ws.path("no-such-folder");
    ctx.shell.sandbox = SandboxLevel::Off;

    assert_eq!(
        RunShellCommand
            .approval(&json!({"command": "ls"}), &ctx)
            .await,
        ApprovalNeed::Execute(ApprovalPreview::Command {
            command: "ls".to_owned()
        })
    );
}

#[tokio::test]
async fn unavailable_sandbox_escalates_the_approval() {
    let ws = Workspace::new();
    let mut ctx = ws.ctx();
    // A workspace that cannot be confined stands in for a kernel without Landlock.
    ctx.cwd = ws.path("no-such-folder");

    let need = RunShellCommand
        .approval(&json!({"command": "ls"}), &ctx)
        .await;

    assert_eq!(
        need,
        ApprovalNeed::Escalated {
            preview: ApprovalPreview::Command {
                command: "ls".to_owned()
            },
            reason: format!(
                "the shell sandbox is not available (the workspace {} is not an existing \
                 absolute folder); this command would run unconfined",
                ctx.cwd.display()
            ),
        }
    );
}

/// Set for the copy of this test binary that plays corvid in
/// `commands_and_their_background_children_die_with_corvid_under_kill_9`: the file its shell writes its pid to.
const PLAY_CORVID: &str = "CORVID_TEST_PLAY_CORVID_PIDS";

/// In the copy started by the kill -9 tests, leaves a command in the background, runs a long
/// one in the foreground and waits to be killed; everywhere else it does nothing.
#[tokio::test]
async fn helper_plays_corvid_running_a_long_command() {
    let Some(pids) = std::env::var_os(PLAY_CORVID) else {
        return;
    };
    // The pid file's folder is the workspace, so the sandboxed commands may write it.
    let ws = Workspace::new();
    let mut ctx = ws.ctx();
    ctx.cwd = Path::new(&pids).parent().unwrap().canonicalize().unwrap();
    let pids = Path::new(&pids).display();
    let background = format!("sleep 30 & echo $! >> {pids}");
    RunShellCommand
        .execute(json!({ "command": background }), ctx.clone())
        .await
        .unwrap();
    let foreground = format!("echo $$ >> {pids}; exec sleep 30");
    let _ = RunShellCommand
        .execute(json!({ "command": foreground }), ctx)
        .await;
}

#[tokio::test]
async fn commands_and_their_background_children_die_with_corvid_under_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let mut corvid = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "helper_plays_corvid_running_a_long_command"])
        .env(PLAY_CORVID, &pids)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let read = || {
        std::fs::read_to_string(&pids)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect::<Vec<i32>>()
    };
    wait_until("both commands to start", || read().len() == 2).await;
    // The background sleep (left running by a finished command) and the foreground shell.
    let pids = read();
    assert!(pids.iter().all(|&pid| alive(pid)));

    corvid.kill().unwrap();
    corvid.wait().unwrap();

    assert_all_gone(&pids).await;
}
