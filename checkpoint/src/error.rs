//! The one error type of the crate: every I/O failure names the path it happened on.

use std::io;
use std::path::{Path, PathBuf};

use crate::store::SnapshotId;

/// What went wrong in a checkpoint operation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing the store or the workspace failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder the operation was on.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// A file of the store does not decode: it was damaged or written by another version.
    #[error("the checkpoint store is damaged: {0}")]
    Corrupt(String),
    /// No snapshot has this id (never taken, or pruned).
    #[error("no checkpoint {0} (it may have been pruned)")]
    UnknownSnapshot(SnapshotId),
    /// A project key must be one plain folder name, so it cannot escape the checkpoints folder.
    #[error("invalid project key {0:?}: it must be a single folder name")]
    BadProjectKey(String),
    /// A path the restore would change was changed after the preview (the plan is stale for
    /// it); nothing was written.
    #[error("the workspace changed since the preview; preview again")]
    WorkspaceChanged,
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;

/// Attaches the path an I/O error happened on.
pub(crate) trait IoContext<T> {
    fn at(self, path: &Path) -> Result<T>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn at(self, path: &Path) -> Result<T> {
        self.map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })
    }
}
