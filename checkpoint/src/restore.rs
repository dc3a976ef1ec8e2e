//! Carrying out a restore plan so that every file ends either as it was or as the snapshot
//! had it, even if the process is killed midway: every new version is first written to a
//! temporary file in its own folder and flushed, and only then renamed over the old one
//! (a rename within a folder is atomic); deletions come between the two phases.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, Mode, OFlags, fchmod, openat, renameat, symlinkat, unlinkat};
use rustix::io::Errno;

use crate::beneath::{open_dir, split};
use crate::error::{Error, IoContext, Result};
use crate::objects::Objects;
use crate::plan::{Action, RestorePlan};
use crate::probe::current_entry;
use crate::scan::RESTORE_TEMP_PREFIX;
use crate::stat_cache::StatCache;
use crate::tree::Entry;

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A new version written to a temporary file, waiting for its rename.
struct Staged {
    rel: Vec<u8>,
    temp: OsString,
    /// A regular file (whose data needs flushing), not a link (all metadata, which the
    /// filesystem's journal orders before the rename).
    file: bool,
}

/// Applies `plan` to its workspace; conflicting paths only when `overwrite_conflicts`.
pub(crate) fn apply(
    objects: &Objects,
    plan: &RestorePlan,
    overwrite_conflicts: bool,
) -> Result<()> {
    let root = plan.workspace.as_path();
    let mut writes = Vec::new();
    let mut deletes = Vec::new();
    for change in plan.chosen(overwrite_conflicts) {
        let rel = change.path.as_os_str().as_bytes().to_vec();
        match change.action {
            Action::Delete => deletes.push(rel),
            Action::Modify | Action::Recreate => {
                let entry = plan.target_entries.get(&rel).ok_or_else(|| {
                    Error::Corrupt(format!("the plan lacks {}", change.path.display()))
                })?;
                writes.push((rel, entry));
            }
        }
    }

    // Phase 1: every new version into a temporary file. A folder that does not exist yet
    // because a file or link stands in its way (to be deleted in phase 2) waits until then.
    let mut staged = Vec::new();
    let mut deferred = Vec::new();
    for (rel, entry) in &writes {
        match stage(root, objects, rel, entry, false) {
            Ok(s) => staged.push(s),
            Err(StageError::Blocked) => deferred.push((rel, *entry)),
            Err(StageError::Failed(e)) => {
                discard(root, &staged);
                return Err(e);
            }
        }
    }

    // Every new version reaches the disk before any rename, so a crash of the machine cannot
    // leave a renamed but empty file either. Each file is flushed on its own (`fdatasync`),
    // several at once so the filesystem's journal commits them together: a `syncfs` would
    // also wait for every other program's unwritten data (a build's, say).
    if let Err(e) = flush_all(root, &staged) {
        discard(root, &staged);
        return Err(e);
    }

    // Phase 2: deletions, deepest first, then the folders they emptied.
    deletes.sort_by(|a, b| b.cmp(a));
    for rel in &deletes {
        if let Err(e) = remove(root, rel) {
            discard(root, &staged);
            return Err(e).at(&root.join(OsStr::from_bytes(rel)));
        }
    }
    remove_emptied_dirs(root, &deletes);

    // Phase 3: the renames, then the writes that had to wait for room.
    for s in &staged {
        commit(root, s).at(&root.join(OsStr::from_bytes(&s.rel)))?;
    }
    for (rel, entry) in deferred {
        let s = stage(root, objects, rel, entry, true).map_err(|e| match e {
            StageError::Failed(e) => e,
            StageError::Blocked => Error::Io {
                path: root.join(OsStr::from_bytes(rel)),
                source: io::Error::new(
                    io::ErrorKind::NotADirectory,
                    "a file or link kept in place stands where a folder must be",
                ),
            },
        })?;
        commit(root, &s).at(&root.join(OsStr::from_bytes(rel)))?;
    }
    Ok(())
}

/// Fails with [`Error::WorkspaceChanged`] unless every path the restore is about to change is
/// still as the preview saw it (someone may have edited it while the preview was shown). Only
/// those paths are checked, each with one `lstat` (and a read when the stat cache cannot
/// vouch for it), not the whole workspace: a change elsewhere is not touched by the restore.
pub(crate) fn check_unchanged(
    plan: &RestorePlan,
    overwrite_conflicts: bool,
    cache: &StatCache,
    max_file_bytes: u64,
) -> Result<()> {
    let root = plan.workspace.as_path();
    for change in plan.chosen(overwrite_conflicts) {
        let rel = change.path.as_os_str().as_bytes();
        let full = root.join(&change.path);
        let (dirs, name) = split(rel).at(&full)?;
        let now = match open_dir(root, &dirs, false) {
            Ok(dir) => current_entry(&dir, name, rel, cache, max_file_bytes).at(&full)?,
            // The folder is gone, or a file or a link stands in its place: no entry there.
            Err(e) if e.kind() == io::ErrorKind::NotFound || is_blocked(&e) => None,
            Err(e) => return Err(e).at(&full),
        };
        if now.as_ref() != plan.current_entries.0.get(rel) {
            return Err(Error::WorkspaceChanged);
        }
    }
    Ok(())
}

/// Threads flushing staged files at once (each mostly waits for the disk).
const FLUSH_THREADS: usize = 8;

/// Flushes the data of every staged temporary file, on up to [`FLUSH_THREADS`] threads.
fn flush_all(root: &Path, staged: &[Staged]) -> Result<()> {
    if staged.is_empty() {
        return Ok(());
    }
    let chunk = staged.len().div_ceil(FLUSH_THREADS);
    std::thread::scope(|scope| {
        let workers: Vec<_> = staged
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().try_for_each(|s| flush_one(root, s))))
            .collect();
        workers.into_iter().try_for_each(|w| {
            w.join()
                .unwrap_or_else(|_| Err(Error::Corrupt("a restore flush thread panicked".into())))
        })
    })
}

fn flush_one(root: &Path, s: &Staged) -> Result<()> {
    if !s.file {
        return Ok(());
    }
    let full = root.join(OsStr::from_bytes(&s.rel));
    let (dirs, _) = split(&s.rel).at(&full)?;
    let dir = open_dir(root, &dirs, false).at(&full)?;
    let fd = openat(
        &dir,
        &s.temp,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(io::Error::from)
    .at(&full)?;
    rustix::fs::fdatasync(&fd)
        .map_err(io::Error::from)
        .at(&full)
}

/// Removes leftover temporary files of an interrupted restore.
pub(crate) fn remove_stale_temps(paths: &[PathBuf]) {
    for path in paths {
        if let Err(e) = std::fs::remove_file(path) {
            tracing::warn!(path = %path.display(), error = %e, "cannot remove a restore's leftover file");
        }
    }
}

enum StageError {
    /// A part of the path is a file or a symlink, not a folder.
    Blocked,
    Failed(Error),
}

fn stage(
    root: &Path,
    objects: &Objects,
    rel: &[u8],
    entry: &Entry,
    flush: bool,
) -> std::result::Result<Staged, StageError> {
    let full = root.join(OsStr::from_bytes(rel));
    let (dirs, _) = split(rel).map_err(|e| {
        StageError::Failed(Error::Io {
            path: full.clone(),
            source: e,
        })
    })?;
    let dir = match open_dir(root, &dirs, true) {
        Ok(dir) => dir,
        Err(e) if is_blocked(&e) => return Err(StageError::Blocked),
        Err(e) => {
            return Err(StageError::Failed(Error::Io {
                path: full,
                source: e,
            }));
        }
    };
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let temp = OsString::from(format!("{RESTORE_TEMP_PREFIX}{}-{n}", std::process::id()));
    let written = match entry {
        Entry::File { mode, hash } => objects
            .get(hash)
            .and_then(|content| write_temp(&dir, &temp, *mode, &content, flush).at(&full)),
        Entry::Symlink { target } => symlinkat(OsStr::from_bytes(target), &dir, &temp)
            .map_err(io::Error::from)
            .at(&full),
        Entry::TooLarge { .. } => Err(Error::Corrupt(format!(
            "{} was not captured",
            full.display()
        ))),
    };
    match written {
        Ok(()) => Ok(Staged {
            rel: rel.to_vec(),
            temp,
            file: matches!(entry, Entry::File { .. }),
        }),
        Err(e) => {
            let _ = unlinkat(&dir, &temp, AtFlags::empty());
            Err(StageError::Failed(e))
        }
    }
}

/// Whether opening a folder failed because a file or a symlink stands in its place.
fn is_blocked(e: &io::Error) -> bool {
    let code = e.raw_os_error();
    code == Some(Errno::NOTDIR.raw_os_error()) || code == Some(Errno::LOOP.raw_os_error())
}

/// Writes a temporary file with the snapshot's mode; flushed to disk now only when asked
/// (the first phase flushes all its files at once).
fn write_temp(
    dir: &OwnedFd,
    temp: &OsStr,
    mode: u32,
    content: &[u8],
    flush: bool,
) -> io::Result<()> {
    let fd = openat(
        dir,
        temp,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )?;
    let mut file = File::from(fd);
    file.write_all(content)?;
    // The umask narrowed the mode at creation; the snapshot's bits are put back exactly.
    fchmod(&file, Mode::from_raw_mode(mode))?;
    if flush {
        file.sync_all()?;
    }
    Ok(())
}

/// Renames a staged temporary file over its target (replacing a file or a link, not
/// following it).
fn commit(root: &Path, s: &Staged) -> io::Result<()> {
    let (dirs, name) = split(&s.rel)?;
    let dir = open_dir(root, &dirs, false)?;
    renameat(&dir, &s.temp, &dir, name)?;
    Ok(())
}

fn remove(root: &Path, rel: &[u8]) -> io::Result<()> {
    let (dirs, name) = split(rel)?;
    let dir = match open_dir(root, &dirs, false) {
        Ok(dir) => dir,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    match unlinkat(&dir, name, AtFlags::empty()) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Removes the folders that deleting `deleted` left empty (deepest first); a folder that
/// still holds anything, ignored files included, stays.
fn remove_emptied_dirs(root: &Path, deleted: &[Vec<u8>]) {
    let mut dirs: Vec<&[u8]> = Vec::new();
    for rel in deleted {
        let mut rest: &[u8] = rel;
        while let Some(i) = rest.iter().rposition(|&b| b == b'/') {
            rest = &rest[..i];
            dirs.push(rest);
        }
    }
    dirs.sort_by(|a, b| b.len().cmp(&a.len()).then(b.cmp(a)));
    dirs.dedup();
    for rel in dirs {
        let Ok((parents, name)) = split(rel) else {
            continue;
        };
        if let Ok(dir) = open_dir(root, &parents, false) {
            // ENOTEMPTY and the like mean the folder is still needed.
            let _ = unlinkat(&dir, name, AtFlags::REMOVEDIR);
        }
    }
}

/// Removes the temporary files of a restore that failed before any rename.
fn discard(root: &Path, staged: &[Staged]) {
    for s in staged {
        if let Ok((dirs, _)) = split(&s.rel)
            && let Ok(dir) = open_dir(root, &dirs, false)
        {
            let _ = unlinkat(&dir, &s.temp, AtFlags::empty());
        }
    }
}
