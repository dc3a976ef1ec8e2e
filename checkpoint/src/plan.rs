//! The preview of a restore: which files it would modify, recreate or delete, which of them
//! the user changed after the state the caller expected (conflicts, left alone unless the
//! caller chooses to overwrite them), and which cannot be restored and why.

use std::cmp::Ordering;
use std::ffi::OsStr;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use crate::store::SnapshotId;
use crate::tree::{Entry, Flat};

/// What a restore does to one path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// The file exists and gets the snapshot's content, mode or link target.
    Modify,
    /// The file is missing (deleted, renamed away) and is written again.
    Recreate,
    /// The file did not exist in the snapshot and is removed.
    Delete,
}

/// One path a restore would change (serialisable for `--output-format json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Change {
    /// The path, relative to the workspace.
    pub path: PathBuf,
    /// What the restore does to it.
    pub action: Action,
    /// The file's current state is not the one the caller expected (someone changed it
    /// after): it is kept unless the restore is told to overwrite conflicts.
    pub conflict: bool,
}

/// Why a path cannot be restored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum UnrestorableReason {
    /// The snapshot's version was over the size limit, so its content was never captured.
    TooLarge {
        /// The file's size when the snapshot was taken.
        size: u64,
        /// The limit in force.
        limit: u64,
    },
    /// The current file is over the size limit: replacing or deleting it could not be undone,
    /// so it is left as it is.
    CurrentTooLarge {
        /// The current file's size.
        size: u64,
        /// The limit in force.
        limit: u64,
    },
}

/// A path the restore needs but cannot put back; left untouched.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Unrestorable {
    /// The path, relative to the workspace.
    pub path: PathBuf,
    /// Why it cannot be restored.
    #[serde(flatten)]
    pub reason: UnrestorableReason,
}

/// Everything a restore would do, computed by [`crate::Store::preview`] and carried out by
/// [`crate::Store::restore`].
#[derive(Clone, Debug)]
pub struct RestorePlan {
    /// The workspace the plan is for.
    pub workspace: PathBuf,
    /// The snapshot to go back to.
    pub target: SnapshotId,
    /// The state the caller expected the workspace in (what the agent's turn left).
    pub expected_current: SnapshotId,
    /// A snapshot of the workspace as it was at the preview (so a restore can be undone,
    /// and the user's conflicting edits are kept in the store too).
    pub current: SnapshotId,
    /// The paths the restore changes, sorted by path.
    pub changes: Vec<Change>,
    /// The paths it cannot restore, sorted by path.
    pub unrestorable: Vec<Unrestorable>,
    /// The target's entries for the paths to write.
    pub(crate) target_entries: Flat,
    /// Every path as the preview saw it: the restore checks the paths it changes against it
    /// and records the restored state from it, with no second walk of the workspace.
    pub(crate) current_entries: SharedFlat,
    /// Leftover temporary files of an interrupted restore the preview found.
    pub(crate) stale_temps: Vec<PathBuf>,
}

/// A whole snapshot's paths, shared by the clones of a plan (and not printed in full).
#[derive(Clone, Default)]
pub(crate) struct SharedFlat(pub(crate) Arc<Flat>);

impl fmt::Debug for SharedFlat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{} paths>", self.0.len())
    }
}

impl RestorePlan {
    /// Whether any change is a conflict.
    pub fn has_conflicts(&self) -> bool {
        self.changes.iter().any(|c| c.conflict)
    }

    /// Whether restoring would change nothing.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// The changes a restore carries out: conflicts only when told to overwrite them.
    pub(crate) fn chosen(&self, overwrite_conflicts: bool) -> impl Iterator<Item = &Change> {
        self.changes
            .iter()
            .filter(move |c| overwrite_conflicts || !c.conflict)
    }

    /// The workspace's paths once the chosen changes are made: the preview's state with the
    /// target's entries written and the deleted paths gone.
    pub(crate) fn restored(&self, overwrite_conflicts: bool) -> Flat {
        let mut after = (*self.current_entries.0).clone();
        for change in self.chosen(overwrite_conflicts) {
            let rel = change.path.as_os_str().as_bytes();
            match self.target_entries.get(rel) {
                Some(entry) if change.action != Action::Delete => {
                    after.insert(rel.to_vec(), entry.clone());
                }
                _ => {
                    after.remove(rel);
                }
            }
        }
        after
    }
}

/// Compares the snapshot to restore with the current state and the expected one.
pub(crate) fn compare(
    target: &Flat,
    expected: &Flat,
    current: &Flat,
    limit: u64,
) -> (Vec<Change>, Vec<Unrestorable>, Flat) {
    let mut changes = Vec::new();
    let mut unrestorable = Vec::new();
    let mut writes = Flat::new();
    let (mut ts, mut cs) = (target.iter().peekable(), current.iter().peekable());
    // Both are sorted by path: one merge, looking up the expected state only where they differ.
    loop {
        let order = match (ts.peek(), cs.peek()) {
            (None, None) => break,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some((tp, _)), Some((cp, _))) => tp.cmp(cp),
        };
        let (path, t, c) = match order {
            Ordering::Less => match ts.next() {
                Some((p, t)) => (p, Some(t), None),
                None => break,
            },
            Ordering::Greater => match cs.next() {
                Some((p, c)) => (p, None, Some(c)),
                None => break,
            },
            Ordering::Equal => match (ts.next(), cs.next()) {
                (Some((p, t)), Some((_, c))) => (p, Some(t), Some(c)),
                _ => break,
            },
        };
        if t == c {
            continue;
        }
        let path_buf = Path::new(OsStr::from_bytes(path)).to_path_buf();
        if let Some(Entry::TooLarge { size, .. }) = t {
            unrestorable.push(Unrestorable {
                path: path_buf,
                reason: UnrestorableReason::TooLarge { size: *size, limit },
            });
            continue;
        }
        if let Some(Entry::TooLarge { size, .. }) = c {
            unrestorable.push(Unrestorable {
                path: path_buf,
                reason: UnrestorableReason::CurrentTooLarge { size: *size, limit },
            });
            continue;
        }
        let action = match (t, c) {
            (Some(t), Some(_)) => {
                writes.insert(path.clone(), t.clone());
                Action::Modify
            }
            (Some(t), None) => {
                writes.insert(path.clone(), t.clone());
                Action::Recreate
            }
            (None, _) => Action::Delete,
        };
        changes.push(Change {
            path: path_buf,
            action,
            conflict: c != expected.get(path),
        });
    }
    (changes, unrestorable, writes)
}

/// What a restore from `to` back to `from` would do, with no conflicts (for showing what a
/// turn changed).
pub(crate) fn diff(from: &Flat, to: &Flat, limit: u64) -> (Vec<Change>, Vec<Unrestorable>) {
    let (changes, unrestorable, _) = compare(from, to, to, limit);
    (changes, unrestorable)
}
