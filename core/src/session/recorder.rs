//! Writing one session file: private permissions, one writer at a time (an advisory lock), and
//! a file that always ends on a complete record, even when the disk fills up mid-write.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use corvid_providers::Redactor;

use super::record::Record;
use super::secrets::RecordedSecrets;
use super::store::SessionError;

/// Appends records to one session file, one line each, written through at once. Holds the
/// file's advisory lock for as long as it lives, so no second corvid appends to the same session.
#[derive(Debug)]
pub struct SessionRecorder {
    path: PathBuf,
    writer: Mutex<Writer>,
    /// The configured secrets, replaced in every line before it is written.
    redactor: Redactor,
}

#[derive(Debug)]
struct Writer {
    file: File,
    /// Where the last complete record ends; a failed write is cut back to here.
    complete_len: u64,
    /// Set after a failed write: nothing more is appended (the cause, for later errors).
    stopped: Option<String>,
}

impl SessionRecorder {
    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The recorder with `secrets` replaced in every record it writes from now on.
    pub fn redacting(mut self, secrets: &RecordedSecrets) -> Self {
        self.redactor = secrets.redactor();
        self
    }

    /// Appends one record as a line (configured secrets replaced). When the write fails (disk full, I/O error) the file is
    /// cut back to its last complete record and recording stops: every later append fails with
    /// [`SessionError::RecordingStopped`], so the file stays resumable.
    pub fn append(&self, record: &Record) -> Result<(), SessionError> {
        let line = serde_json::to_string(record).map_err(|e| SessionError::Io {
            path: self.path.clone(),
            source: io::Error::other(e),
        })?;
        let mut line = self
            .redactor
            .replace_secrets(&line)
            .into_owned()
            .into_bytes();
        line.push(b'\n');
        let mut writer = self
            .writer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(cause) = &writer.stopped {
            return Err(SessionError::RecordingStopped {
                path: self.path.clone(),
                cause: cause.clone(),
            });
        }
        match writer
            .file
            .write_all(&line)
            .and_then(|()| writer.file.flush())
        {
            Ok(()) => {
                writer.complete_len += line.len() as u64;
                Ok(())
            }
            Err(source) => {
                let complete_len = writer.complete_len;
                let cut_back = writer.file.set_len(complete_len);
                writer.stopped = Some(source.to_string());
                Err(SessionError::WriteFailed {
                    path: self.path.clone(),
                    source,
                    cut_back: match cut_back {
                        Ok(()) => None,
                        Err(e) => Some(e.to_string()),
                    },
                })
            }
        }
    }

    /// Creates a new session file (private to the user) and takes its lock.
    pub(super) fn create_new(path: PathBuf, session_id: &str) -> Result<Self, SessionError> {
        let file = private_options()
            .create_new(true)
            .append(true)
            .open(&path)
            .map_err(|source| SessionError::Io {
                path: path.clone(),
                source,
            })?;
        lock(&file, &path, session_id)?;
        Ok(Self::over(file, path, 0))
    }

    /// Opens an existing session file for appending: takes its lock first, then cuts it to
    /// `complete_len` (dropping a torn last line) and makes it private if it was not.
    pub(super) fn reopen(
        path: &Path,
        session_id: &str,
        complete_len: u64,
    ) -> Result<Self, SessionError> {
        let io_err = |source| SessionError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = OpenOptions::new().append(true).open(path).map_err(io_err)?;
        lock(&file, path, session_id)?;
        file.set_len(complete_len).map_err(io_err)?;
        make_private(&file).map_err(io_err)?;
        Ok(Self::over(file, path.to_path_buf(), complete_len))
    }

    fn over(file: File, path: PathBuf, complete_len: u64) -> Self {
        Self {
            path,
            writer: Mutex::new(Writer {
                file,
                complete_len,
                stopped: None,
            }),
            redactor: Redactor::default(),
        }
    }
}

/// Takes the file's exclusive advisory lock without waiting. A file system without locks
/// (some network mounts) does not stop recording; it only loses the protection.
fn lock(file: &File, path: &Path, session_id: &str) -> Result<(), SessionError> {
    match fs4::FileExt::try_lock(file) {
        Ok(()) => Ok(()),
        Err(fs4::TryLockError::WouldBlock) => Err(SessionError::InUse {
            id: session_id.to_owned(),
            path: path.to_path_buf(),
        }),
        Err(fs4::TryLockError::Error(e)) => {
            tracing::warn!(
                "cannot lock session file {}: {e}; another corvid could append to it too",
                path.display()
            );
            Ok(())
        }
    }
}

/// Session folders: only the user may list or enter them (transcripts hold code and output).
pub(super) fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        builder.mode(0o700);
        builder.create(dir)?;
        // A folder made by an older corvid (or by hand) is tightened too.
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
    }
    #[cfg(not(unix))]
    builder.create(dir)
}

fn private_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

fn make_private(file: &File) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        Ok(())
    }
}
