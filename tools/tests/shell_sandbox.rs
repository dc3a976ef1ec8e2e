//! `run_shell_command` under the OS sandbox: what a confined command may write and reach.
//!
//! Workspaces live under Cargo's target tmp dir, not `/tmp`: temp dirs are writable in
//! `workspace-write`, so "outside the workspace" must be somewhere else.

#![allow(clippy::unwrap_used, clippy::print_stderr, clippy::print_stdout)]

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

/// Fails the test loudly where the sandbox cannot run (CI's kernel has Landlock).
fn require_landlock() {
    if let Err(why) = corvid_sandbox::supported() {
        panic!("the shell sandbox is unavailable here, so this test cannot run: {why}");
    }
}

/// Polls for `path` to exist, for files a background process writes when it is done.
async fn wait_for_file(path: &Path) -> String {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            return text;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {}",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Set for the copy of this test binary that plays corvid in a terminal of its own: the
/// workspace its sandboxed command runs in.
const PLAY_CORVID_IN_A_TERMINAL: &str = "CORVID_TEST_PLAY_CORVID_IN_A_TERMINAL";

/// Set for the copies of this test binary the sandboxed command runs: the path of the
/// terminal (corvid's) they try to type into.
const INJECT_INTO: &str = "CORVID_TEST_INJECT_INTO";

/// `ioctl(fd, request, &byte)` as the attacker makes it: `ok`, or the errno's name.
fn try_ioctl(fd: &impl std::os::fd::AsRawFd, request: libc::Ioctl, byte: u8) -> String {
    // SAFETY: both requests read one byte from the pointer, which points at `byte`.
    #[allow(unsafe_code)]
    let ret = unsafe { libc::ioctl(fd.as_raw_fd(), request, &raw const byte) };
    if ret == 0 {
        "ok".to_owned()
    } else {
        format!("{:?}", nix::errno::Errno::last())
    }
}

/// In the copies the sandboxed command starts, tries every way to type into corvid's terminal
/// and reports each outcome on stdout; everywhere else it does nothing.
#[test]
fn helper_tries_to_inject_keystrokes() {
    let Some(target) = std::env::var_os(INJECT_INTO) else {
        return;
    };
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // Field 7 (the 5th after the command name) is the controlling terminal's device number.
    let tty_nr = stat.rsplit(')').next().unwrap().split_whitespace().nth(4);
    println!("ATTACK tty_nr={}", tty_nr.unwrap());
    let rw = |path: &Path| {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
    };
    match rw(Path::new("/dev/tty")) {
        Ok(tty) => println!(
            "ATTACK /dev/tty open, TIOCSTI {}",
            try_ioctl(&tty, libc::TIOCSTI, b'y')
        ),
        Err(e) => println!("ATTACK /dev/tty refused: {e}"),
    }
    match rw(Path::new(&target)) {
        Ok(tty) => {
            println!(
                "ATTACK terminal TIOCSTI {}",
                try_ioctl(&tty, libc::TIOCSTI, b'y')
            );
            // 3 is TIOCL_PASTESEL: paste the console selection as input.
            println!(
                "ATTACK terminal TIOCLINUX {}",
                try_ioctl(&tty, libc::TIOCLINUX, 3)
            );
        }
        Err(e) => println!("ATTACK terminal refused: {e}"),
    }
}

/// In the copy started by `sandboxed_command_cannot_inject_keystrokes`, which owns a terminal
/// as its controlling terminal, runs a sandboxed command that tries to type into it, in the
/// foreground and from a process it leaves behind.
#[tokio::test]
async fn helper_plays_corvid_in_a_terminal() {
    let Some(workspace) = std::env::var_os(PLAY_CORVID_IN_A_TERMINAL) else {
        return;
    };
    // Without a controlling terminal here the test would prove nothing.
    std::fs::File::open("/dev/tty").expect("the helper has a controlling terminal");
    let exe = std::env::current_exe().unwrap();
    let attack = format!(
        "{} --exact helper_tries_to_inject_keystrokes --nocapture",
        exe.display()
    );
    let command =
        format!("{attack} > fg.txt 2>&1; ( {attack} > bg.part 2>&1; mv bg.part bg.txt ) &");
    let out = run(
        ctx(Path::new(&workspace), SandboxLevel::WorkspaceWrite),
        &command,
    )
    .await;
    assert_eq!(out.raw["exit_code"], json!(0), "{}", out.text);
    wait_for_file(&Path::new(&workspace).join("bg.txt")).await;
}

#[tokio::test]
async fn sandboxed_command_cannot_inject_keystrokes() {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;

    require_landlock();
    let d = dirs();
    let pty = nix::pty::openpty(None, None).unwrap();
    let terminal = std::fs::read_link(format!("/proc/self/fd/{}", pty.slave.as_raw_fd())).unwrap();
    // Raw mode, so a single injected byte shows as pending input (a canonical terminal counts
    // only finished lines).
    let mut raw = nix::sys::termios::tcgetattr(&pty.slave).unwrap();
    nix::sys::termios::cfmakeraw(&mut raw);
    nix::sys::termios::tcsetattr(&pty.slave, nix::sys::termios::SetArg::TCSANOW, &raw).unwrap();
    let mut corvid = std::process::Command::new(std::env::current_exe().unwrap());
    corvid
        .args([
            "--exact",
            "helper_plays_corvid_in_a_terminal",
            "--nocapture",
        ])
        .env(PLAY_CORVID_IN_A_TERMINAL, &d.workspace)
        .env(INJECT_INTO, &terminal)
        .stdin(std::process::Stdio::from(pty.slave.try_clone().unwrap()));
    // SAFETY: setsid and ioctl are async-signal-safe; the child makes the terminal on its
    // stdin its controlling terminal, as a shell started in a terminal has it.
    #[allow(unsafe_code)]
    unsafe {
        corvid.pre_exec(|| {
            nix::unistd::setsid()?;
            if libc::ioctl(0, libc::TIOCSCTTY, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let status = corvid.status().unwrap();
    assert!(status.success(), "the helper playing corvid failed");

    for report in ["fg.txt", "bg.txt"] {
        let report = std::fs::read_to_string(d.workspace.join(report)).unwrap();
        let attack: Vec<&str> = report.lines().filter(|l| l.starts_with("ATTACK")).collect();
        assert_eq!(attack.len(), 4, "{report}");
        assert_eq!(attack[0], "ATTACK tty_nr=0", "{report}");
        assert!(attack[1].starts_with("ATTACK /dev/tty refused"), "{report}");
        assert_eq!(attack[2], "ATTACK terminal TIOCSTI EPERM", "{report}");
        assert_eq!(attack[3], "ATTACK terminal TIOCLINUX EPERM", "{report}");
    }
    // Nothing reached the terminal's input.
    let mut pending: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int to the pointer, which points at `pending`.
    #[allow(unsafe_code)]
    let ret = unsafe { libc::ioctl(pty.slave.as_raw_fd(), libc::FIONREAD, &raw mut pending) };
    assert_eq!((ret, pending), (0, 0));
}

#[tokio::test]
async fn sandbox_cannot_create_a_corvid_folder_at_any_depth() {
    require_landlock();
    let d = dirs();
    let sandboxed = ctx(&d.workspace, SandboxLevel::WorkspaceWrite);

    let out = run(
        sandboxed.clone(),
        "mkdir -p a/b/.corvid && echo '{\"mcpServers\": {}}' > a/b/.corvid/settings.json; \
         mkdir .vscode; mkdir -p x/.git/hooks; true",
    )
    .await;

    // Created during the command: renamed out of the way, contents kept, and reported.
    for created in ["a/b/.corvid", ".vscode", "x/.git"] {
        assert!(
            d.workspace.join(created).symlink_metadata().is_err(),
            "{created} is still there: {}",
            out.text
        );
    }
    let kept: Vec<PathBuf> = std::fs::read_dir(d.workspace.join("a/b"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(kept.len(), 1);
    assert!(kept[0].join("settings.json").is_file());
    assert!(
        out.text.contains("a sandbox violation") && out.text.contains("it created a/b/.corvid"),
        "{}",
        out.text
    );
    assert_eq!(
        out.raw["sandbox_violations"]["created"]
            .as_array()
            .unwrap()
            .len(),
        3,
        "{}",
        out.raw
    );

    // One that existed before the command, deep down, stays read-only, and its folder cannot
    // gain another; the rest of that folder stays writable.
    let nested_git = d.workspace.join("sub/old/.git");
    std::fs::create_dir_all(&nested_git).unwrap();
    std::fs::write(nested_git.join("config"), "[core]\n").unwrap();
    std::fs::create_dir_all(d.workspace.join("sub/old/src")).unwrap();
    let out = run(
        sandboxed,
        "echo '[core] fsmonitor = evil' >> sub/old/.git/config; touch sub/old/.envrc; \
         echo made > sub/old/src/file; true",
    )
    .await;

    assert_eq!(
        std::fs::read_to_string(nested_git.join("config")).unwrap(),
        "[core]\n"
    );
    assert!(!d.workspace.join("sub/old/.envrc").exists(), "{}", out.text);
    assert_eq!(
        std::fs::read_to_string(d.workspace.join("sub/old/src/file")).unwrap(),
        "made\n"
    );
}

#[tokio::test]
async fn sandbox_cannot_write_corvid_home_inside_the_workspace() {
    require_landlock();
    let d = dirs();
    // `$CORVID_HOME` inside the workspace, and another in a temp dir (which is writable).
    let inside = d.workspace.join("home");
    let in_tmp = tempfile::tempdir_in("/tmp").unwrap();
    let in_tmp = in_tmp.path().canonicalize().unwrap();
    for home in [&inside, &in_tmp] {
        std::fs::create_dir_all(home).unwrap();
        std::fs::write(home.join("settings.json"), "{}").unwrap();
    }
    // Its folder cannot gain entries any more (Landlock grants around it), but existing files
    // stay writable.
    std::fs::write(d.workspace.join("other.txt"), "old\n").unwrap();
    for home in [&inside, &in_tmp] {
        let mut sandboxed = ctx(&d.workspace, SandboxLevel::WorkspaceWrite);
        sandboxed.shell.keep_read_only = vec![home.clone()];
        let out = run(
            sandboxed,
            &format!(
                "echo '{{\"tools\": {{\"sandbox\": \"off\"}}}}' > {home}/settings.json; \
                 mkdir {home}/agents; echo ok > other.txt && t=$(mktemp) && echo tmp > \"$t\" \
                 && cat \"$t\"",
                home = home.display()
            ),
        )
        .await;

        assert_eq!(
            std::fs::read_to_string(home.join("settings.json")).unwrap(),
            "{}"
        );
        assert!(!home.join("agents").exists());
        // The rest of the workspace and a temp dir stay writable.
        assert_eq!(out.raw["stdout"], json!("tmp\n"), "{}", out.text);
        assert_eq!(
            std::fs::read_to_string(d.workspace.join("other.txt")).unwrap(),
            "ok\n"
        );
    }
}

/// Set for the copy of this test binary that plays corvid in
/// `the_private_tmpdir_is_removed_when_corvid_exits`: its workspace, in a temp dir.
const PLAY_CORVID_IN_TMP: &str = "CORVID_TEST_PLAY_CORVID_IN_TMP";

/// In the copy started by that test, records the private `TMPDIR` a sandboxed command gets,
/// then waits to be killed; everywhere else it does nothing.
#[tokio::test]
async fn helper_plays_corvid_with_a_private_tmpdir() {
    let Some(workspace) = std::env::var_os(PLAY_CORVID_IN_TMP) else {
        return;
    };
    let out = run(
        ctx(Path::new(&workspace), SandboxLevel::WorkspaceWrite),
        "touch \"$TMPDIR/used\" && echo \"$TMPDIR\" > tmpdir.part && mv tmpdir.part tmpdir",
    )
    .await;
    assert_eq!(out.raw["exit_code"], json!(0), "{}", out.text);
    std::future::pending::<()>().await;
}

#[tokio::test]
async fn the_private_tmpdir_is_removed_when_corvid_exits() {
    require_landlock();
    let base = tempfile::tempdir_in("/tmp").unwrap();
    let workspace = base.path().canonicalize().unwrap();
    // Killed on drop, so a failing test does not leave it waiting forever.
    let mut corvid = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "helper_plays_corvid_with_a_private_tmpdir"])
        .env(PLAY_CORVID_IN_TMP, &workspace)
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let tmpdir = PathBuf::from(wait_for_file(&workspace.join("tmpdir")).await.trim());
    assert!(tmpdir.join("used").is_file());
    assert!(!tmpdir.starts_with(&workspace));

    corvid.kill().await.unwrap();

    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while tmpdir.exists() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} outlived its corvid",
            tmpdir.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
