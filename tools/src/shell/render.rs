//! The tool result of a foreground command: headline, output, and a hint when the sandbox
//! may have blocked it.

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use corvid_protocol::ToolOutput;
use corvid_sandbox::SandboxLevel;
use nix::sys::signal::Signal;
use serde_json::json;

use super::collect::Captured;

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

pub(super) fn render(
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

pub(super) fn signal_name(sig: i32) -> String {
    Signal::try_from(sig).map_or_else(|_| format!("signal {sig}"), |s| s.as_str().to_owned())
}
