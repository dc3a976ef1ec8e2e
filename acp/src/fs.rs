//! File access for ACP sessions: the editor's buffers through `fs/read_text_file` and
//! `fs/write_text_file` when the client offers them (so the agent sees unsaved changes and
//! the editor keeps its undo history), local disk otherwise.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

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
    /// Paths the client could not read and the local disk does not have: the write tools
    /// read a new file once to plan the change and once more to make it, and the second read
    /// is answered from here (once) instead of asking the client again.
    absent: Arc<Mutex<HashSet<PathBuf>>>,
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
            absent: Arc::default(),
        })
    }
}

impl FileSystem for ClientFs {
    fn read_text(&self, path: PathBuf) -> BoxFuture<'static, io::Result<String>> {
        if !self.read {
            return self.local.read_text(path);
        }
        let known_absent = lock(&self.absent).remove(&path);
        let (cx, session_id, absent) = (
            self.cx.clone(),
            self.session_id.clone(),
            self.absent.clone(),
        );
        async move {
            if known_absent && locally_absent(&path).await {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    "the editor has no such file (it said so on the previous read)",
                ));
            }
            let sent = cx.send_request(ReadTextFileRequest::new(session_id, path.clone()));
            match sent.block_task().await {
                Ok(response) => Ok(response.content),
                Err(error) => {
                    let error = read_error(&path, error).await;
                    if error.kind() == io::ErrorKind::NotFound {
                        lock(&absent).insert(path);
                    }
                    Err(error)
                }
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
        lock(&self.absent).remove(&path);
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
    let kind = if locally_absent(path).await {
        io::ErrorKind::NotFound
    } else {
        io::ErrorKind::Other
    };
    io::Error::new(kind, refused(&error))
}

/// Whether nothing (not even a dangling link) is at `path` on the local disk.
async fn locally_absent(path: &Path) -> bool {
    matches!(
        tokio::fs::symlink_metadata(path).await,
        Err(e) if e.kind() == io::ErrorKind::NotFound
    )
}

/// Locks the set of absent paths; each use is one insert or remove, so a poisoned lock still
/// holds consistent data.
fn lock(absent: &Mutex<HashSet<PathBuf>>) -> std::sync::MutexGuard<'_, HashSet<PathBuf>> {
    absent.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A failed client write as an I/O error.
fn io_error(error: Error) -> io::Error {
    io::Error::other(refused(&error))
}

fn refused(error: &Error) -> String {
    format!("the editor refused the file operation: {}", error.message)
}
