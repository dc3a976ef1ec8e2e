//! Reading a workspace into a flat snapshot: every file, symlink and over-large file not
//! ignored by `.gitignore`, never anything under `.git`, with new contents stored as objects.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::error::{IoContext, Result};
use crate::objects::{ObjectId, Objects};
use crate::stat_cache::{Fingerprint, StatCache};
use crate::tree::{Entry, Flat};

/// Names of the temporary files a restore writes; a restore killed midway leaves some, which
/// snapshots skip and the next restore removes.
pub(crate) const RESTORE_TEMP_PREFIX: &str = ".corvid-restore-";

/// A file changed this recently (ns) may change again within the same timestamp tick without
/// its fingerprint changing, so its hash is not cached (git's "racy clean" rule).
const RACY_WINDOW_NS: i64 = 2_000_000_000;

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

/// [`scan`] with the racy-clean window as a parameter (tests use 0 to exercise the cache).
///
/// The cost of an unchanged tree is one `lstat` per file: each is made relative to its
/// folder's descriptor (one path component for the kernel to look up, not the whole absolute
/// path), paths are cut from the walker's by bytes, and the cache is only swept for vanished
/// paths when some cached path was not seen.
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
    let mut walker = ignore::WalkBuilder::new(workspace);
    walker
        .hidden(false)
        .ignore(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(move |e| {
            e.file_name() != ".git"
                && !(e.file_type().is_some_and(|t| t.is_dir()) && e.path() == store_dir)
        });
    let mut found: Vec<(Vec<u8>, Entry)> = Vec::new();
    let mut stale_temps = Vec::new();
    let mut parent = Parent::default();
    let root = workspace.as_os_str().as_bytes();
    let mut seen = 0usize;
    for entry in walker.build() {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                tracing::warn!(error = %e, "checkpoint: cannot read part of the workspace");
                continue;
            }
        };
        if entry.depth() == 0 {
            continue;
        }
        let Some(file_type) = entry.file_type() else {
            continue;
        };
        if !file_type.is_symlink() && !file_type.is_file() {
            // Folders are implied by their contents; sockets, FIFOs and devices are not captured.
            continue;
        }
        let path = entry.path();
        let Some(rel) = relative(root, path.as_os_str().as_bytes()) else {
            continue;
        };
        if is_restore_temp(entry.file_name().as_bytes()) {
            stale_temps.push(path.to_path_buf());
            continue;
        }
        let dir = match parent.open(path) {
            Ok(dir) => dir,
            Err(e) => {
                skip(path, &e);
                continue;
            }
        };
        let name = entry.file_name();
        if file_type.is_symlink() {
            match rustix::fs::readlinkat(dir, name, Vec::new()) {
                Ok(target) => found.push((
                    rel.to_vec(),
                    Entry::Symlink {
                        target: target.into_bytes(),
                    },
                )),
                Err(e) => skip(path, &e.into()),
            }
            continue;
        }
        // A failure to store is fatal (a snapshot missing a file would later delete it);
        // a file that cannot be read is left out with a warning.
        match read_file(dir, name, rel, objects, cache, max_file_bytes, settled_ns)? {
            Ok((Some(e), cached)) => {
                seen += usize::from(cached);
                found.push((rel.to_vec(), e));
            }
            Ok((None, _)) => {}
            Err(e) => skip(path, &e),
        }
    }
    // The walker yields folders depth first, almost in path order: the sort is cheap.
    found.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let flat: Flat = found.into_iter().collect();
    if cache.entries.len() != seen {
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

/// The folder of the entries being read, kept open while the walker stays in it.
#[derive(Default)]
struct Parent {
    path: Vec<u8>,
    fd: Option<OwnedFd>,
}

impl Parent {
    /// The descriptor of `path`'s folder, opened (without following a link swapped in for
    /// it) when the walk moved to another folder.
    fn open(&mut self, path: &Path) -> io::Result<&OwnedFd> {
        let bytes = path.as_os_str().as_bytes();
        let cut = bytes.iter().rposition(|&b| b == b'/').unwrap_or(0);
        let folder = if cut == 0 {
            b"/".as_slice()
        } else {
            &bytes[..cut]
        };
        if self.fd.is_none() || self.path != folder {
            self.fd = None;
            let fd = rustix::fs::open(
                OsStr::from_bytes(folder),
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            self.path.clear();
            self.path.extend_from_slice(folder);
            self.fd = Some(fd);
        }
        self.fd
            .as_ref()
            .ok_or_else(|| io::Error::other("no folder descriptor"))
    }
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

fn skip(path: &Path, error: &io::Error) {
    if error.kind() != io::ErrorKind::NotFound {
        tracing::warn!(path = %path.display(), error = %error, "checkpoint: file not captured");
    }
}

/// The entry of one regular file `name` in `dir`: from the cache when its fingerprint is
/// unchanged (the flag is then true), else read (without following a link swapped in
/// meanwhile) and stored. `None` if it is no longer a regular file.
fn read_file(
    dir: &OwnedFd,
    name: &OsStr,
    rel: &[u8],
    objects: &Objects,
    cache: &mut StatCache,
    max_file_bytes: u64,
    settled_ns: i64,
) -> Result<io::Result<(Option<Entry>, bool)>> {
    let (content, fp) = match read_content(dir, name, rel, cache, max_file_bytes) {
        Ok(Probe::Cached(entry)) => return Ok(Ok((Some(entry), true))),
        Ok(Probe::Done(entry)) => {
            cache.remove(rel);
            return Ok(Ok((entry, false)));
        }
        Ok(Probe::Content(content, fp)) => (content, fp),
        Err(e) => return Ok(Err(e)),
    };
    let hash = objects.put(&content)?;
    let cached = fp.mtime_ns < settled_ns && fp.ctime_ns < settled_ns;
    if cached {
        cache.insert(rel.to_vec(), fp, hash);
    } else {
        cache.remove(rel);
    }
    let mode = fp.mode & 0o7777;
    Ok(Ok((Some(Entry::File { mode, hash }), cached)))
}

/// The entry `name` in `dir` has now, as a snapshot would record it, without storing its
/// content or changing the cache (a restore checks with it that the files it is about to
/// replace are still as the preview saw them). `None` when nothing a snapshot captures is
/// there.
pub(crate) fn current_entry(
    dir: &OwnedFd,
    name: &OsStr,
    rel: &[u8],
    cache: &StatCache,
    max_file_bytes: u64,
) -> io::Result<Option<Entry>> {
    let stat = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        Err(Errno::NOENT) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink {
        let target = rustix::fs::readlinkat(dir, name, Vec::new())?;
        return Ok(Some(Entry::Symlink {
            target: target.into_bytes(),
        }));
    }
    Ok(match read_content(dir, name, rel, cache, max_file_bytes)? {
        Probe::Cached(entry) => Some(entry),
        Probe::Done(entry) => entry,
        Probe::Content(content, fp) => Some(Entry::File {
            mode: fp.mode & 0o7777,
            hash: ObjectId::of(&content),
        }),
    })
}

/// A file's entry when known without reading it, or its content to store.
enum Probe {
    /// From the stat cache.
    Cached(Entry),
    Done(Option<Entry>),
    Content(Vec<u8>, Fingerprint),
}

fn read_content(
    dir: &OwnedFd,
    name: &OsStr,
    rel: &[u8],
    cache: &StatCache,
    max_file_bytes: u64,
) -> io::Result<Probe> {
    let stat = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        Err(Errno::NOENT) => return Ok(Probe::Done(None)),
        Err(e) => return Err(e.into()),
    };
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Ok(Probe::Done(None));
    }
    let fp = Fingerprint::of(&stat);
    let mode = fp.mode & 0o7777;
    if fp.size > max_file_bytes {
        return Ok(Probe::Done(Some(too_large(&fp, mode))));
    }
    if let Some(hash) = cache.lookup(rel, &fp) {
        return Ok(Probe::Cached(Entry::File { mode, hash }));
    }
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )?;
    let stat = rustix::fs::fstat(&fd)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Ok(Probe::Done(None));
    }
    let fp = Fingerprint::of(&stat);
    let mut content = Vec::with_capacity(usize::try_from(fp.size).unwrap_or(0));
    File::from(fd)
        .take(max_file_bytes + 1)
        .read_to_end(&mut content)?;
    if content.len() as u64 > max_file_bytes {
        return Ok(Probe::Done(Some(too_large(&fp, fp.mode & 0o7777))));
    }
    Ok(Probe::Content(content, fp))
}

fn too_large(fp: &Fingerprint, mode: u32) -> Entry {
    Entry::TooLarge {
        mode,
        size: fp.size,
        mtime_ns: fp.mtime_ns,
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
