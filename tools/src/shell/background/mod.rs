//! A session's background processes: commands started with `run_in_background` (or moved
//! there after `tools.autoBackgroundMs`), read with `shell_output` and stopped with
//! `kill_shell`. The table knows no agent: the session creates one, the shell tools use it
//! through [`super::ShellPolicy::background`], and the loop asks it only for [`Self::list`],
//! [`Self::reminder`] and [`Self::kill_all`].
//!
//! Each process runs exactly like a foreground command (same sandbox, environment filter,
//! own session and process group, run and owner markers), so the same tree kill stops it and
//! the shell watchdog kills it when corvid dies, `kill -9` included.

pub(super) mod launch;
mod ring;
mod tools;

pub use ring::RING_BYTES;
pub use tools::{KillShell, ShellOutput};

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use nix::unistd::Pid;
use tokio::sync::watch;

use ring::{Ring, Unread};

use super::reap;
use crate::ToolError;

/// How many background processes may run at once, and when a foreground command moves to
/// the background; fixed per session from settings (`tools.maxBackground`,
/// `tools.autoBackgroundMs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackgroundLimits {
    pub max_running: usize,
    /// A foreground command still running after this long moves to the background instead
    /// of running into its timeout; `None` never moves one.
    pub auto_background_after: Option<Duration>,
}

impl Default for BackgroundLimits {
    fn default() -> Self {
        Self {
            max_running: 8,
            auto_background_after: None,
        }
    }
}

/// How a background process is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessState {
    Running,
    /// The shell ended; processes it left behind may still run until killed.
    Exited {
        code: Option<i32>,
        signal: Option<String>,
    },
}

/// One row of `/tasks`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfo {
    pub id: String,
    pub command: String,
    pub state: ProcessState,
}

impl ProcessInfo {
    /// `bg-1 running: npm run dev`, for people and for the model.
    pub fn line(&self) -> String {
        let state = match &self.state {
            ProcessState::Running => "running".to_owned(),
            ProcessState::Exited {
                code: Some(code), ..
            } => format!("exited with code {code}"),
            ProcessState::Exited {
                signal: Some(signal),
                ..
            } => format!("killed by {signal}"),
            ProcessState::Exited { .. } => "exited".to_owned(),
        };
        format!(
            "{} {state}: {}",
            self.id,
            crate::common::one_line(&self.command, 100)
        )
    }
}

/// One background process.
pub struct Entry {
    id: String,
    command: String,
    shell: Option<Pid>,
    marker: String,
    ring: Mutex<Ring>,
    state: Mutex<ProcessState>,
    /// Bumped on new output and on exit, so a reader can wait for either.
    changed: watch::Sender<()>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Entry {
    /// Adds output the process printed.
    pub(super) fn push(&self, text: &str) {
        if text.is_empty() {
            return;
        }
        lock(&self.ring).push(text);
        self.changed.send_replace(());
    }

    /// Records how the shell ended.
    pub(super) fn exited(&self, code: Option<i32>, signal: Option<String>) {
        *lock(&self.state) = ProcessState::Exited { code, signal };
        self.changed.send_replace(());
    }

    pub(super) fn id(&self) -> &str {
        &self.id
    }

    fn info(&self) -> ProcessInfo {
        ProcessInfo {
            id: self.id.clone(),
            command: self.command.clone(),
            state: lock(&self.state).clone(),
        }
    }

    fn kill(&self) {
        // Once the shell was reaped its pid may be reused: only the marker is safe then.
        let shell = match *lock(&self.state) {
            ProcessState::Running => self.shell,
            ProcessState::Exited { .. } => None,
        };
        reap::kill_tree(shell, &self.marker);
    }
}

/// What `shell_output` returns: the unread output and the state after reading it.
#[derive(Debug)]
pub struct Output {
    pub info: ProcessInfo,
    pub text: String,
    /// Bytes of older output dropped since the last read (the ring was full).
    pub dropped: u64,
}

/// The background processes of one session.
pub struct BackgroundProcesses {
    limits: BackgroundLimits,
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    started: u64,
    entries: BTreeMap<u64, Arc<Entry>>,
}

impl fmt::Debug for BackgroundProcesses {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BackgroundProcesses")
            .field("limits", &self.limits)
            .field("processes", &self.list())
            .finish()
    }
}

/// The longest `shell_output` waits for new output, whatever `wait_ms` asks.
pub const MAX_WAIT: Duration = Duration::from_secs(60);

impl BackgroundProcesses {
    pub fn new(limits: BackgroundLimits) -> Self {
        Self {
            limits,
            table: Mutex::default(),
        }
    }

    pub fn limits(&self) -> BackgroundLimits {
        self.limits
    }

    /// Every process of the session, oldest first, exited ones included.
    pub fn list(&self) -> Vec<ProcessInfo> {
        lock(&self.table)
            .entries
            .values()
            .map(|e| e.info())
            .collect()
    }

    /// How many are still running (the TUI's status line).
    pub fn running(&self) -> usize {
        self.list()
            .iter()
            .filter(|p| p.state == ProcessState::Running)
            .count()
    }

    /// `/tasks` for people: every process of the session with its state, oldest first.
    pub fn report(&self) -> String {
        let list = self.list();
        if list.is_empty() {
            return "No background processes. The model starts them with run_shell_command's \
                    run_in_background (dev servers, watchers)."
                .to_owned();
        }
        let lines: Vec<String> = list.iter().map(ProcessInfo::line).collect();
        format!("Background processes\n{}", lines.join("\n"))
    }

    /// What the model is reminded of after a compaction dropped the calls that started them;
    /// `None` when the session has none.
    pub fn reminder(&self) -> Option<String> {
        let list = self.list();
        if list.is_empty() {
            return None;
        }
        let lines: Vec<String> = list.iter().map(|p| format!("- {}", p.line())).collect();
        Some(format!(
            "Background processes of this session (read with shell_output, stop with \
             kill_shell):\n{}",
            lines.join("\n")
        ))
    }

    /// An error unless another process may start now.
    pub(super) fn check_room(&self) -> Result<(), ToolError> {
        let running = self.running();
        if running < self.limits.max_running {
            return Ok(());
        }
        Err(ToolError::new(format!(
            "{running} background processes are running, the most this session allows \
             (tools.maxBackground = {}); stop one with kill_shell first. {}",
            self.limits.max_running,
            self.running_list()
        )))
    }

    /// Registers a started shell (`shell` its pid and process group, `marker` its run marker).
    pub(super) fn add(&self, command: &str, shell: Option<Pid>, marker: String) -> Arc<Entry> {
        let mut table = lock(&self.table);
        table.started += 1;
        let number = table.started;
        let entry = Arc::new(Entry {
            id: format!("bg-{number}"),
            command: command.to_owned(),
            shell,
            marker,
            ring: Mutex::new(Ring::new(RING_BYTES)),
            state: Mutex::new(ProcessState::Running),
            changed: watch::Sender::new(()),
        });
        table.entries.insert(number, entry.clone());
        entry
    }

    fn find(&self, id: &str) -> Result<Arc<Entry>, ToolError> {
        let found = lock(&self.table)
            .entries
            .values()
            .find(|e| e.id == id)
            .cloned();
        found.ok_or_else(|| {
            ToolError::new(format!(
                "there is no background process \"{id}\"; {}",
                self.running_list()
            ))
        })
    }

    fn running_list(&self) -> String {
        let running: Vec<String> = self
            .list()
            .into_iter()
            .filter(|p| p.state == ProcessState::Running)
            .map(|p| format!("{} ({})", p.id, crate::common::one_line(&p.command, 60)))
            .collect();
        if running.is_empty() {
            "none is running".to_owned()
        } else {
            format!("running: {}", running.join(", "))
        }
    }

    /// The output `id` printed since the last read, waiting up to `wait` (at most
    /// [`MAX_WAIT`]) for some when there is none yet and it still runs. With `filter`, only
    /// lines it matches are returned (the others are consumed), and the wait is for those.
    pub async fn read(
        &self,
        id: &str,
        wait: Duration,
        filter: Option<&regex::Regex>,
    ) -> Result<Output, ToolError> {
        let entry = self.find(id)?;
        let deadline = tokio::time::Instant::now() + wait.min(MAX_WAIT);
        let mut text = String::new();
        let mut dropped = 0;
        loop {
            let mut changed = entry.changed.subscribe();
            // Taken before the read, so output that arrives after the exit is not missed.
            let state = lock(&entry.state).clone();
            let Unread {
                text: unread,
                dropped: lost,
            } = lock(&entry.ring).take();
            dropped += lost;
            text.push_str(&keep_lines(&unread, filter));
            let done = !text.is_empty() || state != ProcessState::Running;
            if done
                || tokio::time::timeout_at(deadline, changed.changed())
                    .await
                    .is_err()
            {
                return Ok(Output {
                    info: ProcessInfo {
                        id: entry.id.clone(),
                        command: entry.command.clone(),
                        state,
                    },
                    text,
                    dropped,
                });
            }
        }
    }

    /// Kills `id` and everything it started, and waits (boundedly) until its shell is gone.
    pub async fn kill(&self, id: &str) -> Result<ProcessInfo, ToolError> {
        let entry = self.find(id)?;
        let mut changed = entry.changed.subscribe();
        entry.kill();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while *lock(&entry.state) == ProcessState::Running {
            if tokio::time::timeout_at(deadline, changed.changed())
                .await
                .is_err()
            {
                break;
            }
        }
        Ok(entry.info())
    }

    /// Kills every process of the session and what each started (the session ends).
    pub fn kill_all(&self) {
        let entries: Vec<Arc<Entry>> = lock(&self.table).entries.values().cloned().collect();
        for entry in entries {
            entry.kill();
        }
    }
}

impl Drop for BackgroundProcesses {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// The lines of `text` that `filter` matches (all of it without a filter).
fn keep_lines(text: &str, filter: Option<&regex::Regex>) -> String {
    match filter {
        None => text.to_owned(),
        Some(filter) => text
            .split_inclusive('\n')
            .filter(|line| filter.is_match(line.trim_end_matches(['\n', '\r'])))
            .collect(),
    }
}
