//! A line written straight into the client's pipe when that needs no waiting (issue 16).
//!
//! The output's writer thread is there so that a client that reads slowly never blocks a
//! session. Waking it costs a thread switch per frame, though, and with 100 sessions busy on
//! two cores the woken writer also had to wait for a core. So when the writer is idle with
//! nothing buffered, the sender writes the line itself through a second, non-blocking open of
//! the same pipe; whatever the pipe does not take at once goes to the writer thread as before.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The client's pipe, opened once more on a file description of its own that never blocks
/// (the flag is per description, so the process's own stdout stays blocking).
pub struct DirectPipe {
    file: File,
}

impl DirectPipe {
    /// The pipe behind `fd_path` (`/proc/self/fd/1` for stdout); `None` when it is not a pipe
    /// (a file, a terminal, a socket) or cannot be opened again.
    pub fn reopen(fd_path: &Path) -> Option<Self> {
        let meta = std::fs::metadata(fd_path).ok()?;
        if !meta.file_type().is_fifo() {
            return None;
        }
        let file = OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(fd_path)
            .ok()?;
        Some(Self { file })
    }

    /// Writes as much of `bytes` as the pipe takes without waiting, and says how much.
    pub fn write_now(&self, bytes: &[u8]) -> usize {
        let mut written = 0;
        while written < bytes.len() {
            match (&self.file).write(&bytes[written..]) {
                Ok(0) => break,
                Ok(n) => written += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                // The pipe is full (`WouldBlock`) or broken: the writer thread writes the rest,
                // and is the one that reports a failure.
                Err(_) => break,
            }
        }
        written
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::os::fd::AsRawFd;

    use super::*;

    #[test]
    fn only_a_pipe_is_opened_again_and_a_full_one_takes_what_fits_without_waiting() {
        let file = tempfile::NamedTempFile::new().unwrap();
        assert!(DirectPipe::reopen(file.path()).is_none());

        let (mut reader, writer) = std::io::pipe().unwrap();
        let path = format!("/proc/self/fd/{}", writer.as_raw_fd());
        let pipe = DirectPipe::reopen(Path::new(&path)).expect("a pipe");
        let line = vec![b'x'; 1 << 20];
        // A pipe holds 64 KiB by default: the rest would have to wait, so it is not written.
        let written = pipe.write_now(&line);
        assert!(written > 0 && written < line.len(), "{written}");
        let mut read = vec![0; written];
        reader.read_exact(&mut read).unwrap();
        assert_eq!(read, line[..written]);
        assert_eq!(pipe.write_now(b"more\n"), 5);
    }
}
