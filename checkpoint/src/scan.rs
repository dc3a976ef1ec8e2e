//! Reading a workspace into a flat snapshot: every file, symlink and over-large file not
//! ignored by `.gitignore`, never anything under `.git`, with new contents stored as objects.
//!
//! The cost of an unchanged tree is one `lstat` per file, made relative to its folder's
//! descriptor ([`crate::probe`]), on several threads (like git's preloaded index): the walk is the `ignore` crate's parallel walker, each thread keeps
//! what it found, and the parts are sorted into one map at the end.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkState};

use crate::error::{Error, IoContext, Result};
use crate::objects::{ObjectId, Objects};
use crate::probe::{CacheUpdate, Parent, read_file};
use crate::stat_cache::{Fingerprint, StatCache};
use crate::tree::{Entry, Flat};

/// Names of the temporary files a restore writes; a restore killed midway leaves some, which
/// snapshots skip and the next restore removes.
pub(crate) const RESTORE_TEMP_PREFIX: &str = ".corvid-restore-";

/// A file changed this recently (ns) may change again within the same timestamp tick without
/// its fingerprint changing, so its hash is not cached (git's "racy clean" rule).
const RACY_WINDOW_NS: i64 = 2_000_000_000;

/// Walker threads: at least 4 even on fewer cores (like git's preloaded index, which runs up
/// to 20): an `lstat` may wait for the disk, and on a busy machine more threads get more of
/// it; at most 8, as `lstat` calls stop scaling early.
const MIN_THREADS: usize = 4;
const MAX_THREADS: usize = 8;

/// What a scan found.
pub(crate) struct Scan {
    pub(crate) flat: Flat,
    /// Leftover temporary files of an interrupted restore (absolute paths).
    pub(crate) stale_temps: Vec<PathBuf>,
}

/// Reads `workspace`, storing contents not stored yet and refreshing `cache`.
pub(crate) fn scan(
    workspace: &Path,
    store_dir: &Path,
    objects: &Objects,
    cache: &mut StatCache,
    max_file_bytes: u64,
) -> Result<Scan> {
    scan_with(
        workspace,
        store_dir,
        objects,
        cache,
        max_file_bytes,
        RACY_WINDOW_NS,
    )
}

/// What one walker thread found.
#[derive(Default)]
struct Part {
    found: Vec<(Vec<u8>, Entry)>,
    inserts: Vec<(Vec<u8>, Fingerprint, ObjectId)>,
    removes: Vec<Vec<u8>>,
    /// Files whose cached fingerprint matched.
    hits: usize,
    stale_temps: Vec<PathBuf>,
    /// A content could not be stored: the scan fails.
    error: Option<Error>,
}

/// The shared inputs of the walker threads, and where they leave their parts.
#[derive(Clone, Copy)]
struct Walk<'a> {
    root: &'a [u8],
    objects: &'a Objects,
    cache: &'a StatCache,
    max_file_bytes: u64,
    settled_ns: i64,
    parts: &'a Mutex<Vec<Part>>,
}

impl<'s> ParallelVisitorBuilder<'s> for Walk<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Visitor {
            walk: *self,
            part: Part::default(),
            parent: Parent::default(),
        })
    }
}

/// One walker thread's state; its part is handed over when the thread is done with it.
struct Visitor<'a> {
    walk: Walk<'a>,
    part: Part,
    parent: Parent,
}

impl Drop for Visitor<'_> {
    fn drop(&mut self) {
        let part = std::mem::take(&mut self.part);
        // A poisoned lock means another walker thread panicked; the scan fails with it.
        if let Ok(mut parts) = self.walk.parts.lock() {
            parts.push(part);
        }
    }
}

impl ParallelVisitor for Visitor<'_> {
    fn visit(&mut self, entry: std::result::Result<DirEntry, ignore::Error>) -> WalkState {
        match entry {
            Ok(entry) => self.entry(&entry),
            Err(e) => {
                tracing::warn!(error = %e, "checkpoint: cannot read part of the workspace");
                WalkState::Continue
            }
        }
    }
}

impl Visitor<'_> {
    fn entry(&mut self, entry: &DirEntry) -> WalkState {
        if entry.depth() == 0 {
            return WalkState::Continue;
        }
        let Some(file_type) = entry.file_type() else {
            return WalkState::Continue;
        };
        if !file_type.is_symlink() && !file_type.is_file() {
            // Folders are implied by their contents; sockets, FIFOs and devices are not captured.
            return WalkState::Continue;
        }
        let path = entry.path();
        let Some(rel) = relative(self.walk.root, path.as_os_str().as_bytes()) else {
            return WalkState::Continue;
        };
        let name = entry.file_name();
        if is_restore_temp(name.as_bytes()) {
            self.part.stale_temps.push(path.to_path_buf());
            return WalkState::Continue;
        }
        let dir = match self.parent.open(path) {
            Ok(dir) => dir,
            Err(e) => {
                skip(path, &e);
                return WalkState::Continue;
            }
        };
        if file_type.is_symlink() {
            match rustix::fs::readlinkat(dir, name, Vec::new()) {
                Ok(target) => self.part.found.push((
                    rel.to_vec(),
                    Entry::Symlink {
                        target: target.into_bytes(),
                    },
                )),
                Err(e) => skip(path, &e.into()),
            }
            return WalkState::Continue;
        }
        let w = &self.walk;
        // A failure to store is fatal (a snapshot missing a file would later delete it);
        // a file that cannot be read is left out with a warning.
        let read = read_file(
            dir,
            name,
            rel,
            w.objects,
            w.cache,
            w.max_file_bytes,
            w.settled_ns,
        );
        match read {
            Err(e) => {
                self.part.error = Some(e);
                return WalkState::Quit;
            }
            Ok(Err(e)) => skip(path, &e),
            Ok(Ok((entry, update))) => {
                match update {
                    CacheUpdate::Hit => self.part.hits += 1,
                    CacheUpdate::Insert(fp, hash) => {
                        self.part.inserts.push((rel.to_vec(), fp, hash));
                    }
                    CacheUpdate::Remove => self.part.removes.push(rel.to_vec()),
                }
                if let Some(entry) = entry {
                    self.part.found.push((rel.to_vec(), entry));
                }
            }
        }
        WalkState::Continue
    }
}

/// [`scan`] with the racy-clean window as a parameter (tests use 0 to exercise the cache).
fn scan_with(
    workspace: &Path,
    store_dir: &Path,
    objects: &Objects,
    cache: &mut StatCache,
    max_file_bytes: u64,
    racy_window_ns: i64,
) -> Result<Scan> {
    let settled_ns = now_ns() - racy_window_ns;
    // The walk does not follow links, so a workspace named through one is resolved first.
    let workspace = &std::fs::canonicalize(workspace).at(workspace)?;
    let store_dir = std::fs::canonicalize(store_dir).at(store_dir)?;
    let threads = std::thread::available_parallelism()
        .map_or(MIN_THREADS, |n| n.get().clamp(MIN_THREADS, MAX_THREADS));
    let mut walker = ignore::WalkBuilder::new(workspace);
    walker
        .hidden(false)
        .ignore(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .require_git(false)
        .follow_links(false)
        .threads(threads)
        .filter_entry(move |e| {
            e.file_name() != ".git"
                && !(e.file_type().is_some_and(|t| t.is_dir()) && e.path() == store_dir)
        });
    let parts = Mutex::new(Vec::new());
    walker.build_parallel().visit(&mut Walk {
        root: workspace.as_os_str().as_bytes(),
        objects,
        cache,
        max_file_bytes,
        settled_ns,
        parts: &parts,
    });
    let parts = parts
        .into_inner()
        .map_err(|_| Error::Corrupt("a checkpoint walker thread panicked".into()))?;
    let mut found = Vec::new();
    let mut stale_temps = Vec::new();
    let mut hits = 0;
    for part in parts {
        if let Some(e) = part.error {
            return Err(e);
        }
        for path in &part.removes {
            cache.remove(path);
        }
        hits += part.hits + part.inserts.len();
        for (path, fp, hash) in part.inserts {
            cache.insert(path, fp, hash);
        }
        found.extend(part.found);
        stale_temps.extend(part.stale_temps);
    }
    found.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let flat: Flat = found.into_iter().collect();
    // Sweep the paths that vanished only when some cached path was not seen.
    if cache.entries.len() != hits {
        cache.retain(|path| flat.contains_key(path));
    }
    Ok(Scan { flat, stale_temps })
}

/// `path` relative to the workspace `root`, as bytes (the walker's paths all start with it).
fn relative<'a>(root: &[u8], path: &'a [u8]) -> Option<&'a [u8]> {
    let rest = path.strip_prefix(root)?;
    let rest = rest.strip_prefix(b"/").unwrap_or(rest);
    (!rest.is_empty()).then_some(rest)
}

/// Whether `name` is exactly a restore's temporary name (`<prefix><pid>-<counter>`), so a
/// user's file that merely starts with the prefix is captured and never removed.
fn is_restore_temp(name: &[u8]) -> bool {
    let Some(rest) = name.strip_prefix(RESTORE_TEMP_PREFIX.as_bytes()) else {
        return false;
    };
    let mut parts = rest.split(|&b| b == b'-');
    let digits =
        |p: Option<&[u8]>| p.is_some_and(|p| !p.is_empty() && p.iter().all(u8::is_ascii_digit));
    digits(parts.next()) && digits(parts.next()) && parts.next().is_none()
}

fn skip(path: &Path, error: &std::io::Error) {
    if error.kind() != std::io::ErrorKind::NotFound {
        tracing::warn!(path = %path.display(), error = %error, "checkpoint: file not captured");
    }
}

/// Wall-clock time in nanoseconds since the epoch (the scale of file timestamps).
pub(crate) fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::fs::File;

    fn setup() -> (tempfile::TempDir, tempfile::TempDir, Objects, StatCache) {
        let ws = tempfile::tempdir().unwrap();
        let store = tempfile::tempdir().unwrap();
        let objects = Objects::new(store.path().join("objects"));
        let cache = StatCache::load(store.path().join("index"));
        (ws, store, objects, cache)
    }

    fn set_old_mtime(path: &Path) {
        let old = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
        File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }

    #[test]
    fn a_settled_file_is_cached_and_a_same_size_same_mtime_replacement_is_still_seen() {
        let (ws, store, objects, mut cache) = setup();
        let file = ws.path().join("a.txt");
        std::fs::write(&file, "aaaa").unwrap();
        set_old_mtime(&file);
        let first = scan_with(ws.path(), store.path(), &objects, &mut cache, 1 << 20, 0).unwrap();
        assert!(
            cache.entries.contains_key(b"a.txt".as_slice()),
            "not cached"
        );

        // Replaced the way `sed -i` does: same size, same mtime, new inode and ctime.
        let temp = ws.path().join("a.tmp");
        std::fs::write(&temp, "bbbb").unwrap();
        set_old_mtime(&temp);
        std::fs::rename(&temp, &file).unwrap();
        let second = scan_with(ws.path(), store.path(), &objects, &mut cache, 1 << 20, 0).unwrap();
        assert_ne!(
            first.flat.get(b"a.txt".as_slice()),
            second.flat.get(b"a.txt".as_slice())
        );
    }

    #[test]
    fn only_exact_restore_temp_names_are_treated_as_leftovers() {
        assert!(is_restore_temp(b".corvid-restore-123-0"));
        assert!(!is_restore_temp(b".corvid-restore-notes.txt"));
        assert!(!is_restore_temp(b".corvid-restore-1-2-3"));
        assert!(!is_restore_temp(b".corvid-restore-"));
    }

    #[test]
    fn a_recently_changed_file_is_never_cached() {
        let (ws, store, objects, mut cache) = setup();
        std::fs::write(ws.path().join("a.txt"), "a").unwrap();
        scan(ws.path(), store.path(), &objects, &mut cache, 1 << 20).unwrap();
        assert!(cache.entries.is_empty());
    }
}
