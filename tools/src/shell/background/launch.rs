//! Handing a started shell to the session's table, and what the model is told about it.

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use corvid_protocol::ToolOutput;
use corvid_sandbox::SandboxLevel;
use serde_json::json;

use super::{BackgroundProcesses, Entry};
use crate::shell::collect::{Captured, DRAIN};
use crate::shell::render::signal_name;
use crate::shell::spawn::Started;
use crate::shell::violations;

/// Registers `started` and watches it until it exits: its output goes to the entry's ring,
/// and its exit (after the sandbox's check) to the entry's state. Returns the output read
/// before (a command moved from the foreground).
fn adopt(
    table: &BackgroundProcesses,
    command: &str,
    started: Started,
    cwd: PathBuf,
) -> (Arc<Entry>, Captured, Captured) {
    let Started {
        mut child,
        shell,
        marker,
        stdout,
        stderr,
        after,
    } = started;
    let entry = table.add(command, shell, marker);
    let (out, out_task) = stdout.move_to(entry.clone());
    let (err, err_task) = stderr.move_to(entry.clone());
    let watched = entry.clone();
    tokio::spawn(async move {
        let status = child.wait().await;
        // What the shell printed last is in the ring before it counts as exited (background
        // children holding the pipes open are not waited for).
        for task in [out_task, err_task].into_iter().flatten() {
            let _ = tokio::time::timeout(DRAIN, task).await;
        }
        if let Some(after) = after
            && let Some(text) = violations::text(&violations::check(after).await, &cwd)
        {
            watched.push(&format!("\n{text}\n"));
        }
        match status {
            Ok(status) => watched.exited(status.code(), status.signal().map(signal_name)),
            Err(_) => watched.exited(None, None),
        }
    });
    (entry, out, err)
}

fn how_to_read(id: &str) -> String {
    format!(
        "Read its output with shell_output {{\"id\": \"{id}\"}} (`wait_ms` waits for more, \
         `filter` keeps matching lines) and stop it with kill_shell {{\"id\": \"{id}\"}}; it is \
         killed when the session ends."
    )
}

/// The result of `run_in_background`: the id and how to use it.
pub(in crate::shell) fn started(
    table: &BackgroundProcesses,
    command: &str,
    started: Started,
    level: SandboxLevel,
    cwd: PathBuf,
) -> ToolOutput {
    let pid = started.shell.map(|p| p.as_raw());
    let (entry, _, _) = adopt(table, command, started, cwd);
    let id = entry.id();
    ToolOutput::new(
        format!("Started in the background as {id}. {}", how_to_read(id)),
        json!({
            "command": command,
            "background_id": id,
            "pid": pid,
            "sandbox": level.as_str(),
        }),
    )
}

/// The result of a foreground command that ran past `tools.autoBackgroundMs`.
pub(in crate::shell) fn moved(
    table: &BackgroundProcesses,
    command: &str,
    started: Started,
    after: Duration,
    level: SandboxLevel,
    cwd: PathBuf,
) -> ToolOutput {
    let pid = started.shell.map(|p| p.as_raw());
    let (entry, out, err) = adopt(table, command, started, cwd);
    let id = entry.id();
    let mut text = format!(
        "Still running after {} ms, so it moved to the background as {id} (it was not \
         killed). {}",
        after.as_millis(),
        how_to_read(id)
    );
    for (label, captured) in [("Stdout so far", &out), ("Stderr so far", &err)] {
        if !captured.text.is_empty() {
            text.push_str(&format!("\n\n{label}:\n{}", captured.text.trim_end()));
        }
    }
    ToolOutput::new(
        text,
        json!({
            "command": command,
            "background_id": id,
            "pid": pid,
            "moved_after_ms": u64::try_from(after.as_millis()).unwrap_or(u64::MAX),
            "stdout": out.text,
            "stderr": err.text,
            "truncated": out.truncated || err.truncated,
            "sandbox": level.as_str(),
        }),
    )
}
