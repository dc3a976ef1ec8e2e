//! `run_shell_command`: `bash -c` in its own process group, bounded in time and output,
//! confined by the OS sandbox and given an environment without secrets.

pub mod background;
mod collect;
mod env;
mod host;
mod reap;
mod render;
mod spawn;
mod violations;
mod watchdog;

pub use background::{BackgroundLimits, BackgroundProcesses};
pub use corvid_sandbox::SandboxLevel;
pub use env::{EnvFilter, PROVIDER_KEYS};
pub use host::{CommandHost, HOSTED_OUTPUT_LIMIT, HostedCommand, HostedRun};

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use corvid_protocol::{ApprovalPreview, ToolDisplay, ToolKind, ToolOutput};
use corvid_sandbox::{CheckReport, Confinement};
use futures::FutureExt;
use futures::future::BoxFuture;
use nix::unistd::Pid;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{one_line, parse_args, plain_display};
use crate::{ApprovalNeed, Tool, ToolContext, ToolError};
use render::render;

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
    /// The session's background processes (`run_in_background`, `shell_output`,
    /// `kill_shell`); `None` offers none.
    pub background: Option<Arc<BackgroundProcesses>>,
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
    /// Returns at once with a process id instead of waiting for the command.
    #[serde(default)]
    run_in_background: bool,
}

enum Outcome {
    Exited(std::process::ExitStatus),
    TimedOut,
    Cancelled,
    /// Still running after `tools.autoBackgroundMs`: moved to the background.
    MovedToBackground,
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
            reap::kill_tree(Some(shell), &self.marker);
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
         the user cancels. With `run_in_background` it returns at once with a process id: \
         read its output with `shell_output`, stop it with `kill_shell` (use this for dev \
         servers and watchers; `&` inside the command is not waited for and its later output \
         is lost). Background processes end with the session. Unless the user turned the sandbox off, the command cannot write outside \
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
                "run_in_background": {"type": "boolean", "description": "Start the command and return at once with an id for shell_output and kill_shell, instead of waiting for it (servers, watchers, long builds)."},
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
        let background = args.get("run_in_background").and_then(Value::as_bool) == Some(true);
        let title = match args.get("command").and_then(Value::as_str) {
            Some(command) if background => format!("Start {} (background)", one_line(command, 80)),
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
            let background = match (&ctx.shell.background, args.run_in_background) {
                (Some(table), true) => {
                    table.check_room()?;
                    Some(table.clone())
                }
                (None, true) => {
                    return Err(ToolError::new(
                        "this session runs no background processes; run the command without \
                         run_in_background",
                    ));
                }
                (_, false) => None,
            };
            let confinement = confinement(&args, &ctx).await?;
            if let Some(table) = background {
                let level = confinement.level();
                let started = spawn::start(&args.command, confinement, &ctx, None)?;
                let cwd = ctx.cwd.clone();
                return Ok(background::launch::started(
                    &table,
                    &args.command,
                    started,
                    level,
                    cwd,
                ));
            }
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

/// The sandbox for this call. Outside the sandbox, or without one, only after the escalated
/// question was answered (it is asked in every mode).
async fn confinement(args: &Args, ctx: &ToolContext) -> Result<Confinement, ToolError> {
    if args.outside_sandbox {
        return Ok(Confinement::unconfined());
    }
    // Preparing walks the workspace; keep that off the async threads.
    let (level, cwd, kept) = (
        ctx.shell.sandbox,
        ctx.cwd.clone(),
        ctx.shell.keep_read_only.clone(),
    );
    let prepared = tokio::task::spawn_blocking(move || {
        let prepared = Confinement::prepare(level, &cwd, &kept);
        let available = prepared.is_err() && corvid_sandbox::available(level, &cwd).is_ok();
        (prepared, available)
    })
    .await
    .map_err(|e| ToolError::new(format!("preparing the sandbox failed: {e}")))?;
    match prepared {
        (Ok(confinement), _) => Ok(confinement),
        // The approval asked about running unconfined only if the sandbox is unavailable
        // here; any other failure must not run the command at all.
        (Err(why), true) => Err(ToolError::new(format!(
            "the shell sandbox could not be set up for this command ({why}); it was not run"
        ))),
        (Err(_), false) => Ok(Confinement::unconfined()),
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
    let spawn::Started {
        mut child,
        shell,
        marker,
        stdout,
        stderr,
        after: sandbox_check,
    } = spawn::start(command, confinement, ctx, ctx.live_output.clone())?;
    let mut guard = TreeGuard { shell, marker };
    // Moving to the background needs room in the session's table when the time comes; a
    // full table leaves the command in the foreground until it ends or times out.
    let mut auto = ctx
        .shell
        .background
        .as_ref()
        .and_then(|table| Some((table, table.limits().auto_background_after?)))
        .filter(|(_, after)| *after < timeout);
    let started_at = tokio::time::Instant::now();
    let outcome = loop {
        let move_after = async {
            match auto {
                Some((_, after)) => tokio::time::sleep_until(started_at + after).await,
                None => std::future::pending().await,
            }
        };
        let outcome = tokio::select! {
            status = child.wait() => match status {
                Ok(status) => Outcome::Exited(status),
                Err(e) => return Err(ToolError::new(format!("waiting for the command failed: {e}"))),
            },
            () = tokio::time::sleep_until(started_at + timeout) => Outcome::TimedOut,
            () = ctx.cancel.cancelled() => Outcome::Cancelled,
            () = move_after => Outcome::MovedToBackground,
        };
        match (outcome, auto) {
            (Outcome::MovedToBackground, Some((table, after))) => {
                if table.check_room().is_err() {
                    auto = None;
                    continue;
                }
                let started = spawn::Started {
                    child,
                    shell: guard.shell.take(),
                    marker: std::mem::take(&mut guard.marker),
                    stdout,
                    stderr,
                    after: sandbox_check,
                };
                let cwd = ctx.cwd.clone();
                return Ok(background::launch::moved(
                    table, command, started, after, level, cwd,
                ));
            }
            (outcome, _) => break outcome,
        }
    };
    match outcome {
        // Background processes may outlive the shell; they are left running.
        Outcome::Exited(_) => guard.shell = None,
        Outcome::TimedOut | Outcome::Cancelled | Outcome::MovedToBackground => {
            guard.kill();
            let _ = child.wait().await;
        }
    }
    let stdout = stdout.finish().await;
    let stderr = stderr.finish().await;
    let report = match sandbox_check {
        Some(after) => violations::check(after).await,
        None => CheckReport::default(),
    };
    let mut output = match outcome {
        Outcome::Cancelled => return Err(cancelled_with(&report, &ctx.cwd)),
        Outcome::TimedOut => render(command, None, Some(timeout), level, &stdout, &stderr),
        Outcome::Exited(status) => render(command, Some(status), None, level, &stdout, &stderr),
        // Only without a table, which never moves a command: treated as a timeout.
        Outcome::MovedToBackground => render(command, None, Some(timeout), level, &stdout, &stderr),
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
