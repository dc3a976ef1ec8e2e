//! Reaching a workspace path for a restore without ever following a symlink below the
//! workspace root: each folder is opened relative to the previous one with `O_NOFOLLOW`, so a
//! folder replaced by a link to somewhere else (by the model, or meanwhile) is an error, never
//! a write outside the workspace.

use std::ffi::OsStr;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{Mode, OFlags, mkdirat, openat};
use rustix::io::Errno;

/// Splits a snapshot path into its folders and its file name, refusing anything that could
/// leave the workspace (`..`, empty or absolute parts).
pub(crate) fn split(rel: &[u8]) -> io::Result<(Vec<&OsStr>, &OsStr)> {
    let mut parts: Vec<&OsStr> = Vec::new();
    for part in rel.split(|&b| b == b'/') {
        if part.is_empty() || part == b"." || part == b".." {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a checkpoint path leaves the workspace",
            ));
        }
        parts.push(OsStr::from_bytes(part));
    }
    let name = parts
        .pop()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "an empty checkpoint path"))?;
    Ok((parts, name))
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Opens the folder `dirs` under `root` (which itself may be reached through links), creating
/// missing folders when `create` is set. A part that is a file or a symlink fails with
/// `ENOTDIR`/`ELOOP`.
pub(crate) fn open_dir(root: &Path, dirs: &[&OsStr], create: bool) -> io::Result<OwnedFd> {
    let mut fd = rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    for part in dirs {
        fd = match openat(&fd, *part, DIR_FLAGS, Mode::empty()) {
            Ok(next) => next,
            Err(Errno::NOENT) if create => {
                match mkdirat(&fd, *part, Mode::from_raw_mode(0o777)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(e.into()),
                }
                openat(&fd, *part, DIR_FLAGS, Mode::empty())?
            }
            Err(e) => return Err(e.into()),
        };
    }
    Ok(fd)
}
