//! Reading one path of the workspace as a snapshot records it: relative to its folder's
//! descriptor (one path component for the kernel to look up, never following a link swapped
//! in), from the stat cache when its fingerprint is unchanged, else read and hashed.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::error::Result;
use crate::objects::{ObjectId, Objects};
use crate::stat_cache::{Fingerprint, StatCache};
use crate::tree::Entry;

/// The folder of the entries being read, kept open while the walker stays in it.
#[derive(Default)]
pub(crate) struct Parent {
    path: Vec<u8>,
    fd: Option<OwnedFd>,
}

impl Parent {
    /// The descriptor of `path`'s folder, opened (without following a link swapped in for
    /// it) when the walk moved to another folder.
    pub(crate) fn open(&mut self, path: &Path) -> io::Result<&OwnedFd> {
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

/// What a scan must do to the stat cache for a file it read.
pub(crate) enum CacheUpdate {
    /// The cached fingerprint matched.
    Hit,
    /// The file was hashed and has settled: remember it.
    Insert(Fingerprint, ObjectId),
    /// The file changed too recently to be trusted later, or is no longer a cacheable file.
    Remove,
}

/// The entry of one regular file `name` in `dir`: from the cache when its fingerprint is
/// unchanged, else read and stored. `None` if it is no longer a regular file. A failure to
/// store is the outer error; one to read the file the inner one.
pub(crate) fn read_file(
    dir: &OwnedFd,
    name: &OsStr,
    rel: &[u8],
    objects: &Objects,
    cache: &StatCache,
    max_file_bytes: u64,
    settled_ns: i64,
) -> Result<io::Result<(Option<Entry>, CacheUpdate)>> {
    let (content, fp) = match read_content(dir, name, rel, cache, max_file_bytes) {
        Ok(Probe::Cached(entry)) => return Ok(Ok((Some(entry), CacheUpdate::Hit))),
        Ok(Probe::Done(entry)) => return Ok(Ok((entry, CacheUpdate::Remove))),
        Ok(Probe::Content(content, fp)) => (content, fp),
        Err(e) => return Ok(Err(e)),
    };
    let hash = objects.put(&content)?;
    let update = if fp.mtime_ns < settled_ns && fp.ctime_ns < settled_ns {
        CacheUpdate::Insert(fp, hash)
    } else {
        CacheUpdate::Remove
    };
    let mode = fp.mode & 0o7777;
    Ok(Ok((Some(Entry::File { mode, hash }), update)))
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
