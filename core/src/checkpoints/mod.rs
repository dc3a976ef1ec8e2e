//! Checkpoints of the workspace around everything the agent does (issue 26): a snapshot
//! before each user turn, before each mutating call in it (the model's tools, shell
//! commands, `!command`, a subagent's calls) and when it ends, so any earlier turn can be
//! undone whatever changed the files. The store itself is `corvid-checkpoint`; this module
//! adds the session's journal, the budget, and the operations every front end uses
//! ([`SessionCheckpoints::turns`], [`SessionCheckpoints::preview`],
//! [`SessionCheckpoints::rewind_code`]).
//!
//! A checkpoint that fails never stops a turn: the loop gets a notice to show and goes on.

mod journal;
mod lifecycle;
mod rewind;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use corvid_checkpoint::{Options, Store};

use journal::{Entry, Journal};
pub use lifecycle::{
    ProjectCheckpoints, SessionJournal, describe_project, fork_journal, free_deleted_sessions,
    prune_project,
};
pub use rewind::{CANNOT_UNDO, RewindPreview, TurnSummary};

/// `checkpoints.*`: whether corvid takes checkpoints, and their limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointSettings {
    /// `checkpoints.enabled` (default true).
    pub enabled: bool,
    /// `checkpoints.maxFileBytes`: larger files are not captured (default 10 MiB).
    pub max_file_bytes: u64,
    /// `checkpoints.maxBytes`: what one project's store may hold before the oldest
    /// checkpoints are pruned (default 2 GiB).
    pub max_bytes: u64,
}

impl Default for CheckpointSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            max_file_bytes: corvid_checkpoint::DEFAULT_MAX_FILE_BYTES,
            max_bytes: 2 * 1024 * 1024 * 1024,
        }
    }
}

/// What went wrong opening or using a session's checkpoints; the message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The store failed (I/O, damage, a pruned snapshot).
    #[error("checkpoints: {0}")]
    Store(#[from] corvid_checkpoint::Error),
    /// The journal of the session could not be read or written.
    #[error("checkpoints: the session's journal: {0}")]
    Journal(#[from] std::io::Error),
    /// Checkpoints are not taken here, with the reason.
    #[error("checkpoints are off: {0}")]
    Off(String),
    /// No user turn of this session has that number (or it was rewound already).
    #[error(
        "turn {0} has no checkpoint in this session; `corvid checkpoints list` shows the turns that do"
    )]
    UnknownTurn(u32),
    /// The session took no checkpoint yet.
    #[error("this session has no checkpoints yet: nothing to undo")]
    NoTurns,
}

/// The folder under `corvid_home/checkpoints` holding a project's checkpoints: the same
/// name as its sessions' folder, so the two are found together.
pub fn project_key(workspace: &Path) -> String {
    crate::session::SessionStore::project_key(workspace)
}

/// Why a folder is not checkpointed at all: the user's home or the root would mean copying
/// everything they own into the store on the first turn.
fn refuse_workspace(workspace: &Path) -> Option<String> {
    let canonical = workspace.canonicalize().ok()?;
    let home = dirs::home_dir().and_then(|h| h.canonicalize().ok());
    if canonical.parent().is_none() || home.as_deref() == Some(canonical.as_path()) {
        return Some(format!(
            "{} is your home folder or the file system's root; start corvid in a project folder \
             to be able to undo its turns",
            workspace.display()
        ));
    }
    None
}

/// One session's checkpoints, shared by the loop (which takes them) and the front ends
/// (which list, preview and rewind through them).
pub struct SessionCheckpoints {
    corvid_home: PathBuf,
    workspace: PathBuf,
    settings: CheckpointSettings,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for SessionCheckpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionCheckpoints")
            .field("workspace", &self.workspace)
            .finish()
    }
}

struct Inner {
    store: Store,
    journal: Journal,
    /// The turn being run, if any.
    open_turn: Option<u32>,
}

impl SessionCheckpoints {
    /// Opens the checkpoints of session `session_id` of the project `workspace` under
    /// `corvid_home` (`$CORVID_HOME/checkpoints/<project key>/`, mode 0700).
    pub fn open(
        corvid_home: &Path,
        workspace: &Path,
        session_id: &str,
        settings: CheckpointSettings,
    ) -> Result<SessionCheckpoints, CheckpointError> {
        if !settings.enabled {
            return Err(CheckpointError::Off(
                "`checkpoints.enabled` is false in the settings".into(),
            ));
        }
        if let Some(reason) = refuse_workspace(workspace) {
            return Err(CheckpointError::Off(reason));
        }
        let options = Options {
            max_file_bytes: settings.max_file_bytes,
        };
        let store = Store::open_with(corvid_home, &project_key(workspace), options)?;
        let journal = live_journal(&store, session_id)?;
        Ok(SessionCheckpoints {
            corvid_home: corvid_home.to_path_buf(),
            workspace: workspace.to_path_buf(),
            settings,
            inner: Mutex::new(Inner {
                store,
                journal,
                open_turn: None,
            }),
        })
    }

    /// Goes on with the journal of session `session_id`: a resumed session (`--resume`,
    /// `--continue`, `/resume`, `session/load`) was configured under a new id before the
    /// recording to go on with was known, and must keep its own journal, so its turn numbers
    /// go on counting and the turns from before the resume stay undoable.
    pub fn attach(&self, session_id: &str) -> Result<(), CheckpointError> {
        let mut inner = self.lock();
        inner.journal = live_journal(&inner.store, session_id)?;
        inner.open_turn = None;
        Ok(())
    }

    /// The folder the checkpoints cover.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Every critical section leaves `Inner` consistent: the store locks its own files.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Before a user turn (a prompt or a `!command`): snapshot and journal it. Returns notices
    /// for the user (a failure, a pruning); never fails.
    pub async fn turn_started(self: &Arc<Self>, prompt: &str, history_len: usize) -> Vec<String> {
        let prompt = first_line(prompt);
        let history_len = u32::try_from(history_len).unwrap_or(u32::MAX);
        self.blocking(move |this| {
            let mut inner = this.lock();
            let entries = inner.journal.entries()?;
            let turn = journal::next_turn(&entries);
            let before = inner.store.snapshot(&this.workspace)?;
            inner.journal.append(&Entry::Turn {
                turn,
                prompt,
                before,
                history_len,
                at_ms: now_ms(),
                rewind_of: None,
            })?;
            inner.open_turn = Some(turn);
            Ok(Vec::new())
        })
        .await
    }

    /// Before a mutating call of the running turn (the model's, a subagent's).
    pub async fn before_call(self: &Arc<Self>) -> Vec<String> {
        self.blocking(|this| {
            let mut inner = this.lock();
            let Some(turn) = inner.open_turn else {
                return Ok(Vec::new());
            };
            let before = inner.store.snapshot(&this.workspace)?;
            inner.journal.append(&Entry::Call { turn, before })?;
            Ok(Vec::new())
        })
        .await
    }

    /// When the running turn ends: its final state, then the budget.
    pub async fn turn_finished(self: &Arc<Self>) -> Vec<String> {
        self.blocking(|this| {
            let mut inner = this.lock();
            let Some(turn) = inner.open_turn.take() else {
                return Ok(Vec::new());
            };
            let after = inner.store.snapshot(&this.workspace)?;
            inner.journal.append(&Entry::End { turn, after })?;
            // Deleted sessions' checkpoints go first (logged: the user deleted them), then
            // the budget's oldest ones (shown: turns the user may want stop being undoable).
            let recordings = lifecycle::recordings_dir(&this.corvid_home, &this.workspace);
            lifecycle::sweep_orphans(&mut inner.store, &recordings)?;
            Ok(
                lifecycle::enforce_budget(&mut inner.store, this.settings.max_bytes)?
                    .into_iter()
                    .collect(),
            )
        })
        .await
    }

    /// Runs store work off the async threads; a failure becomes a notice.
    async fn blocking(
        self: &Arc<Self>,
        work: impl FnOnce(&SessionCheckpoints) -> Result<Vec<String>, CheckpointError> + Send + 'static,
    ) -> Vec<String> {
        let this = Arc::clone(self);
        let joined = tokio::task::spawn_blocking(move || work(&this)).await;
        let failure = match joined {
            Ok(Ok(notices)) => return notices,
            Ok(Err(e)) => e.to_string(),
            Err(e) => e.to_string(),
        };
        tracing::warn!(error = %failure, "checkpoint failed");
        vec![format!(
            "could not take a checkpoint ({failure}); the turn goes on, but what it changes \
             may not be undoable"
        )]
    }
}

/// The journal of `session_id`, held open as a live session's.
fn live_journal(store: &Store, session_id: &str) -> Result<Journal, CheckpointError> {
    Journal::open_live(store.dir(), session_id)?.ok_or_else(|| {
        CheckpointError::Off(format!("the session id {session_id:?} is not a plain name"))
    })
}

/// What the model is told after a code-only rewind: the conversation still holds the undone
/// turn, so it must not trust what it read then.
pub fn restored_files_note(turn: u32, report: &corvid_protocol::RewindReport) -> Option<String> {
    if report.kept_messages.is_some() || report.restored.is_empty() {
        return None;
    }
    let files: Vec<String> = report
        .restored
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    Some(format!(
        "[corvid] I rewound these files to how they were before turn {turn}; the conversation \
         was kept, so re-read them before relying on what you saw: {}",
        files.join(", ")
    ))
}

fn first_line(prompt: &str) -> String {
    let line = prompt.lines().next().unwrap_or_default();
    line.chars().take(200).collect()
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Bytes for people: `1.5 MiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}
