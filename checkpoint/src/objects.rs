//! The content-addressed object store: file contents and directory trees, each stored once
//! under the SHA-256 of its bytes, written atomically (temporary file, then rename) so a crash
//! never leaves a truncated object under a valid name.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use sha2::{Digest, Sha256};

use crate::error::{Error, IoContext, Result};

/// The SHA-256 of an object's bytes, its name in the store.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectId(pub(crate) [u8; 32]);

impl ObjectId {
    /// The id of `bytes`.
    pub(crate) fn of(bytes: &[u8]) -> ObjectId {
        ObjectId(Sha256::digest(bytes).into())
    }

    /// Parses the 64 hex digits [`fmt::Display`] writes.
    pub(crate) fn from_hex(hex: &str) -> Option<ObjectId> {
        if hex.len() != 64 || !hex.is_ascii() {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(ObjectId(out))
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectId({self})")
    }
}

/// The `objects/` folder of one project's store.
pub(crate) struct Objects {
    dir: PathBuf,
    /// Objects were written since the last [`Objects::flush`].
    unflushed: AtomicBool,
    /// Bytes of the objects this process wrote (new ones only), for a budget check that
    /// needs no listing of the folder.
    written: AtomicU64,
}

impl Objects {
    pub(crate) fn new(dir: PathBuf) -> Objects {
        Objects {
            dir,
            unflushed: AtomicBool::new(false),
            written: AtomicU64::new(0),
        }
    }

    /// Makes the objects written since the last call durable, with one `syncfs` rather than
    /// one `fsync` per object (a first snapshot writes thousands). Called before a snapshot
    /// record that needs them is written; a crash before it loses only unreferenced objects,
    /// and an object damaged by a power cut is caught by the hash check on every read.
    pub(crate) fn flush(&self) -> Result<()> {
        if self.unflushed.swap(false, Ordering::Relaxed) {
            let dir = File::open(&self.dir).at(&self.dir)?;
            rustix::fs::syncfs(&dir)
                .map_err(io::Error::from)
                .at(&self.dir)?;
        }
        Ok(())
    }

    fn path(&self, id: &ObjectId) -> PathBuf {
        let hex = id.to_string();
        self.dir.join(&hex[..2]).join(&hex[2..])
    }

    /// Stores `bytes` unless an object with the same hash is already there; returns its id.
    pub(crate) fn put(&self, bytes: &[u8]) -> Result<ObjectId> {
        let id = ObjectId::of(bytes);
        let path = self.path(&id);
        if !path.exists() {
            write_file(&path, bytes, false)?;
            self.unflushed.store(true, Ordering::Relaxed);
            self.written
                .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        }
        Ok(id)
    }

    /// The bytes of an object, checked against its hash (a damaged object is an error, never
    /// restored content).
    pub(crate) fn get(&self, id: &ObjectId) -> Result<Vec<u8>> {
        let path = self.path(id);
        let bytes = fs::read(&path).at(&path)?;
        if ObjectId::of(&bytes) != *id {
            return Err(Error::Corrupt(format!(
                "object {id} does not match its hash"
            )));
        }
        Ok(bytes)
    }

    /// Bytes of the new objects this process wrote since the last call.
    pub(crate) fn take_written(&self) -> u64 {
        self.written.swap(0, Ordering::Relaxed)
    }

    /// Every stored object with its size in bytes.
    pub(crate) fn all(&self) -> Result<Vec<(ObjectId, u64)>> {
        let mut out = Vec::new();
        let top = match fs::read_dir(&self.dir) {
            Ok(top) => top,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(e).at(&self.dir),
        };
        for fan in top {
            let fan = fan.at(&self.dir)?;
            let prefix = fan.file_name().to_string_lossy().into_owned();
            for entry in fs::read_dir(fan.path()).at(&fan.path())? {
                let entry = entry.at(&fan.path())?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let Some(id) = ObjectId::from_hex(&format!("{prefix}{name}")) else {
                    continue; // a temporary file of an interrupted write
                };
                let len = entry.metadata().at(&entry.path())?.len();
                out.push((id, len));
            }
        }
        Ok(out)
    }

    /// Deletes an object (pruning); a missing one is already gone.
    pub(crate) fn remove(&self, id: &ObjectId) -> Result<()> {
        let path = self.path(id);
        match fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e).at(&path),
            _ => Ok(()),
        }
    }
}

/// Temporary files of the store get unique names from the process id and this counter.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes a store file (mode 0600) through a temporary file in its folder and a rename, so
/// readers and crashes see the old file or the whole new one.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    write_file(path, bytes, true)
}

/// [`write_atomically`], flushing the file before the rename only when `flush` is set.
fn write_file(path: &Path, bytes: &[u8], flush: bool) -> Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| Error::Corrupt(format!("{} has no folder", path.display())))?;
    create_private_dir(dir)?;
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let temp = dir.join(format!(".tmp-{}-{n}", std::process::id()));
    let written = (|| -> io::Result<()> {
        let mut file: File = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(bytes)?;
        if flush {
            file.sync_all()?;
        }
        fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written.at(path)
}

/// Creates a folder of the store (and its parents) readable by the owner only.
pub(crate) fn create_private_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .at(dir)
}
