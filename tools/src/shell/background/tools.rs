//! `shell_output` and `kill_shell`: the model's handles on the session's background
//! processes. Both are stateless; the table comes with each call's context.

use std::sync::Arc;
use std::time::Duration;

use corvid_protocol::{ToolDisplay, ToolKind, ToolOutput};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{BackgroundProcesses, Output, ProcessState, RING_BYTES};
use crate::common::{count_of, parse_args, plain_display};
use crate::{ApprovalNeed, Tool, ToolContext, ToolError};

/// Reads what a background process printed since the last read.
#[derive(Debug, Clone, Copy, Default)]
pub struct ShellOutput;

/// Kills a background process and everything it started.
#[derive(Debug, Clone, Copy, Default)]
pub struct KillShell;

#[derive(Deserialize)]
struct ReadArgs {
    id: String,
    #[serde(default)]
    wait_ms: Option<u64>,
    #[serde(default)]
    filter: Option<String>,
}

#[derive(Deserialize)]
struct KillArgs {
    id: String,
}

fn table(ctx: &ToolContext) -> Result<Arc<BackgroundProcesses>, ToolError> {
    ctx.shell.background.clone().ok_or_else(|| {
        ToolError::new("this session runs no background processes, so there is nothing to read")
    })
}

/// Both tools act only on processes the model itself started: no question, only a refusal of
/// arguments that do not parse.
fn unasked_when_valid<T: serde::de::DeserializeOwned>(
    tool: &str,
    args: &Value,
) -> BoxFuture<'static, ApprovalNeed> {
    let need = match parse_args::<T>(tool, args) {
        Ok(_) => ApprovalNeed::None,
        Err(err) => ApprovalNeed::Refuse(err),
    };
    futures::future::ready(need).boxed()
}

fn id_title(verb: &str, args: &Value) -> String {
    match args.get("id").and_then(Value::as_str) {
        Some(id) => format!("{verb} {id}"),
        None => verb.to_owned(),
    }
}

impl Tool for ShellOutput {
    fn name(&self) -> &'static str {
        "shell_output"
    }

    fn display_name(&self) -> &'static str {
        "ShellOutput"
    }

    fn description(&self) -> &'static str {
        "Returns what a background process (started with run_shell_command's \
         run_in_background) printed since the last read, stdout and stderr together, and \
         whether it still runs or its exit code. Only the last 1 MiB of unread output is kept; \
         a note says how much older output was dropped. `wait_ms` waits up to that long (at \
         most 60000) for new output or the exit; `filter` (a regular expression) keeps only \
         the lines it matches."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "The process id run_shell_command returned (bg-1)."},
                "wait_ms": {"type": "integer", "minimum": 0, "description": "Wait up to this many milliseconds for new output or the exit when there is none yet."},
                "filter": {"type": "string", "description": "A regular expression; only the output lines it matches are returned (the others are discarded)."}
            },
            "required": ["id"]
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn mutates(&self) -> bool {
        false
    }

    fn display(&self, args: &Value, _ctx: &ToolContext) -> ToolDisplay {
        plain_display(self.kind(), id_title("Output of", args))
    }

    fn approval(&self, args: &Value, _ctx: &ToolContext) -> BoxFuture<'static, ApprovalNeed> {
        unasked_when_valid::<ReadArgs>(self.name(), args)
    }

    fn execute(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        async move {
            let args: ReadArgs = parse_args("shell_output", &args)?;
            let table = table(&ctx)?;
            let filter = match &args.filter {
                Some(pattern) => Some(regex::Regex::new(pattern).map_err(|e| {
                    ToolError::new(format!("filter is not a valid regular expression: {e}"))
                })?),
                None => None,
            };
            let wait = Duration::from_millis(args.wait_ms.unwrap_or(0));
            let read = table.read(&args.id, wait, filter.as_ref());
            let output = tokio::select! {
                output = read => output?,
                () = ctx.cancel.cancelled() => {
                    return Err(ToolError::new("cancelled while waiting for output; the process still runs"));
                }
            };
            Ok(render(&output))
        }
        .boxed()
    }
}

fn render(output: &Output) -> ToolOutput {
    let info = &output.info;
    let state = match &info.state {
        ProcessState::Running => "still running".to_owned(),
        ProcessState::Exited {
            code: Some(code), ..
        } => format!("exited with code {code}"),
        ProcessState::Exited {
            signal: Some(signal),
            ..
        } => format!("killed by {signal}"),
        ProcessState::Exited { .. } => "exited".to_owned(),
    };
    let mut text = format!("{}: {state}.", info.id);
    if output.dropped > 0 {
        text.push_str(&format!(
            "\n[{} of older output dropped: only the last {} MiB of unread output is kept; \
             read more often or use filter]",
            count_of(
                usize::try_from(output.dropped).unwrap_or(usize::MAX),
                "byte",
                "bytes"
            ),
            RING_BYTES / (1024 * 1024)
        ));
    }
    if output.text.is_empty() {
        text.push_str("\n(no new output)");
    } else {
        text.push_str(&format!("\n\n{}", output.text.trim_end()));
    }
    let (code, signal) = match &info.state {
        ProcessState::Running => (None, None),
        ProcessState::Exited { code, signal } => (*code, signal.clone()),
    };
    ToolOutput::new(
        text,
        json!({
            "id": info.id,
            "command": info.command,
            "running": info.state == ProcessState::Running,
            "exit_code": code,
            "signal": signal,
            "output": output.text,
            "dropped_bytes": output.dropped,
        }),
    )
}

impl Tool for KillShell {
    fn name(&self) -> &'static str {
        "kill_shell"
    }

    fn display_name(&self) -> &'static str {
        "KillShell"
    }

    fn description(&self) -> &'static str {
        "Kills a background process (started with run_shell_command's run_in_background) \
         and every process it started."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "The process id run_shell_command returned (bg-1)."}
            },
            "required": ["id"]
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }

    /// It changes what runs, so it runs in order with other mutating calls (and not in plan
    /// mode).
    fn mutates(&self) -> bool {
        true
    }

    fn display(&self, args: &Value, _ctx: &ToolContext) -> ToolDisplay {
        plain_display(self.kind(), id_title("Kill", args))
    }

    /// Stopping what the model itself started needs no approval.
    fn approval(&self, args: &Value, _ctx: &ToolContext) -> BoxFuture<'static, ApprovalNeed> {
        unasked_when_valid::<KillArgs>(self.name(), args)
    }

    fn execute(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        async move {
            let args: KillArgs = parse_args("kill_shell", &args)?;
            let info = table(&ctx)?.kill(&args.id).await?;
            let text = match &info.state {
                ProcessState::Running => format!(
                    "{}: killed, but its shell has not exited yet; check again with shell_output.",
                    info.id
                ),
                ProcessState::Exited { .. } => format!(
                    "{} was killed with every process it started ({}).",
                    info.id,
                    info.line()
                ),
            };
            Ok(ToolOutput::new(
                text,
                json!({"id": info.id, "command": info.command, "running": info.state == ProcessState::Running}),
            ))
        }
        .boxed()
    }
}
