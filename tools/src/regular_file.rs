//! Opening a file a tool reads: a FIFO never blocks the call, a device or socket is never
//! opened, and no more than a bounded number of bytes is ever loaded whole.

use std::fs::{File, FileType, Metadata, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

/// The largest file loaded whole (by `edit`, `write_file`'s preview and `read_file` through
/// the file system seam); `read_file` pages larger ones from disk, the other tools refuse them.
pub const MAX_WHOLE_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// Opens `path` for reading only when it is a regular file (symlinks followed). The type is
/// checked before the open, so a device or socket is never opened, and the open is
/// non-blocking, so a FIFO swapped in between cannot hang the call; the opened file is
/// checked again.
pub fn open_regular(path: &Path) -> io::Result<(File, Metadata)> {
    let before = std::fs::metadata(path)?;
    ensure_regular(&before)?;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    ensure_regular(&meta)?;
    if (meta.dev(), meta.ino()) != (before.dev(), before.ino()) {
        return Err(io::Error::other(
            "it was replaced while being opened; try again",
        ));
    }
    Ok((file, meta))
}

/// Refuses anything but a regular file, naming what it is.
pub fn ensure_regular(meta: &Metadata) -> io::Result<()> {
    if meta.is_file() {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "it is {}, not a regular file; only regular files can be read",
            type_name(&meta.file_type())
        ),
    ))
}

fn type_name(file_type: &FileType) -> &'static str {
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_fifo() {
        "a named pipe (FIFO)"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

/// Reads a whole regular UTF-8 file of at most [`MAX_WHOLE_FILE_BYTES`].
pub fn read_whole_text(path: &Path) -> io::Result<String> {
    let (file, meta) = open_regular(path)?;
    if meta.len() > MAX_WHOLE_FILE_BYTES {
        return Err(too_large(meta.len()));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // The file may grow after the size check; never read past the bound.
    file.take(MAX_WHOLE_FILE_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_WHOLE_FILE_BYTES {
        return Err(too_large(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

fn too_large(len: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!(
            "it is {}, more than the {} corvid loads whole; read it in parts with read_file's \
             offset and limit, or search it with grep_search",
            human_size(len),
            human_size(MAX_WHOLE_FILE_BYTES)
        ),
    )
}

/// A byte count as people read it (`2.0 GiB`, `512 bytes`).
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return if bytes == 1 {
            "1 byte".to_owned()
        } else {
            format!("{bytes} bytes")
        };
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn sizes_are_spelled_in_binary_units() {
        assert_eq!(human_size(512), "512 bytes");
        assert_eq!(human_size(10 * 1024 * 1024), "10 MiB");
        assert_eq!(human_size(3 * 1024 * 1024 / 2), "1.5 MiB");
        assert_eq!(human_size(2 * 1024 * 1024 * 1024), "2 GiB");
    }
}
