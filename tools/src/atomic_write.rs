//! Replacing a file so that a crash, a `kill -9` or a full disk leaves either the old content
//! or the new one, never a truncated mix: the new content goes to a temporary file beside the
//! target, is flushed to disk, and is renamed over the target. Every step works inside the
//! target's folder as opened by [`open_parent_dir`], never on a path resolved again, so a
//! folder swapped for a symlink meanwhile cannot redirect the write out of the workspace.

use std::collections::hash_map::RandomState;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use rustix::fs::{
    AtFlags, FileType, Mode, OFlags, Stat, fchmod, fsync, openat, renameat, statat, unlinkat,
};
use rustix::io::Errno;

use crate::beneath::open_parent_dir;

/// Mode of a new file before the umask, as `open(2)` callers conventionally ask.
const NEW_FILE_MODE: u32 = 0o666;
/// Bytes of the target's name kept in the temporary file's name (names have a length limit).
const NAME_BYTES_KEPT: usize = 96;
/// Temporary names tried before giving up (each is random; a taken one is skipped).
const TEMP_NAME_TRIES: usize = 16;

/// Creates or replaces `path` (inside the working directory `root`) with `content`
/// atomically, keeping the mode (and, where allowed, the owner) of the file it replaces. On
/// any failure the temporary file is removed and the target is untouched. The rename
/// replaces a symlink at `path` rather than following it, and no folder on the way is
/// reached through a symlink, so nothing planted after the path was checked can redirect the
/// write.
pub fn write_atomically(root: &Path, path: &Path, content: &[u8]) -> io::Result<()> {
    let (dir, name) = open_parent_dir(root, path)?;
    let replaced = existing_regular(&dir, &name)?;
    if replaced.is_some() {
        // A rename needs only the folder's permission; a read-only file stays read-only, as
        // it did when files were written in place. Opening without truncating changes nothing
        // (and neither follows a link nor waits on a FIFO swapped in meanwhile).
        openat(
            &dir,
            &name,
            OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
    }
    let mode = replaced
        .as_ref()
        .map_or(NEW_FILE_MODE, |st| st.st_mode & 0o7777);
    let temp = Temp::create(&dir, &name, mode)?;
    if let Some(st) = &replaced {
        keep_owner(&temp.file, st);
        // The umask narrowed the mode at creation (and a change of owner clears set-id bits).
        fchmod(&temp.file, Mode::from_raw_mode(mode))?;
    }
    (&temp.file).write_all(content)?;
    temp.file.sync_all()?;
    temp.rename_over(&name)?;
    sync_dir(&dir);
    Ok(())
}

/// The status of the regular file being replaced; `None` for a new file (or a symlink,
/// which is replaced as a new file); an error for anything that is not a file.
fn existing_regular(dir: &OwnedFd, name: &OsStr) -> io::Result<Option<Stat>> {
    let st = match statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(Errno::NOENT) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => Ok(Some(st)),
        FileType::Symlink => Ok(None),
        FileType::Directory => Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "it is a directory, not a file",
        )),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "it is not a regular file (a FIFO, device or socket); only regular files are written",
        )),
    }
}

/// A temporary file in the target's folder, unlinked from that same folder unless it was
/// renamed over the target.
struct Temp<'a> {
    dir: &'a OwnedFd,
    name: OsString,
    file: File,
    renamed: bool,
}

impl<'a> Temp<'a> {
    /// Creates a new, hidden, randomly named file beside `target` (never opening an existing
    /// name or following a link).
    fn create(dir: &'a OwnedFd, target: &OsStr, mode: u32) -> io::Result<Self> {
        let prefix = temp_prefix(&target.to_string_lossy());
        let random = RandomState::new();
        let mut last = Errno::EXIST;
        for attempt in 0..TEMP_NAME_TRIES {
            let mut hasher = random.build_hasher();
            hasher.write_usize(attempt);
            let name = OsString::from(format!("{prefix}{:016x}.corvid-tmp", hasher.finish()));
            match openat(
                dir,
                &name,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(mode),
            ) {
                Ok(fd) => {
                    return Ok(Self {
                        dir,
                        name,
                        file: File::from(fd),
                        renamed: false,
                    });
                }
                Err(Errno::EXIST) => last = Errno::EXIST,
                Err(e) => return Err(e.into()),
            }
        }
        Err(last.into())
    }

    /// Renames the temporary file over `target` in the same folder.
    fn rename_over(mut self, target: &OsStr) -> io::Result<()> {
        renameat(self.dir, &self.name, self.dir, target)?;
        self.renamed = true;
        Ok(())
    }
}

impl Drop for Temp<'_> {
    fn drop(&mut self) {
        if self.renamed {
            return;
        }
        if let Err(e) = unlinkat(self.dir, &self.name, AtFlags::empty()) {
            tracing::warn!(name = ?self.name, error = %e, "could not remove a temporary file");
        }
    }
}

/// `.name.` shortened on a character boundary, so the temporary name stays within limits
/// and is recognisable (and hidden) if a kill leaves it behind.
fn temp_prefix(name: &str) -> String {
    let mut end = name.len().min(NAME_BYTES_KEPT);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!(".{}.", &name[..end])
}

/// Gives the new file the replaced file's owner when that differs (only root may); a failure
/// leaves the writer as owner, as any editor's save would.
fn keep_owner(temp: &File, replaced: &Stat) {
    let Ok(now) = temp.metadata() else { return };
    if (now.uid(), now.gid()) == (replaced.st_uid, replaced.st_gid) {
        return;
    }
    if let Err(e) = std::os::unix::fs::fchown(temp, Some(replaced.st_uid), Some(replaced.st_gid)) {
        tracing::debug!(error = %e, "could not keep the owner of a replaced file");
    }
}

/// Makes the rename durable. The new content is already in place when this fails, so a
/// failure is logged rather than reported as a failed write.
fn sync_dir(dir: &OwnedFd) {
    if let Err(e) = fsync(dir) {
        tracing::warn!(error = %e, "could not flush the folder after a write");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::fs::Permissions;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_replaced_file_keeps_its_mode_and_a_new_file_gets_the_default() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("run.sh");
        std::fs::write(&script, "old").unwrap();
        std::fs::set_permissions(&script, Permissions::from_mode(0o750)).unwrap();

        write_atomically(dir.path(), &script, b"new").unwrap();
        write_atomically(dir.path(), &dir.path().join("sub/new.txt"), b"x").unwrap();

        assert_eq!(std::fs::read_to_string(&script).unwrap(), "new");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().mode() & 0o7777;
        assert_eq!(mode(&script), 0o750);
        assert_eq!(mode(&dir.path().join("sub/new.txt")), 0o666 & !umask());
    }

    /// The process umask, read without changing it (other tests run concurrently).
    fn umask() -> u32 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("Umask:")).unwrap();
        u32::from_str_radix(line["Umask:".len()..].trim(), 8).unwrap()
    }

    #[test]
    fn a_symlink_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("secret.txt");
        std::fs::write(&target, "keep").unwrap();
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink(&target, &link).unwrap();

        write_atomically(dir.path(), &link, b"new").unwrap();

        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert!(std::fs::symlink_metadata(&link).unwrap().is_file());
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "new");
    }

    #[test]
    fn a_temporary_name_is_hidden_and_bounded() {
        assert_eq!(temp_prefix("a.rs"), ".a.rs.");
        assert_eq!(temp_prefix(&"é".repeat(100)).len(), 1 + 96 + 1);
    }
}
