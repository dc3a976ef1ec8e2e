//! Runs one hook handler: a user's command line under `bash -c`, fed a JSON document on
//! stdin, in its own process group so a timeout (or its end) kills everything it started,
//! with stdout and stderr each capped. What the output means is decided by `core::hooks`;
//! this module only runs the process and reports how it ended.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

/// The characters of stdout and of stderr a handler's report keeps (Claude Code's cap).
pub const HOOK_OUTPUT_CHARS: usize = 10_000;

/// One handler to run.
#[derive(Debug, Clone, PartialEq)]
pub struct HookCommand {
    /// The command line, run as `bash -c COMMAND` (Claude Code runs hooks through a shell).
    pub command: String,
    /// The JSON document written to stdin.
    pub stdin: Vec<u8>,
    /// The working folder (the project).
    pub cwd: PathBuf,
    /// The complete environment: the process starts with nothing else, so the caller
    /// decides whether secrets reach it.
    pub env: Vec<(OsString, OsString)>,
    pub timeout: Duration,
}

/// How a handler ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookExit {
    /// It exited with this code.
    Code(i32),
    /// A signal ended it (a crash, or someone else killed it).
    Signal(i32),
    /// It ran past its timeout and its process group was killed.
    TimedOut,
    /// It could not be started at all.
    SpawnFailed(String),
}

/// What one handler did.
#[derive(Debug, Clone, PartialEq)]
pub struct HookRun {
    pub exit: HookExit,
    /// stdout, at most [`HOOK_OUTPUT_CHARS`] characters.
    pub stdout: String,
    /// stderr, at most [`HOOK_OUTPUT_CHARS`] characters.
    pub stderr: String,
    /// Some output was dropped to stay within the cap.
    pub truncated: bool,
    pub duration: Duration,
}

/// Runs `hook` to its end or its timeout. Whatever it left running in its process group is
/// killed either way, so a handler cannot outlive its event.
pub async fn run_hook(hook: HookCommand) -> HookRun {
    let started = Instant::now();
    let spawned = Command::new("bash")
        .arg("-c")
        .arg(&hook.command)
        .current_dir(&hook.cwd)
        .env_clear()
        .envs(hook.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            return HookRun {
                exit: HookExit::SpawnFailed(e.to_string()),
                stdout: String::new(),
                stderr: String::new(),
                truncated: false,
                duration: started.elapsed(),
            };
        }
    };
    let group = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw);
    if let Some(mut stdin) = child.stdin.take() {
        let input = hook.stdin.clone();
        // A handler that never reads its input must not block this write: it runs on its own.
        tokio::spawn(async move {
            let _ = stdin.write_all(&input).await;
        });
    }
    let stdout = child.stdout.take().map(|s| tokio::spawn(read_capped(s)));
    let stderr = child.stderr.take().map(|s| tokio::spawn(read_capped(s)));
    let exit = match tokio::time::timeout(hook.timeout, child.wait()).await {
        Ok(Ok(status)) => {
            use std::os::unix::process::ExitStatusExt;
            match (status.code(), status.signal()) {
                (Some(code), _) => HookExit::Code(code),
                (None, Some(signal)) => HookExit::Signal(signal),
                (None, None) => HookExit::Signal(0),
            }
        }
        Ok(Err(e)) => HookExit::SpawnFailed(e.to_string()),
        Err(_) => HookExit::TimedOut,
    };
    // Ends whatever the handler left behind (and the handler itself after a timeout), so
    // the pipes close and the reads below finish. ESRCH (nothing left) is the usual case.
    if let Some(group) = group {
        let _ = killpg(group, Signal::SIGKILL);
    }
    if exit == HookExit::TimedOut {
        let _ = child.wait().await;
    }
    let (stdout, out_cut) = join_read(stdout).await;
    let (stderr, err_cut) = join_read(stderr).await;
    HookRun {
        exit,
        stdout,
        stderr,
        truncated: out_cut || err_cut,
        duration: started.elapsed(),
    }
}

async fn join_read(task: Option<tokio::task::JoinHandle<(String, bool)>>) -> (String, bool) {
    match task {
        Some(task) => task.await.unwrap_or_default(),
        None => (String::new(), false),
    }
}

/// Reads a stream to its end, keeping the first [`HOOK_OUTPUT_CHARS`] characters and
/// draining the rest (a handler blocked on a full pipe would otherwise never end).
async fn read_capped(mut stream: impl AsyncRead + Unpin) -> (String, bool) {
    // A character is at most 4 bytes, so this many bytes always hold the cap.
    let keep = HOOK_OUTPUT_CHARS * 4;
    let mut kept = Vec::new();
    let mut dropped = false;
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = keep.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
                dropped |= n > room;
            }
        }
    }
    let text = String::from_utf8_lossy(&kept);
    let mut chars = text.char_indices();
    match chars.nth(HOOK_OUTPUT_CHARS) {
        Some((cut, _)) => (text[..cut].to_owned(), true),
        None => (text.into_owned(), dropped),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn hook(command: &str, timeout: Duration) -> HookCommand {
        HookCommand {
            command: command.to_owned(),
            stdin: br#"{"hook_event_name":"Stop"}"#.to_vec(),
            cwd: std::env::temp_dir(),
            env: vec![("PATH".into(), std::env::var_os("PATH").unwrap())],
            timeout,
        }
    }

    #[tokio::test]
    async fn a_handler_reads_its_input_and_reports_its_exit_code_and_both_streams() {
        let run = run_hook(hook("cat; echo oops >&2; exit 3", Duration::from_secs(60))).await;
        assert_eq!(run.exit, HookExit::Code(3));
        assert_eq!(run.stdout, r#"{"hook_event_name":"Stop"}"#);
        assert_eq!(run.stderr, "oops\n");
    }

    #[tokio::test]
    async fn a_timeout_kills_the_handler_and_what_it_started_in_the_background() {
        let run = run_hook(hook(
            "sleep 1000 & echo started; wait",
            Duration::from_millis(300),
        ))
        .await;
        assert_eq!(run.exit, HookExit::TimedOut);
        // The read ended, so the background `sleep` holding stdout is gone too.
        assert_eq!(run.stdout, "started\n");
    }

    #[tokio::test]
    async fn output_past_the_cap_is_cut_and_flagged() {
        let run = run_hook(hook(
            "head -c 50000 /dev/zero | tr '\\0' x",
            Duration::from_secs(60),
        ))
        .await;
        assert_eq!(run.stdout.chars().count(), HOOK_OUTPUT_CHARS);
        assert!(run.truncated);
    }

    #[tokio::test]
    async fn a_missing_command_exits_127_with_bash_saying_so() {
        let run = run_hook(hook("no-such-hook-command-xyz", Duration::from_secs(60))).await;
        assert_eq!(run.exit, HookExit::Code(127));
        assert!(run.stderr.contains("not found"), "{}", run.stderr);
    }
}
