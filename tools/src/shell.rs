//! `run_shell_command`: `bash -c` in its own process group, bounded in time and output,
//! confined by the OS sandbox and given an environment without secrets.

mod env;
mod host;
mod reap;
mod violations;
mod watchdog;

pub use corvid_sandbox::SandboxLevel;
pub use env::{EnvFilter, PROVIDER_KEYS};
pub use host::{CommandHost, HOSTED_OUTPUT_LIMIT, HostedCommand, HostedRun};

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use corvid_protocol::{ApprovalPreview, ToolDisplay, ToolKind, ToolOutput};
use corvid_sandbox::{CheckReport, Confinement};
use futures::FutureExt;
use futures::future::BoxFuture;
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::capped::CappedBuffer;
use crate::common::{one_line, parse_args, plain_display};
use crate::live_output::{LiveOutput, Utf8Chunks};
use crate::{ApprovalNeed, Tool, ToolContext, ToolError};

/// How long output is still collected after the shell exits, for background processes
/// that keep the pipes open.
const DRAIN: Duration = Duration::from_millis(300);

/// Failure messages that suggest the sandbox stopped a command (file system or network).
const BLOCKED_SIGNS: [&str; 7] = [
    "Permission denied",
    "Read-only file system",
    "Operation not permitted",
    "Could not resolve host",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Network is unreachable",
];

/// How shell commands are confined and what environment they get; fixed per session from
/// settings (`tools.sandbox`, `tools.shellEnv`).
#[derive(Debug, Clone, Default)]
pub struct ShellPolicy {
    pub sandbox: SandboxLevel,
    pub env: EnvFilter,
    /// The environment commands start from before filtering; `None` is corvid's own (tests
    /// and embedders pass theirs, since changing a running process's environment is racy).
    pub base_env: Option<Arc<Vec<(OsString, OsString)>>>,
    /// Where unconfined commands run instead of locally (the ACP client's terminals, so the
    /// editor shows them live); `None` runs everything here.
    pub host: Option<Arc<dyn CommandHost>>,
    /// Folders a sandboxed command may never write, even inside the workspace or a temp dir:
    /// `$CORVID_HOME`, whose settings decide how later commands run.
    pub keep_read_only: Vec<PathBuf>,
}

/// Runs a shell command and reports its output, exit code or signal.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunShellCommand;

#[derive(Deserialize)]
struct Args {
    command: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    /// Asks to run without the sandbox; always asked, in every approval mode.
    #[serde(default)]
    outside_sandbox: bool,
}

enum Outcome {
    Exited(std::process::ExitStatus),
    TimedOut,
    Cancelled,
}

/// Kills the command's whole process tree unless disarmed, so a dropped call leaves nothing
/// running.
struct TreeGuard {
    shell: Option<Pid>,
    marker: String,
}

impl TreeGuard {
    fn kill(&mut self) {
        if let Some(shell) = self.shell.take() {
            reap::kill_tree(shell, &self.marker);
        }
    }
}

impl Drop for TreeGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

impl Tool for RunShellCommand {
    fn name(&self) -> &'static str {
        "run_shell_command"
    }

    fn display_name(&self) -> &'static str {
        "Shell"
    }

    fn description(&self) -> &'static str {
        "Runs a command with `bash -c` in the working directory and returns its exit code, \
         stdout and stderr (long output is truncated in the middle). The command is killed \
         with all its child processes after `timeout_ms` (at most the user's limit) or when \
         the user cancels. Background processes are not waited for and their later output is \
         not captured. Unless the user turned the sandbox off, the command cannot write outside \
         the workspace and temp dirs (nor create or write .git, .corvid, .envrc, .vscode or .idea \
         anywhere) and has no network; secrets are not in its environment."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The bash command line to run."},
                "description": {"type": "string", "description": "A short explanation of what the command does, shown to the user."},
                "timeout_ms": {"type": "integer", "minimum": 1, "description": "Kill the command after this many milliseconds (default and maximum: the session's shell timeout)."},
                "outside_sandbox": {"type": "boolean", "description": "Run without the sandbox (writes anywhere, network on). The user is asked every time, whatever the approval mode; ask for it only after a sandboxed run was blocked."}
            },
            "required": ["command"]
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }

    fn mutates(&self) -> bool {
        true
    }

    fn display(&self, args: &Value, _ctx: &ToolContext) -> ToolDisplay {
        let title = match args.get("command").and_then(Value::as_str) {
            Some(command) => format!("Run {}", one_line(command, 80)),
            None => "Run command".to_owned(),
        };
        plain_display(self.kind(), title)
    }

    fn approval(&self, args: &Value, ctx: &ToolContext) -> BoxFuture<'static, ApprovalNeed> {
        let need = match parse_args::<Args>(self.name(), args) {
            Ok(args) => {
                let preview = ApprovalPreview::Command {
                    command: args.command,
                };
                match corvid_sandbox::available(ctx.shell.sandbox, &ctx.cwd) {
                    Ok(_) if args.outside_sandbox && ctx.shell.sandbox != SandboxLevel::Off => {
                        ApprovalNeed::Escalated {
                            preview,
                            reason: "the model asks to run this command outside the shell \
                                     sandbox, where it can write anywhere and use the network"
                                .to_owned(),
                        }
                    }
                    Ok(_) if ctx.shell.sandbox == SandboxLevel::Off => {
                        ApprovalNeed::Execute(preview)
                    }
                    Ok(_) => ApprovalNeed::Sandboxed(preview),
                    Err(why) => ApprovalNeed::Escalated {
                        preview,
                        reason: format!(
                            "the shell sandbox is not available ({why}); this command would run \
                             unconfined"
                        ),
                    },
                }
            }
            // Arguments that cannot be read are refused before anything is asked or run.
            Err(err) => ApprovalNeed::Refuse(err),
        };
        futures::future::ready(need).boxed()
    }

    fn execute(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        async move {
            let args: Args = parse_args("run_shell_command", &args)?;
            if args.command.trim().is_empty() {
                return Err(ToolError::new("command is empty"));
            }
            let timeout = match args.timeout_ms {
                Some(0) => return Err(ToolError::new("timeout_ms must be at least 1")),
                // The user's limit bounds what the model may ask for.
                Some(ms) => Duration::from_millis(ms).min(ctx.shell_timeout),
                None => ctx.shell_timeout,
            };
            // Outside the sandbox, or without one, only after the escalated question was
            // answered (it is asked in every mode).
            let confinement = if args.outside_sandbox {
                Confinement::unconfined()
            } else {
                // Preparing walks the workspace; keep that off the async threads.
                let (level, cwd, kept) = (
                    ctx.shell.sandbox,
                    ctx.cwd.clone(),
                    ctx.shell.keep_read_only.clone(),
                );
                let prepared = tokio::task::spawn_blocking(move || {
                    let prepared = Confinement::prepare(level, &cwd, &kept);
                    let available =
                        prepared.is_err() && corvid_sandbox::available(level, &cwd).is_ok();
                    (prepared, available)
                })
                .await
                .map_err(|e| ToolError::new(format!("preparing the sandbox failed: {e}")))?;
                match prepared {
                    (Ok(confinement), _) => confinement,
                    // The approval asked about running unconfined only if the sandbox is
                    // unavailable here; any other failure must not run the command at all.
                    (Err(why), true) => {
                        return Err(ToolError::new(format!(
                            "the shell sandbox could not be set up for this command ({why}); \
                             it was not run"
                        )));
                    }
                    (Err(_), false) => Confinement::unconfined(),
                }
            };
            // A command that runs unconfined anyway loses nothing in the editor's terminal;
            // a sandboxed one stays here, in the sandbox.
            let hosted = match &ctx.shell.host {
                Some(host) if confinement.level() == SandboxLevel::Off => Some(host.clone()),
                _ => None,
            };
            let mut output = match hosted {
                Some(host) => run_hosted(host.as_ref(), &args.command, timeout, &ctx).await?,
                None => run(&args.command, timeout, confinement, &ctx).await?,
            };
            if let (Some(description), Some(raw)) = (args.description, output.raw.as_object_mut()) {
                raw.insert("description".to_owned(), Value::String(description));
            }
            Ok(output)
        }
        .boxed()
    }
}

async fn run(
    command: &str,
    timeout: Duration,
    confinement: Confinement,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    if ctx.cancel.is_cancelled() {
        return Err(cancelled());
    }
    let level = confinement.level();
    let base = match &ctx.shell.base_env {
        Some(env) => env.as_ref().clone(),
        None => std::env::vars_os().collect(),
    };
    let marker = reap::new_marker();
    let mut cmd = tokio::process::Command::new("bash");
    cmd.arg("-c")
        .arg(command)
        .current_dir(&ctx.cwd)
        .env_clear()
        .envs(ctx.shell.env.apply(base))
        .env(reap::RUN_MARKER, &marker)
        .envs(watchdog::owner_marker().map(|owner| (watchdog::OWNER_MARKER, owner)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // The child starts a session of its own (so also a process group of its own, whose id is
    // its pid): no controlling terminal, and a Ctrl-C meant for corvid does not reach it.
    let after = confinement.apply_to(cmd.as_std_mut());
    let mut child = cmd
        .spawn()
        .map_err(|e| ToolError::new(format!("cannot start bash: {e}")))?;
    let mut guard = TreeGuard {
        shell: child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw),
        marker,
    };
    let stdout = collect(child.stdout.take(), ctx.live_output.clone());
    let stderr = collect(child.stderr.take(), ctx.live_output.clone());

    let outcome = tokio::select! {
        status = child.wait() => match status {
            Ok(status) => Outcome::Exited(status),
            Err(e) => return Err(ToolError::new(format!("waiting for the command failed: {e}"))),
        },
        () = tokio::time::sleep(timeout) => Outcome::TimedOut,
        () = ctx.cancel.cancelled() => Outcome::Cancelled,
    };
    match outcome {
        // Background processes may outlive the shell; they are left running.
        Outcome::Exited(_) => guard.shell = None,
        Outcome::TimedOut | Outcome::Cancelled => {
            guard.kill();
            let _ = child.wait().await;
        }
    }
    let stdout = stdout.finish().await;
    let stderr = stderr.finish().await;
    let report = match after {
        Some(after) => violations::check(after).await,
        None => CheckReport::default(),
    };
    let mut output = match outcome {
        Outcome::Cancelled => return Err(cancelled_with(&report, &ctx.cwd)),
        Outcome::TimedOut => render(command, None, Some(timeout), level, &stdout, &stderr),
        Outcome::Exited(status) => render(command, Some(status), None, level, &stdout, &stderr),
    };
    violations::add(&mut output, &report, &ctx.cwd);
    Ok(output)
}

fn cancelled_with(report: &CheckReport, cwd: &Path) -> ToolError {
    match violations::text(report, cwd) {
        Some(text) => ToolError::new(format!("{}\n\n{text}", cancelled().message)),
        None => cancelled(),
    }
}

/// Runs the command through `host` with the environment a local command would get.
async fn run_hosted(
    host: &dyn CommandHost,
    command: &str,
    timeout: Duration,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    if ctx.cancel.is_cancelled() {
        return Err(cancelled());
    }
    let base = match &ctx.shell.base_env {
        Some(env) => env.as_ref().clone(),
        None => std::env::vars_os().collect(),
    };
    let request = HostedCommand {
        call_id: ctx.call_id.clone(),
        program: "bash".to_owned(),
        args: vec!["-c".to_owned(), command.to_owned()],
        cwd: ctx.cwd.clone(),
        env: host::hosted_env(ctx.shell.env.apply(base)),
        timeout,
        output_limit: HOSTED_OUTPUT_LIMIT,
    };
    let run = host.run(request, ctx.cancel.clone()).await?;
    Ok(host::render(command, timeout, &run))
}

fn cancelled() -> ToolError {
    ToolError::new("cancelled: the command and its child processes were killed")
}

/// A pipe being read into a bounded buffer in the background, and shown live as it is read.
struct Collector {
    buffer: Arc<Mutex<CappedBuffer>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

fn collect(
    pipe: Option<impl AsyncRead + Unpin + Send + 'static>,
    live: Option<LiveOutput>,
) -> Collector {
    let buffer = Arc::new(Mutex::new(CappedBuffer::default()));
    let task = pipe.map(|mut pipe| {
        let buffer = buffer.clone();
        tokio::spawn(async move {
            let mut chunk = vec![0u8; 8192];
            let mut text = Utf8Chunks::default();
            while let Ok(n) = pipe.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                buffer
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(&chunk[..n]);
                if let Some(live) = &live {
                    live.send(&text.push(&chunk[..n]));
                }
            }
        })
    });
    Collector { buffer, task }
}

impl Collector {
    /// What was read, waiting briefly for the pipe to close.
    async fn finish(self) -> Captured {
        if let Some(mut task) = self.task
            && tokio::time::timeout(DRAIN, &mut task).await.is_err()
        {
            task.abort();
        }
        let buffer = self.buffer.lock().unwrap_or_else(PoisonError::into_inner);
        Captured {
            text: buffer.render(),
            truncated: buffer.truncated(),
        }
    }
}

struct Captured {
    text: String,
    truncated: bool,
}

fn render(
    command: &str,
    status: Option<std::process::ExitStatus>,
    timed_out: Option<Duration>,
    sandbox: SandboxLevel,
    stdout: &Captured,
    stderr: &Captured,
) -> ToolOutput {
    let exit_code = status.and_then(|s| s.code());
    let signal = status.and_then(|s| s.signal());
    let headline = match (timed_out, exit_code, signal) {
        (Some(after), _, _) => format!(
            "Timed out after {} ms; the command and its child processes were killed.",
            after.as_millis()
        ),
        (None, Some(code), _) => format!("Exit code: {code}"),
        (None, None, Some(sig)) => format!("Killed by signal {sig} ({})", signal_name(sig)),
        (None, None, None) => "Finished without an exit code.".to_owned(),
    };
    let mut text = headline;
    for (label, captured) in [("Stdout", stdout), ("Stderr", stderr)] {
        if !captured.text.is_empty() {
            text.push_str(&format!("\n\n{label}:\n{}", captured.text.trim_end()));
        }
    }
    if stdout.text.is_empty() && stderr.text.is_empty() {
        text.push_str("\n\n(no output)");
    }
    let failed = timed_out.is_none() && exit_code != Some(0);
    if failed && sandbox != SandboxLevel::Off && looks_blocked(stdout, stderr) {
        text.push_str(&format!("\n\n{}", blocked_note(sandbox)));
    }
    ToolOutput::new(
        text,
        json!({
            "command": command,
            "exit_code": exit_code,
            "signal": signal.map(signal_name),
            "timed_out": timed_out.is_some(),
            "stdout": stdout.text,
            "stderr": stderr.text,
            "truncated": stdout.truncated || stderr.truncated,
            "sandbox": sandbox.as_str(),
        }),
    )
}

fn looks_blocked(stdout: &Captured, stderr: &Captured) -> bool {
    BLOCKED_SIGNS
        .iter()
        .any(|sign| stdout.text.contains(sign) || stderr.text.contains(sign))
}

/// Tells the model the failure may be the sandbox's doing, so it asks instead of retrying.
fn blocked_note(sandbox: SandboxLevel) -> String {
    let denied = match sandbox {
        SandboxLevel::ReadOnly => "all writes and network access are denied",
        _ => {
            "writes outside the workspace and temp dirs, to .git, .corvid, .envrc, .vscode and \
             .idea (at any depth) and corvid's home, and new entries in the folders holding \
             them are denied, and so is network access"
        }
    };
    format!(
        "corvid's sandbox ({}) may have blocked this: {denied}; if the command needs that, run it \
         again with \"outside_sandbox\": true, which asks the user to approve it",
        sandbox.as_str()
    )
}

fn signal_name(sig: i32) -> String {
    Signal::try_from(sig).map_or_else(|_| format!("signal {sig}"), |s| s.as_str().to_owned())
}
