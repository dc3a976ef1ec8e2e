//! File access for ACP sessions: the editor's buffers through `fs/read_text_file` and
//! `fs/write_text_file` when the client offers them (so the agent sees unsaved changes and
//! the editor keeps its undo history), local disk otherwise.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    FileSystemCapabilities, ReadTextFileRequest, SessionId, WriteTextFileRequest,
};
use agent_client_protocol::{Client, Error};
use corvid_tools::FileSystem;
use futures::FutureExt;
use futures::future::BoxFuture;

/// Reads and writes through the client where it advertised support, else through `local`.
pub struct ClientFs {
    cx: ConnectionTo<Client>,
    session_id: SessionId,
    read: bool,
    write: bool,
    local: Arc<dyn FileSystem>,
}

impl ClientFs {
    /// The file system for a session: the client's where offered, local disk for the rest.
    pub fn for_session(
        cx: ConnectionTo<Client>,
        session_id: SessionId,
        caps: &FileSystemCapabilities,
        local: Arc<dyn FileSystem>,
    ) -> Arc<dyn FileSystem> {
        if !caps.read_text_file && !caps.write_text_file {
            return local;
        }
        Arc::new(Self {
            cx,
            session_id,
            read: caps.read_text_file,
            write: caps.write_text_file,
            local,
        })
    }
}

impl FileSystem for ClientFs {
    fn read_text(&self, path: PathBuf) -> BoxFuture<'static, io::Result<String>> {
        if !self.read {
            return self.local.read_text(path);
        }
        let sent = self.cx.send_request(ReadTextFileRequest::new(
            self.session_id.clone(),
            path.clone(),
        ));
        async move {
            match sent.block_task().await {
                Ok(response) => Ok(response.content),
                Err(error) => Err(read_error(&path, error).await),
            }
        }
        .boxed()
    }

    /// The editor writes its own buffers (and the file) at `path`; without the editor the
    /// write goes to local disk, confined to `root`.
    fn write_text(
        &self,
        root: PathBuf,
        path: PathBuf,
        content: String,
    ) -> BoxFuture<'static, io::Result<()>> {
        if !self.write {
            return self.local.write_text(root, path, content);
        }
        let sent = self.cx.send_request(WriteTextFileRequest::new(
            self.session_id.clone(),
            path,
            content,
        ));
        async move { sent.block_task().await.map(|_| ()).map_err(io_error) }.boxed()
    }

    /// Reads go to disk when the client does not offer its buffers.
    fn on_local_disk(&self) -> bool {
        !self.read
    }
}

/// A failed client read as an I/O error. The write tools read first to tell a new file from
/// an edit, so "not found" must stay recognisable; clients word (and code) that error in
/// many ways (the official Python client answers a plain -32603), so the local disk decides:
/// the agent and the editor share the machine, and a path absent there is a new file.
async fn read_error(path: &Path, error: Error) -> io::Error {
    let absent = matches!(
        tokio::fs::symlink_metadata(path).await,
        Err(e) if e.kind() == io::ErrorKind::NotFound
    );
    let kind = if absent {
        io::ErrorKind::NotFound
    } else {
        io::ErrorKind::Other
    };
    io::Error::new(kind, refused(&error))
}

/// A failed client write as an I/O error.
fn io_error(error: Error) -> io::Error {
    io::Error::other(refused(&error))
}

fn refused(error: &Error) -> String {
    format!("the editor refused the file operation: {}", error.message)
}
