//! Replacing a file so that a crash, a `kill -9` or a full disk leaves either the old content
//! or the new one, never a truncated mix: the new content goes to a temporary file beside the
//! target, is flushed to disk, and is renamed over the target.

use std::fs::{File, Metadata, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// Mode of a new file before the umask, as `open(2)` callers conventionally ask.
const NEW_FILE_MODE: u32 = 0o666;
/// Bytes of the target's name kept in the temporary file's name (names have a length limit).
const NAME_BYTES_KEPT: usize = 96;

/// Creates or replaces `path` with `content` atomically, keeping the mode (and, where
/// allowed, the owner) of the file it replaces. On any failure the temporary file is removed
/// and the target is untouched. The rename replaces a symlink at `path` rather than
/// following it, so a link planted after the path was checked cannot redirect the write.
pub fn write_atomically(path: &Path, content: &[u8]) -> io::Result<()> {
    let (dir, name) = match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) if !dir.as_os_str().is_empty() => (dir, name),
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the path has no file name or folder",
            ));
        }
    };
    std::fs::create_dir_all(dir)?;
    let replaced = existing_regular(path)?;
    if replaced.is_some() {
        // A rename needs only the folder's permission; a read-only file stays read-only, as
        // it did when files were written in place. Opening without truncating changes nothing.
        std::fs::OpenOptions::new().write(true).open(path)?;
    }
    let mode = replaced
        .as_ref()
        .map_or(NEW_FILE_MODE, |meta| meta.mode() & 0o7777);
    let mut temp = tempfile::Builder::new()
        .prefix(&temp_prefix(&name.to_string_lossy()))
        .suffix(".corvid-tmp")
        .permissions(Permissions::from_mode(mode))
        .tempfile_in(dir)?;
    if let Some(meta) = &replaced {
        keep_owner(temp.as_file(), meta);
        // The umask narrowed the mode at creation (and a change of owner clears set-id bits).
        temp.as_file()
            .set_permissions(Permissions::from_mode(mode))?;
    }
    temp.write_all(content)?;
    temp.as_file().sync_all()?;
    // On failure the returned temporary file is dropped, which removes it.
    temp.persist(path).map_err(|e| e.error)?;
    sync_dir(dir);
    Ok(())
}

/// The metadata of the regular file being replaced; `None` for a new file (or a symlink,
/// which is replaced as a new file); an error for anything that is not a file.
fn existing_regular(path: &Path) -> io::Result<Option<Metadata>> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() => Ok(Some(meta)),
        Ok(meta) if meta.file_type().is_symlink() => Ok(None),
        Ok(meta) if meta.is_dir() => Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "it is a directory, not a file",
        )),
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "it is not a regular file (a FIFO, device or socket); only regular files are written",
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
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
fn keep_owner(temp: &File, replaced: &Metadata) {
    let Ok(now) = temp.metadata() else { return };
    if (now.uid(), now.gid()) == (replaced.uid(), replaced.gid()) {
        return;
    }
    if let Err(e) = std::os::unix::fs::fchown(temp, Some(replaced.uid()), Some(replaced.gid())) {
        tracing::debug!(error = %e, "could not keep the owner of a replaced file");
    }
}

/// Makes the rename durable. The new content is already in place when this fails, so a
/// failure is logged rather than reported as a failed write.
fn sync_dir(dir: &Path) {
    if let Err(e) = File::open(dir).and_then(|d| d.sync_all()) {
        tracing::warn!(dir = %dir.display(), error = %e, "could not flush the folder after a write");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_replaced_file_keeps_its_mode_and_a_new_file_gets_the_default() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("run.sh");
        std::fs::write(&script, "old").unwrap();
        std::fs::set_permissions(&script, Permissions::from_mode(0o750)).unwrap();

        write_atomically(&script, b"new").unwrap();
        write_atomically(&dir.path().join("sub/new.txt"), b"x").unwrap();

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

        write_atomically(&link, b"new").unwrap();

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
