//! Reaching the folder of a file the tools change through directory descriptors opened from
//! the workspace root, so a folder swapped for a symlink between the path check and the
//! write (`renameat2(RENAME_EXCHANGE)` by a background process) cannot move the write out of
//! the workspace: every later step (`openat`, `mkdirat`, `renameat`, `unlinkat`) works on the
//! folder that was actually reached, never on a path resolved again.
//!
//! No symlink is followed below the root. [`crate::paths::resolve`] has already replaced
//! links inside the workspace by their targets (and refused those leaving it), so the path
//! handed here is made of real folders; one that is a link now changed after the check, and
//! the write is refused. One walk of `openat(O_DIRECTORY | O_NOFOLLOW)` per component serves
//! every kernel (`openat2` would save a few system calls next to the write's `fsync`, but
//! could not create missing folders on the way).

use std::ffi::OsString;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags, mkdirat, openat, statat};
use rustix::io::Errno;

use crate::paths::normalize;

/// Mode of a new folder before the umask, as `mkdir -p` asks.
const NEW_DIR_MODE: u32 = 0o777;

/// The folder holding `path`, opened from `root` without following any symlink, with the
/// file's name in it. `path` must lie (lexically) inside `root`; missing folders on the way
/// are created, each inside the folder descriptor reached so far.
pub fn open_parent_dir(root: &Path, path: &Path) -> io::Result<(OwnedFd, OsString)> {
    let rel = path.strip_prefix(normalize(root)).map_err(|_| {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            "it is outside the working directory",
        )
    })?;
    let mut names = Vec::new();
    for component in rel.components() {
        match component {
            Component::Normal(name) => names.push(name),
            Component::CurDir => {}
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "the path must not climb out with `..`",
                ));
            }
        }
    }
    let Some(file_name) = names.pop() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the path has no file name",
        ));
    };
    // The root is the user's choice, links in its own spelling included (so it is opened as
    // its canonical path is), once; below it nothing is followed.
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut dir = openat(CWD, root, flags, Mode::empty()).map_err(|e| {
        io::Error::new(
            io::Error::from(e).kind(),
            format!("the working directory cannot be opened: {e}"),
        )
    })?;
    let mut walked = PathBuf::new();
    for name in names {
        walked.push(name);
        dir = enter(&dir, name, &walked)?;
    }
    Ok((dir, file_name.to_owned()))
}

/// Opens (creating it when missing) the folder `name` inside `dir`; `walked` names it for
/// the error.
fn enter(dir: &OwnedFd, name: &std::ffi::OsStr, walked: &Path) -> io::Result<OwnedFd> {
    match open_dir(dir, name) {
        Ok(fd) => return Ok(fd),
        Err(Errno::NOENT) => {}
        Err(e) => return Err(not_a_folder(dir, name, walked, e)),
    }
    match mkdirat(dir, name, Mode::from_raw_mode(NEW_DIR_MODE)) {
        // Someone else made it meanwhile: open whatever is there, still without following.
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => return Err(e.into()),
    }
    open_dir(dir, name).map_err(|e| not_a_folder(dir, name, walked, e))
}

fn open_dir(
    dir: impl std::os::fd::AsFd,
    name: impl rustix::path::Arg,
) -> rustix::io::Result<OwnedFd> {
    openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// Why `name` could not be entered, in words the model can act on.
fn not_a_folder(dir: &OwnedFd, name: &std::ffi::OsStr, walked: &Path, e: Errno) -> io::Error {
    if !matches!(e, Errno::LOOP | Errno::NOTDIR) {
        return e.into();
    }
    let link = statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink);
    if link {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is a symbolic link (it changed after the path was checked); file tools \
                 write only through real folders, so nothing was written",
                walked.display()
            ),
        )
    } else {
        io::Error::new(
            io::ErrorKind::NotADirectory,
            format!("{} is not a folder", walked.display()),
        )
    }
}
