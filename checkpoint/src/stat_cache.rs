//! The stat cache (git's index, in spirit): for each file, the fingerprint it had when it was
//! last hashed and the hash. A file whose size, times, inode and mode are unchanged is not
//! read again, so checking an unchanged tree costs one `lstat` per file.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::PathBuf;

use crate::codec::{Reader, Writer};
use crate::error::{Error, IoContext, Result};
use crate::objects::{ObjectId, write_atomically};

/// What identifies one version of a file without reading it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    pub(crate) size: u64,
    pub(crate) mtime_ns: i64,
    pub(crate) ctime_ns: i64,
    pub(crate) ino: u64,
    pub(crate) dev: u64,
    pub(crate) mode: u32,
}

impl Fingerprint {
    // The fields' integer types differ between architectures (`c_long` and friends).
    #[allow(clippy::unnecessary_cast)]
    pub(crate) fn of(stat: &rustix::fs::Stat) -> Fingerprint {
        let ns = |secs: i64, nsec: i64| secs.saturating_mul(1_000_000_000).saturating_add(nsec);
        Fingerprint {
            size: u64::try_from(stat.st_size).unwrap_or(0),
            mtime_ns: ns(stat.st_mtime as i64, stat.st_mtime_nsec as i64),
            ctime_ns: ns(stat.st_ctime as i64, stat.st_ctime_nsec as i64),
            ino: stat.st_ino as u64,
            dev: stat.st_dev as u64,
            mode: stat.st_mode as u32,
        }
    }
}

const CACHE_MAGIC: &[u8] = b"corvid-stat-cache-1\n";

/// The cache of one project, loaded from and saved to the store's `index` file.
pub(crate) struct StatCache {
    path: PathBuf,
    /// The store's prune generation the hashes are valid for: pruning may delete objects the
    /// cache names, so a cache from an earlier generation is dropped.
    pub(crate) generation: u64,
    pub(crate) entries: HashMap<Vec<u8>, (Fingerprint, ObjectId)>,
    dirty: bool,
}

impl StatCache {
    /// Loads the cache; a missing or unreadable one is empty (it is only an accelerator).
    pub(crate) fn load(path: PathBuf) -> StatCache {
        let mut cache = StatCache {
            path,
            generation: 0,
            entries: HashMap::new(),
            dirty: false,
        };
        match fs::read(&cache.path) {
            Ok(bytes) => {
                if let Err(e) = cache.decode(&bytes) {
                    tracing::warn!(path = %cache.path.display(), error = %e, "ignoring the checkpoint stat cache");
                    cache.entries.clear();
                    cache.generation = 0;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(path = %cache.path.display(), error = %e, "cannot read the checkpoint stat cache");
            }
        }
        cache
    }

    fn decode(&mut self, bytes: &[u8]) -> Result<()> {
        let mut r = Reader(bytes);
        if r.raw(CACHE_MAGIC.len())? != CACHE_MAGIC {
            return Err(Error::Corrupt("unknown stat cache format".into()));
        }
        self.generation = r.u64()?;
        while !r.is_empty() {
            let path = r.bytes()?.to_vec();
            let fp = Fingerprint {
                size: r.u64()?,
                mtime_ns: r.i64()?,
                ctime_ns: r.i64()?,
                ino: r.u64()?,
                dev: r.u64()?,
                mode: r.u32()?,
            };
            let hash = ObjectId(r.hash()?);
            self.entries.insert(path, (fp, hash));
        }
        Ok(())
    }

    /// The hash recorded for `path` if the file still has the same fingerprint.
    pub(crate) fn lookup(&self, path: &[u8], fp: &Fingerprint) -> Option<ObjectId> {
        match self.entries.get(path) {
            Some((cached, hash)) if cached == fp => Some(*hash),
            _ => None,
        }
    }

    pub(crate) fn insert(&mut self, path: Vec<u8>, fp: Fingerprint, hash: ObjectId) {
        self.entries.insert(path, (fp, hash));
        self.dirty = true;
    }

    pub(crate) fn remove(&mut self, path: &[u8]) {
        if self.entries.remove(path).is_some() {
            self.dirty = true;
        }
    }

    /// Keeps only the paths the last scan saw.
    pub(crate) fn retain(&mut self, keep: impl Fn(&[u8]) -> bool) {
        let before = self.entries.len();
        self.entries.retain(|path, _| keep(path));
        self.dirty |= self.entries.len() != before;
    }

    /// Forgets everything (after a prune), for `generation`.
    pub(crate) fn reset(&mut self, generation: u64) {
        self.entries.clear();
        self.generation = generation;
        self.dirty = true;
    }

    /// Writes the cache back if it changed.
    pub(crate) fn save(&mut self) -> Result<()> {
        if !self.dirty {
            return Ok(());
        }
        let mut w = Writer::default();
        w.raw(CACHE_MAGIC);
        w.u64(self.generation);
        for (path, (fp, hash)) in &self.entries {
            w.bytes(path);
            w.u64(fp.size);
            w.i64(fp.mtime_ns);
            w.i64(fp.ctime_ns);
            w.u64(fp.ino);
            w.u64(fp.dev);
            w.u32(fp.mode);
            w.raw(&hash.0);
        }
        write_atomically(&self.path, &w.0)?;
        self.dirty = false;
        Ok(())
    }
}

/// Reads the store's prune generation (0 before the first prune).
pub(crate) fn read_generation(path: &std::path::Path) -> Result<u64> {
    match fs::read_to_string(path) {
        Ok(text) => text
            .trim()
            .parse()
            .map_err(|_| Error::Corrupt("bad generation file".into())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(e).at(path),
    }
}
