//! One session's journal of checkpoints: which snapshot was taken before each user turn,
//! before each mutating call in it, and when it ended, plus the rewinds that cut the
//! conversation back. One JSON line per entry in `<store>/sessions/<session id>.turns` (not
//! `.jsonl`: nothing must take it for a session recording), appended, so a crash loses at
//! most the line being written.
//!
//! A session that uses its journal holds a shared lock on the file for as long as it is open,
//! so a prune in any process can tell a live session's journal (never removed) from one whose
//! session is gone.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use corvid_checkpoint::SnapshotId;
use serde::{Deserialize, Serialize};

/// One line of a journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Entry {
    /// A user turn (a prompt, a `!command`, or a rewind, which can itself be undone) began.
    Turn {
        turn: u32,
        prompt: String,
        before: SnapshotId,
        history_len: u32,
        at_ms: u64,
        /// Set for a rewind's own entry: the turn it went back to.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rewind_of: Option<u32>,
    },
    /// A mutating call (tool, shell command, a subagent's) is about to run.
    Call { turn: u32, before: SnapshotId },
    /// The turn ended with the workspace in `after`.
    End { turn: u32, after: SnapshotId },
    /// The conversation was cut back to before `to_turn`: it and later turns are gone.
    Rewound { to_turn: u32 },
}

/// A user turn as the journal tells it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TurnRecord {
    pub turn: u32,
    pub prompt: String,
    pub before: SnapshotId,
    pub after: Option<SnapshotId>,
    pub history_len: u32,
    pub at_ms: u64,
    pub rewind_of: Option<u32>,
}

/// The journal of one session.
#[derive(Debug)]
pub(crate) struct Journal {
    path: PathBuf,
    /// The file, open and share-locked while the session using it lives (`None` for a journal
    /// only looked at, and until a live one's file exists).
    live: Option<File>,
}

impl Journal {
    /// The journal of `session_id` in the store folder `store_dir`; `None` when the id is not a
    /// plain file name (it must never reach outside the store).
    pub fn new(store_dir: &Path, session_id: &str) -> Option<Journal> {
        let plain = !session_id.is_empty()
            && session_id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && !session_id.starts_with('.');
        plain.then(|| Journal {
            path: store_dir
                .join("sessions")
                .join(format!("{session_id}.turns")),
            live: None,
        })
    }

    /// The journal of the session running in this process: its file (when it exists) is
    /// share-locked until the journal is dropped, so no prune takes it for an orphan.
    pub fn open_live(store_dir: &Path, session_id: &str) -> std::io::Result<Option<Journal>> {
        let Some(mut journal) = Journal::new(store_dir, session_id) else {
            return Ok(None);
        };
        if journal.path.exists() {
            journal.lock_live()?;
        }
        Ok(Some(journal))
    }

    /// Opens (creating) the file for appending and takes the shared lock.
    fn lock_live(&mut self) -> std::io::Result<&mut File> {
        // A journal removed meanwhile (its checkpoints all pruned) is started again.
        let file = match self
            .live
            .take()
            .filter(|f| f.metadata().is_ok_and(|m| m.nlink() > 0))
        {
            Some(file) => file,
            None => {
                if let Some(dir) = self.path.parent() {
                    fs::create_dir_all(dir)?;
                }
                let file = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&self.path)?;
                file.lock_shared()?;
                file
            }
        };
        Ok(self.live.insert(file))
    }

    /// Appends one entry (the journal becomes live: see [`Journal::open_live`]).
    pub fn append(&mut self, entry: &Entry) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(entry).map_err(std::io::Error::other)?;
        line.push(b'\n');
        self.lock_live()?.write_all(&line)
    }

    /// Whether a session in some process holds this journal open.
    pub fn in_use(&self) -> std::io::Result<bool> {
        let file = match File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        match file.try_lock() {
            Ok(()) => Ok(false),
            Err(fs::TryLockError::WouldBlock) => Ok(true),
            Err(fs::TryLockError::Error(e)) => Err(e),
        }
    }

    /// Every entry; damaged lines (a torn last write) are skipped.
    pub fn entries(&self) -> std::io::Result<Vec<Entry>> {
        let text = match fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        Ok(text
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect())
    }

    /// Deletes the journal (its checkpoints were pruned, or its session deleted).
    pub fn remove(&self) -> std::io::Result<()> {
        match fs::remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

/// What the entries say: the turns still in the conversation, oldest first, and the newest
/// snapshot the session took (the state the agent last left the workspace in).
pub(crate) fn replay(entries: &[Entry]) -> (Vec<TurnRecord>, Option<SnapshotId>) {
    let mut turns: Vec<TurnRecord> = Vec::new();
    let mut latest = None;
    for entry in entries {
        match entry {
            Entry::Turn {
                turn,
                prompt,
                before,
                history_len,
                at_ms,
                rewind_of,
            } => {
                latest = Some(*before);
                turns.push(TurnRecord {
                    turn: *turn,
                    prompt: prompt.clone(),
                    before: *before,
                    after: None,
                    history_len: *history_len,
                    at_ms: *at_ms,
                    rewind_of: *rewind_of,
                });
            }
            Entry::Call { before, .. } => latest = Some(*before),
            Entry::End { turn, after } => {
                latest = Some(*after);
                if let Some(t) = turns.iter_mut().find(|t| t.turn == *turn) {
                    t.after = Some(*after);
                }
            }
            Entry::Rewound { to_turn } => turns.retain(|t| t.turn < *to_turn),
        }
    }
    (turns, latest)
}

/// The number the next turn gets: one more than any turn ever journaled (numbers of turns
/// a rewind removed are not reused).
pub(crate) fn next_turn(entries: &[Entry]) -> u32 {
    entries
        .iter()
        .filter_map(|e| match e {
            Entry::Turn { turn, .. } => Some(*turn),
            _ => None,
        })
        .max()
        .map_or(1, |n| n + 1)
}

/// Every snapshot the entries name.
pub(crate) fn snapshots(entries: &[Entry]) -> Vec<SnapshotId> {
    entries
        .iter()
        .filter_map(|e| match e {
            Entry::Turn { before, .. } | Entry::Call { before, .. } => Some(*before),
            Entry::End { after, .. } => Some(*after),
            Entry::Rewound { .. } => None,
        })
        .collect()
}
