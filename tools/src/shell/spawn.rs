//! Starting `bash -c` the one way every command starts, in the foreground or the background:
//! the filtered environment, the run and owner markers (the tree kill and the watchdog find
//! its processes by them), its own session and process group, and the sandbox.

use std::process::Stdio;

use corvid_sandbox::{AfterCheck, Confinement};
use nix::unistd::Pid;

use super::collect::{Collector, collect};
use super::{reap, watchdog};
use crate::live_output::LiveOutput;
use crate::{ToolContext, ToolError};

/// A shell that was just started, with its output being read.
pub(super) struct Started {
    pub child: tokio::process::Child,
    /// Its pid, which is also its process group and session id.
    pub shell: Option<Pid>,
    /// The value of its run marker.
    pub marker: String,
    pub stdout: Collector,
    pub stderr: Collector,
    /// What the sandbox checks once it ended.
    pub after: Option<AfterCheck>,
}

/// Starts `command` under `confinement`; output goes to `live` until it is moved.
pub(super) fn start(
    command: &str,
    confinement: Confinement,
    ctx: &ToolContext,
    live: Option<LiveOutput>,
) -> Result<Started, ToolError> {
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
    let shell = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw);
    let stdout = collect(child.stdout.take(), live.clone());
    let stderr = collect(child.stderr.take(), live);
    Ok(Started {
        child,
        shell,
        marker,
        stdout,
        stderr,
        after,
    })
}
