//! Commands run by someone else: an editor's terminal over ACP (`terminal/*`), so the editor
//! shows the output live. Such a command runs in the editor's process, outside corvid's OS
//! sandbox, so the shell tool hands it over only when it would run unconfined anyway (the
//! sandbox is off, unavailable, or the user approved `outside_sandbox`).

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use corvid_protocol::ToolOutput;
use futures::future::BoxFuture;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::ToolError;

/// The most output the host keeps for the model; matches the local capture budget.
pub const HOSTED_OUTPUT_LIMIT: u64 = 32 * 1024;

/// Runs shell commands outside corvid's process (the ACP client's terminals).
pub trait CommandHost: Send + Sync + fmt::Debug {
    /// Runs `command` to the end, its timeout or `cancel`, always cleaning up after it
    /// (killing what still runs). A cancelled run is an error.
    fn run(
        &self,
        command: HostedCommand,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<HostedRun, ToolError>>;
}

/// What to run, where, and for how long.
#[derive(Debug, Clone, PartialEq)]
pub struct HostedCommand {
    /// The tool call this command belongs to, so the host can show it on the call's card.
    pub call_id: String,
    /// The program and its arguments (`bash`, `-c`, the command line).
    pub program: String,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// The variables to set, already filtered like a local command's (no secrets).
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    /// Bytes of output the host keeps (the end of the output wins).
    pub output_limit: u64,
}

/// How a hosted command ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostedRun {
    /// stdout and stderr together, as the terminal showed them.
    pub output: String,
    /// The host dropped the start of the output to stay within the limit.
    pub truncated: bool,
    pub exit_code: Option<u32>,
    pub signal: Option<String>,
    /// Killed because it ran longer than the timeout.
    pub timed_out: bool,
    /// Where the host ran it (the ACP terminal id), for the raw output.
    pub terminal_id: Option<String>,
}

/// The tool output of a hosted run, worded like a local run's.
pub(super) fn render(command: &str, timeout: Duration, run: &HostedRun) -> ToolOutput {
    let headline = match (run.timed_out, run.exit_code, &run.signal) {
        (true, _, _) => format!(
            "Timed out after {} ms; the command was killed in the editor's terminal.",
            timeout.as_millis()
        ),
        (false, Some(code), _) => format!("Exit code: {code}"),
        (false, None, Some(signal)) => format!("Killed by signal {signal}"),
        (false, None, None) => "Finished without an exit code.".to_owned(),
    };
    let mut text = headline;
    let output = run.output.trim_end();
    if output.is_empty() {
        text.push_str("\n\n(no output)");
    } else {
        let note = if run.truncated {
            "[earlier output dropped by the editor's terminal]\n"
        } else {
            ""
        };
        text.push_str(&format!("\n\nOutput:\n{note}{output}"));
    }
    ToolOutput::new(
        text,
        json!({
            "command": command,
            "exit_code": run.exit_code,
            "signal": run.signal,
            "timed_out": run.timed_out,
            "output": run.output,
            "truncated": run.truncated,
            "sandbox": "off",
            "terminal_id": run.terminal_id,
        }),
    )
}

/// The environment sent to the host: the filtered one a local command gets (secrets and
/// provider keys already dropped), without variables that are not valid UTF-8.
pub(super) fn hosted_env(filtered: Vec<(OsString, OsString)>) -> Vec<(String, String)> {
    filtered
        .into_iter()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .collect()
}
