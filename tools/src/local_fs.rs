//! The file system on local disk, used when no editor provides its buffers.

use std::io;
use std::path::PathBuf;

use futures::FutureExt;
use futures::future::BoxFuture;

use crate::FileSystem;
use crate::atomic_write::write_atomically;
use crate::regular_file::read_whole_text;

/// Reads and writes files directly on disk: reads only regular files of bounded size (never
/// a FIFO or device), writes atomically (a kill or full disk never leaves a partial file)
/// through folder descriptors opened from the working directory, following no symlink, so a
/// folder swapped for a link while the write runs cannot move it out of the workspace.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalFs;

impl FileSystem for LocalFs {
    fn read_text(&self, path: PathBuf) -> BoxFuture<'static, io::Result<String>> {
        blocking(move || read_whole_text(&path))
    }

    fn write_text(
        &self,
        root: PathBuf,
        path: PathBuf,
        content: String,
    ) -> BoxFuture<'static, io::Result<()>> {
        blocking(move || write_atomically(&root, &path, content.as_bytes()))
    }

    fn on_local_disk(&self) -> bool {
        true
    }
}

/// Runs blocking file I/O off the async workers. A dropped future lets it finish, which is
/// safe: a write either completes or leaves the old file.
fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> BoxFuture<'static, io::Result<T>> {
    tokio::task::spawn_blocking(work)
        .map(|joined| joined.unwrap_or_else(|e| Err(io::Error::other(e))))
        .boxed()
}
