//! `run_shell_command` under the OS sandbox: what a confined command may write and reach.
//!
//! Workspaces live under Cargo's target tmp dir, not `/tmp`: temp dirs are writable in
//! `workspace-write`, so "outside the workspace" must be somewhere else.

#![allow(clippy::unwrap_used, clippy::print_stderr)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use corvid_protocol::{ApprovalPreview, ToolOutput};
use corvid_tools::shell::SandboxLevel;
use corvid_tools::{ApprovalNeed, LocalFs, RunShellCommand, Tool, ToolContext};
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A workspace and a sibling folder outside it, both outside the temp dirs.
struct Dirs {
    _base: tempfile::TempDir,
    workspace: PathBuf,
    outside: PathBuf,
}

fn dirs() -> Dirs {
    let base = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = base.path().canonicalize().unwrap();
    let workspace = root.join("workspace");
    let outside = root.join("outside");
    std::fs::create_dir(&workspace).unwrap();
    std::fs::create_dir(&outside).unwrap();
    Dirs {
        _base: base,
        workspace,
        outside,
    }
}

/// Whether the sandbox can be tested here; says so loudly when the kernel lacks Landlock
/// (CI runs `ci_kernel_supports_landlock`, which fails there instead).
fn landlock() -> bool {
    match corvid_sandbox::supported() {
        Ok(()) => true,
        Err(why) => {
            eprintln!("\n!!! LANDLOCK UNAVAILABLE, shell sandbox test NOT RUN: {why} !!!\n");
            false
        }
    }
}

fn ctx(workspace: &Path, sandbox: SandboxLevel) -> ToolContext {
    let mut ctx = ToolContext {
        call_id: String::new(),
        cwd: workspace.to_owned(),
        fs: Arc::new(LocalFs),
        cancel: CancellationToken::new(),
        shell_timeout: Duration::from_secs(30),
        shell: Default::default(),
        live_output: None,
    };
    ctx.shell.sandbox = sandbox;
    ctx
}

async fn run(ctx: ToolContext, command: &str) -> ToolOutput {
    RunShellCommand
        .execute(json!({ "command": command }), ctx)
        .await
        .unwrap()
}

const BLOCKED_NOTE: &str = "corvid's sandbox (workspace-write) may have blocked this";

#[tokio::test]
async fn sandboxed_shell_cannot_write_outside_the_workspace() {
    if !landlock() {
        return;
    }
    let d = dirs();
    let target = d.outside.join("escaped");

    let out = run(
        ctx(&d.workspace, SandboxLevel::WorkspaceWrite),
        &format!("echo pwned > {}", target.display()),
    )
    .await;

    assert_eq!(out.raw["exit_code"], json!(1));
    assert!(
        out.raw["stderr"]
            .as_str()
            .unwrap()
            .contains("Permission denied")
    );
    assert!(out.text.contains(BLOCKED_NOTE), "{}", out.text);
    assert!(!target.exists());
}

#[tokio::test]
async fn sandboxed_shell_can_write_inside_the_workspace_and_tmp() {
    if !landlock() {
        return;
    }
    let d = dirs();
    std::fs::create_dir(d.workspace.join("src")).unwrap();

    // `mktemp` writes to the temp dir the sandbox grants: /tmp, or a private TMPDIR when the
    // workspace itself lies in a temp dir.
    let out = run(
        ctx(&d.workspace, SandboxLevel::WorkspaceWrite),
        "echo a > top.txt && echo b > src/nested.txt && mkdir made && t=$(mktemp) && \
         echo c > \"$t\" && echo ok > /dev/null && cat top.txt src/nested.txt \"$t\"",
    )
    .await;

    assert_eq!(out.text, "Exit code: 0\n\nStdout:\na\nb\nc");
    assert!(d.workspace.join("made").is_dir());
}

#[tokio::test]
async fn sandboxed_shell_cannot_write_git_config() {
    if !landlock() {
        return;
    }
    let d = dirs();
    let git = d.workspace.join(".git");
    std::fs::create_dir_all(git.join("hooks")).unwrap();
    std::fs::write(git.join("config"), "[core]\n").unwrap();
    std::fs::create_dir(d.workspace.join("src")).unwrap();
    std::fs::write(d.workspace.join("README.md"), "old\n").unwrap();

    let sandboxed = ctx(&d.workspace, SandboxLevel::WorkspaceWrite);
    let config = run(
        sandboxed.clone(),
        "printf '\\tfsmonitor = evil\\n' >> .git/config",
    )
    .await;
    let hook = run(sandboxed.clone(), "echo evil > .git/hooks/pre-commit").await;
    let corvid = run(sandboxed.clone(), "mkdir .corvid").await;
    let elsewhere = run(sandboxed, "echo new > README.md && echo x > src/x").await;

    assert_eq!(
        std::fs::read_to_string(git.join("config")).unwrap(),
        "[core]\n"
    );
    assert!(config.text.contains(BLOCKED_NOTE), "{}", config.text);
    assert_eq!(hook.raw["exit_code"], json!(1));
    assert!(!git.join("hooks/pre-commit").exists());
    assert_eq!(corvid.raw["exit_code"], json!(1));
    assert!(!d.workspace.join(".corvid").exists());
    // Everything else in the workspace stays writable.
    assert_eq!(elsewhere.raw["exit_code"], json!(0));
    assert_eq!(
        std::fs::read_to_string(d.workspace.join("README.md")).unwrap(),
        "new\n"
    );
}

#[tokio::test]
async fn sandboxed_shell_has_no_network() {
    if !landlock() {
        return;
    }
    let d = dirs();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");

    let sandboxed = run(ctx(&d.workspace, SandboxLevel::WorkspaceWrite), &connect).await;
    let unconfined = run(ctx(&d.workspace, SandboxLevel::Off), &connect).await;

    assert_eq!(sandboxed.raw["exit_code"], json!(1));
    assert!(
        sandboxed.raw["stderr"]
            .as_str()
            .unwrap()
            .contains("Operation not permitted"),
        "{}",
        sandboxed.text
    );
    assert!(sandboxed.text.contains(BLOCKED_NOTE), "{}", sandboxed.text);
    assert_eq!(unconfined.text, "Exit code: 0\n\nStdout:\nconnected");
}

#[tokio::test]
async fn read_only_sandbox_refuses_workspace_writes() {
    if !landlock() {
        return;
    }
    let d = dirs();
    let tmp = tempfile::tempdir_in("/tmp").unwrap();

    let sandboxed = ctx(&d.workspace, SandboxLevel::ReadOnly);
    let workspace = run(sandboxed.clone(), "echo x > file").await;
    let temp = run(
        sandboxed.clone(),
        &format!("echo x > {}/t", tmp.path().display()),
    )
    .await;
    let reads = run(
        sandboxed,
        "echo quiet > /dev/null && ls / > /dev/null && echo read",
    )
    .await;

    assert_eq!(workspace.raw["exit_code"], json!(1));
    assert!(
        workspace
            .text
            .contains("corvid's sandbox (read-only) may have blocked this: all writes"),
        "{}",
        workspace.text
    );
    assert!(!d.workspace.join("file").exists());
    assert_eq!(temp.raw["exit_code"], json!(1));
    assert!(!tmp.path().join("t").exists());
    assert_eq!(reads.text, "Exit code: 0\n\nStdout:\nread");
}

#[tokio::test]
async fn running_outside_the_sandbox_is_escalated_and_then_unconfined() {
    if !landlock() {
        return;
    }
    let d = dirs();
    let target = d.outside.join("allowed");
    let command = format!("echo ok > {}", target.display());
    let args = json!({"command": command, "outside_sandbox": true});
    let sandboxed = ctx(&d.workspace, SandboxLevel::WorkspaceWrite);

    let need = RunShellCommand.approval(&args, &sandboxed).await;
    let out = RunShellCommand.execute(args, sandboxed).await.unwrap();

    assert_eq!(
        need,
        ApprovalNeed::Escalated {
            preview: ApprovalPreview::Command { command },
            reason: "the model asks to run this command outside the shell sandbox, where it can \
                     write anywhere and use the network"
                .to_owned(),
        }
    );
    assert_eq!(out.raw["sandbox"], json!("off"));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "ok\n");
}
