//! The file system on local disk, used when no editor provides its buffers.

use std::path::PathBuf;

use futures::FutureExt;
use futures::future::BoxFuture;

use crate::FileSystem;

/// Reads and writes files directly on disk.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalFs;

impl FileSystem for LocalFs {
    fn read_text(&self, path: PathBuf) -> BoxFuture<'static, std::io::Result<String>> {
        async move {
            let bytes = tokio::fs::read(&path).await?;
            String::from_utf8(bytes)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
        }
        .boxed()
    }

    fn write_text(
        &self,
        path: PathBuf,
        content: String,
    ) -> BoxFuture<'static, std::io::Result<()>> {
        async move {
            if let Some(parent) = path.parent() {
                tokio::fs::create_dir_all(parent).await?;
            }
            tokio::fs::write(&path, content).await
        }
        .boxed()
    }
}
