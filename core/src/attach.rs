//! Files a user attaches to a prompt (an editor's resource link, `@path` in the TUI): the model
//! gets their contents, capped, not only their name. The user chose the file, so it is read
//! wherever it is; front ends decide which paths a user may name (the TUI keeps `@path` inside
//! the workspace).

use std::io::Read;
use std::path::Path;

/// The most bytes of one attached file the model sees; the rest is cut with a marker.
pub const MAX_ATTACHED_BYTES: usize = 256 * 1024;

/// Bytes looked at to tell a binary file (a NUL byte) from text.
const SNIFF_BYTES: usize = 8 * 1024;

/// The prompt context for the file at `path`, labelled `shown` (the path as the user wrote it):
/// its text, cut at [`MAX_ATTACHED_BYTES`] with a marker; a short note instead for a binary
/// file, or for one that cannot be read (a directory, a FIFO, no permission).
pub fn file_context(path: &Path, shown: &str) -> String {
    let body = match read_capped(path) {
        Ok(Head { bytes, size }) => render(&bytes, size),
        Err(err) => format!("[the file could not be read: {err}]"),
    };
    format!(
        "<context ref=\"{}\">\n{body}\n</context>",
        shown.replace('"', "&quot;")
    )
}

struct Head {
    bytes: Vec<u8>,
    size: u64,
}

fn read_capped(path: &Path) -> std::io::Result<Head> {
    // Only a regular file is opened, non-blocking: a FIFO or a device named by a hostile
    // link can neither hang the prompt nor stream forever.
    let (file, meta) = corvid_tools::regular_file::open_regular(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_ATTACHED_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    Ok(Head {
        bytes,
        size: meta.len(),
    })
}

fn render(bytes: &[u8], size: u64) -> String {
    let cut = bytes.len() > MAX_ATTACHED_BYTES;
    let kept = &bytes[..bytes.len().min(MAX_ATTACHED_BYTES)];
    if kept[..kept.len().min(SNIFF_BYTES)].contains(&0) {
        return format!("[binary file, {size} bytes: its contents are not included]");
    }
    let text = match std::str::from_utf8(kept) {
        Ok(text) => text,
        // The cut may split a character; anything else invalid is not text.
        Err(e) if cut && e.error_len().is_none() => {
            std::str::from_utf8(&kept[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => return format!("[binary file, {size} bytes: its contents are not included]"),
    };
    if cut {
        format!(
            "{text}\n[… cut: the file has {size} bytes; only the first {} KiB are included]",
            MAX_ATTACHED_BYTES / 1024
        )
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_text_file_is_included_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.rs");
        std::fs::write(&path, "fn main() {}\n").unwrap();
        assert_eq!(
            file_context(&path, "a.rs"),
            "<context ref=\"a.rs\">\nfn main() {}\n\n</context>"
        );
    }

    #[test]
    fn a_large_file_is_cut_with_a_marker() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.txt");
        // A two-byte character straddles the cut.
        let mut text = "a".repeat(MAX_ATTACHED_BYTES - 1);
        text.push('é');
        text.push_str("tail");
        std::fs::write(&path, &text).unwrap();
        let size = text.len();
        assert_eq!(
            file_context(&path, "big.txt"),
            format!(
                "<context ref=\"big.txt\">\n{}\n[… cut: the file has {size} bytes; only the first \
                 256 KiB are included]\n</context>",
                "a".repeat(MAX_ATTACHED_BYTES - 1)
            )
        );
    }

    #[test]
    fn a_binary_file_gets_a_note_instead_of_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.png");
        std::fs::write(&path, b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap();
        assert_eq!(
            file_context(&path, "x.png"),
            "<context ref=\"x.png\">\n[binary file, 16 bytes: its contents are not included]\n</context>"
        );
    }

    #[test]
    fn a_fifo_is_not_read_and_the_note_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap();
        assert!(made.success(), "mkfifo failed");
        assert_eq!(
            file_context(&path, "pipe"),
            "<context ref=\"pipe\">\n[the file could not be read: it is a named pipe (FIFO), not \
             a regular file; only regular files can be read]\n</context>"
        );
    }

    #[test]
    fn a_quote_in_the_name_cannot_end_the_label() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q");
        std::fs::write(&path, "x").unwrap();
        assert_eq!(
            file_context(&path, "a\"b"),
            "<context ref=\"a&quot;b\">\nx\n</context>"
        );
    }
}
