//! How long checkpoints live: as long as their session's recording (issue 26). A journal whose
//! session has no recording any more (deleted with `corvid sessions delete` or by hand) and
//! that no running session holds open is an orphan: the next budget pass, `corvid checkpoints
//! prune` and `corvid sessions delete` remove it and the snapshots only it named, then the
//! content no remaining snapshot needs. The budget (`checkpoints.maxBytes`) prunes the oldest
//! checkpoints first. A fork starts with a copy of its parent's journal, so it can undo the
//! turns it inherited; the content is shared, so the copy costs one small file.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use corvid_checkpoint::{SnapshotId, Store};

use super::journal::{self, Entry, Journal};
use super::{CheckpointError, human_bytes, project_key};

/// Where the recordings of `workspace`'s sessions are: a journal is an orphan when its
/// session's `<id>.jsonl` is not there.
pub(crate) fn recordings_dir(corvid_home: &Path, workspace: &Path) -> PathBuf {
    crate::session::SessionStore::new(corvid_home).project_dir(workspace)
}

/// The folder `Store::open` uses for `workspace`, found without creating it.
fn store_dir(corvid_home: &Path, workspace: &Path) -> PathBuf {
    corvid_home.join("checkpoints").join(project_key(workspace))
}

/// Prunes the store to `max_bytes` when it holds more, oldest checkpoints (so oldest
/// sessions) first, deleting the journals of sessions left with none; the notice says so.
pub(crate) fn enforce_budget(
    store: &mut Store,
    max_bytes: u64,
) -> Result<Option<String>, CheckpointError> {
    // Cheap: no listing of the store's objects unless the running count passes the budget.
    if store.stored_bytes_estimate()? <= max_bytes {
        return Ok(None);
    }
    let report = store.prune(max_bytes)?;
    if report.removed.is_empty() {
        return Ok(None);
    }
    let sessions = remove_emptied_journals(store)?;
    Ok(Some(format!(
        "checkpoints: this project's store passed `checkpoints.maxBytes` ({}); removed the {} \
         oldest checkpoints ({} session(s) entirely), freeing {}. Turns that needed them can no \
         longer be undone.",
        human_bytes(max_bytes),
        report.removed.len(),
        sessions,
        human_bytes(report.freed_bytes),
    )))
}

/// Deletes the journals none of whose snapshots is kept; returns how many.
fn remove_emptied_journals(store: &Store) -> Result<usize, CheckpointError> {
    let kept: HashSet<SnapshotId> = store.list()?.into_iter().map(|s| s.id).collect();
    let mut removed = 0;
    for (_, journal) in journals(store.dir())? {
        let entries = journal.entries()?;
        if journal::snapshots(&entries)
            .iter()
            .all(|id| !kept.contains(id))
        {
            journal.remove()?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Removes the orphaned journals (see the module documentation), the snapshots no other
/// journal names, and the content only those needed. The notice says what was freed; `None`
/// when there was no orphan.
pub(crate) fn sweep_orphans(
    store: &mut Store,
    recordings: &Path,
) -> Result<Option<String>, CheckpointError> {
    let mut orphans = Vec::new();
    let mut needed: HashSet<SnapshotId> = HashSet::new();
    for (id, journal) in journals(store.dir())? {
        if is_orphan(&id, &journal, recordings)? {
            orphans.push(journal);
        } else {
            needed.extend(journal::snapshots(&journal.entries()?));
        }
    }
    if orphans.is_empty() {
        return Ok(None);
    }
    let mut only_theirs: HashSet<SnapshotId> = HashSet::new();
    for journal in &orphans {
        only_theirs.extend(
            journal::snapshots(&journal.entries()?)
                .into_iter()
                .filter(|id| !needed.contains(id)),
        );
        journal.remove()?;
    }
    let report = store.forget(&only_theirs)?;
    let notice = format!(
        "checkpoints: removed the checkpoints of {} session(s) whose recording is gone, \
         freeing {}",
        orphans.len(),
        human_bytes(report.freed_bytes)
    );
    tracing::info!("{notice}");
    Ok(Some(notice))
}

/// Whether journal `id` belongs to no session any more: no recording, and no process holds it.
fn is_orphan(id: &str, journal: &Journal, recordings: &Path) -> Result<bool, CheckpointError> {
    let recorded = recordings.join(format!("{id}.jsonl")).exists();
    Ok(!recorded && !journal.in_use()?)
}

/// The journals of a store folder, by session id.
fn journals(store_dir: &Path) -> Result<Vec<(String, Journal)>, CheckpointError> {
    let dir = store_dir.join("sessions");
    let read = match std::fs::read_dir(&dir) {
        Ok(read) => read,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut out = Vec::new();
    for entry in read {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if let Some(id) = name.strip_suffix(".turns")
            && let Some(journal) = Journal::new(store_dir, id)
        {
            out.push((id.to_owned(), journal));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Starts the journal of `child`, a fork of `parent`, with a copy of the parent's: the fork can
/// undo the turns it inherited. A fork from before `before_turn` has that turn and the later
/// ones cut, as its conversation has. Nothing is written when the parent has no journal.
pub fn fork_journal(
    corvid_home: &Path,
    workspace: &Path,
    parent: &str,
    child: &str,
    before_turn: Option<u32>,
) -> Result<(), CheckpointError> {
    let dir = store_dir(corvid_home, workspace);
    let (Some(parent), Some(mut child)) = (Journal::new(&dir, parent), Journal::new(&dir, child))
    else {
        return Ok(());
    };
    let entries = parent.entries()?;
    if entries.is_empty() {
        return Ok(());
    }
    for entry in &entries {
        child.append(entry)?;
    }
    if let Some(to_turn) = before_turn {
        child.append(&Entry::Rewound { to_turn })?;
    }
    Ok(())
}

/// One session's journal, for `corvid checkpoints list`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SessionJournal {
    /// The session's id.
    pub id: String,
    /// How many turns can still be undone.
    pub turns: usize,
    /// Its session's recording is gone (and no running corvid holds it): the next prune
    /// frees it.
    pub orphaned: bool,
}

/// A project's stored checkpoints, for `corvid checkpoints list`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ProjectCheckpoints {
    /// The store's folder.
    pub dir: PathBuf,
    /// Bytes its objects take.
    pub stored_bytes: u64,
    /// Snapshots kept.
    pub snapshots: usize,
    /// Sessions with a journal.
    pub sessions: Vec<SessionJournal>,
}

/// What the store of `workspace` holds.
pub fn describe_project(
    corvid_home: &Path,
    workspace: &Path,
) -> Result<ProjectCheckpoints, CheckpointError> {
    let store = Store::open(corvid_home, &project_key(workspace))?;
    let recordings = recordings_dir(corvid_home, workspace);
    let mut sessions = Vec::new();
    for (id, journal) in journals(store.dir())? {
        let (turns, _) = journal::replay(&journal.entries()?);
        sessions.push(SessionJournal {
            orphaned: is_orphan(&id, &journal, &recordings)?,
            id,
            turns: turns.len(),
        });
    }
    Ok(ProjectCheckpoints {
        dir: store.dir().to_path_buf(),
        stored_bytes: store.stored_bytes()?,
        snapshots: store.list()?.len(),
        sessions,
    })
}

/// `corvid checkpoints prune`: frees the orphaned journals' checkpoints, then prunes the
/// store of `workspace` down to `max_bytes`; the notices of what was removed.
pub fn prune_project(
    corvid_home: &Path,
    workspace: &Path,
    max_bytes: u64,
) -> Result<Vec<String>, CheckpointError> {
    let mut store = Store::open(corvid_home, &project_key(workspace))?;
    let mut notices: Vec<String> =
        sweep_orphans(&mut store, &recordings_dir(corvid_home, workspace))?
            .into_iter()
            .collect();
    notices.extend(enforce_budget(&mut store, max_bytes)?);
    Ok(notices)
}

/// After a session's recording was deleted: frees its checkpoints (and any other orphan's)
/// at once. Nothing is done (nor created) when the project has no checkpoints.
pub fn free_deleted_sessions(
    corvid_home: &Path,
    workspace: &Path,
) -> Result<Option<String>, CheckpointError> {
    if !store_dir(corvid_home, workspace).is_dir() {
        return Ok(None);
    }
    let mut store = Store::open(corvid_home, &project_key(workspace))?;
    sweep_orphans(&mut store, &recordings_dir(corvid_home, workspace))
}
