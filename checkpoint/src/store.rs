//! One project's checkpoint store: `$CORVID_HOME/checkpoints/<project>/` (mode 0700) holding
//! `objects/` (contents and trees by hash), `snapshots/` (one small record per snapshot:
//! its root tree and time), the stat cache `index`, and a `lock` file that serialises the
//! processes using the store.

mod forget;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::{Error, IoContext, Result};
use crate::objects::{ObjectId, Objects, create_private_dir, write_atomically};
use crate::plan::{self, Change, RestorePlan, SharedFlat, Unrestorable};
use crate::restore;
use crate::scan::{self, scan};
use crate::stat_cache::{StatCache, read_generation};
use crate::tree::{self, Flat};

/// Files over this size are not captured unless [`Options::max_file_bytes`] says otherwise
/// (the `checkpoints.maxFileBytes` default: 10 MiB).
pub const DEFAULT_MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// Settings of a store.
#[derive(Clone, Debug)]
pub struct Options {
    /// Files larger than this are recognised but not captured.
    pub max_file_bytes: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
        }
    }
}

/// A snapshot's number, increasing with time within a project.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SnapshotId(pub u64);

impl fmt::Display for SnapshotId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// What [`Store::list`] tells about a snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotInfo {
    /// Its id.
    pub id: SnapshotId,
    /// When it was taken, in milliseconds since the Unix epoch.
    pub created_unix_ms: u64,
}

/// What [`Store::prune`] removed and kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PruneReport {
    /// The snapshots deleted, oldest first.
    pub removed: Vec<SnapshotId>,
    /// Bytes freed.
    pub freed_bytes: u64,
    /// Bytes the store's objects take now.
    pub kept_bytes: u64,
}

/// The record of one snapshot, `snapshots/<id>.json`.
#[derive(Serialize, Deserialize)]
struct Record {
    id: SnapshotId,
    root: String,
    created_unix_ms: u64,
}

/// One project's checkpoints; see the crate documentation.
pub struct Store {
    dir: PathBuf,
    objects: Objects,
    cache: StatCache,
    options: Options,
    /// What [`Store::stored_bytes_estimate`] last knew; `None` until the folder is listed.
    known_bytes: Option<u64>,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store").field("dir", &self.dir).finish()
    }
}

impl Store {
    /// Opens (creating if needed) the store of `project_key` under `corvid_home`, with the
    /// default options.
    pub fn open(corvid_home: &Path, project_key: &str) -> Result<Store> {
        Store::open_with(corvid_home, project_key, Options::default())
    }

    /// Opens the store with `options`. `project_key` must be one folder name (the caller
    /// derives it from the workspace path, e.g. a hash of it).
    pub fn open_with(corvid_home: &Path, project_key: &str, options: Options) -> Result<Store> {
        let key = Path::new(project_key);
        let plain = key.components().count() == 1
            && matches!(
                key.components().next(),
                Some(std::path::Component::Normal(_))
            );
        if !plain {
            return Err(Error::BadProjectKey(project_key.to_string()));
        }
        let top = corvid_home.join("checkpoints");
        let dir = top.join(key);
        for d in [&top, &dir, &dir.join("objects"), &dir.join("snapshots")] {
            create_private_dir(d)?;
        }
        // A folder made earlier with a looser umask is narrowed: contents are private.
        for d in [&top, &dir] {
            fs::set_permissions(d, fs::Permissions::from_mode(0o700)).at(d)?;
        }
        let cache = StatCache::load(dir.join("index"));
        Ok(Store {
            objects: Objects::new(dir.join("objects")),
            dir,
            cache,
            options,
            known_bytes: None,
        })
    }

    /// The store's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Records the workspace as it is now and returns the snapshot's id. When nothing changed
    /// since the latest snapshot, that snapshot's id is returned and nothing is written.
    pub fn snapshot(&mut self, workspace: &Path) -> Result<SnapshotId> {
        let _lock = self.lock()?;
        Ok(self.snapshot_locked(workspace)?.0)
    }

    /// Takes a snapshot; returns its id, its root tree and what the scan found.
    fn snapshot_locked(&mut self, workspace: &Path) -> Result<(SnapshotId, ObjectId, scan::Scan)> {
        self.drop_cache_if_pruned()?;
        let scanned = scan(
            workspace,
            &self.dir,
            &self.objects,
            &mut self.cache,
            self.options.max_file_bytes,
        )?;
        let root = tree::write_tree(&self.objects, &scanned.flat)?;
        self.cache.save()?;
        Ok((self.record_root(root)?, root, scanned))
    }

    /// Forgets the stat cache if another process pruned the store (its hashes may name
    /// objects that are gone).
    fn drop_cache_if_pruned(&mut self) -> Result<()> {
        let generation = read_generation(&self.dir.join("generation"))?;
        if generation != self.cache.generation {
            self.cache.reset(generation);
        }
        Ok(())
    }

    /// Records a snapshot of the tree `root` (its objects are stored) unless the newest
    /// snapshot already has it, and returns the snapshot's id.
    fn record_root(&self, root: ObjectId) -> Result<SnapshotId> {
        self.objects.flush()?;
        let latest = self.latest_record()?;
        if let Some(latest) = &latest
            && latest.root == root.to_string()
        {
            return Ok(latest.id);
        }
        let id = SnapshotId(latest.map_or(1, |r| r.id.0 + 1));
        let record = Record {
            id,
            root: root.to_string(),
            created_unix_ms: u64::try_from(scan::now_ns() / 1_000_000).unwrap_or(0),
        };
        let json = serde_json::to_vec(&record).map_err(|e| Error::Corrupt(e.to_string()))?;
        write_atomically(&self.record_path(id), &json)?;
        tracing::debug!(%id, %root, "checkpoint taken");
        Ok(id)
    }

    /// Compares the workspace now with snapshot `target`. `expected_current` is the state the
    /// caller believes the workspace is in (the snapshot taken when the agent's turn ended):
    /// a path whose current state differs from it was changed by someone else since, and is a
    /// conflict. Takes a snapshot of the current state (the plan's `current`).
    pub fn preview(
        &mut self,
        workspace: &Path,
        target: SnapshotId,
        expected_current: SnapshotId,
    ) -> Result<RestorePlan> {
        let _lock = self.lock()?;
        let target_flat = self.flat(target)?;
        let expected_root = self.root_of(expected_current)?;
        let (current, current_root, scanned) = self.snapshot_locked(workspace)?;
        // Usually nobody touched the workspace since the turn: the scan is the expected state.
        let expected_flat = if expected_root == current_root {
            None
        } else {
            Some(tree::read_tree(&self.objects, &expected_root)?)
        };
        let (changes, unrestorable, target_entries) = plan::compare(
            &target_flat,
            expected_flat.as_ref().unwrap_or(&scanned.flat),
            &scanned.flat,
            self.options.max_file_bytes,
        );
        Ok(RestorePlan {
            workspace: workspace.to_path_buf(),
            target,
            expected_current,
            current,
            changes,
            unrestorable,
            target_entries,
            current_entries: SharedFlat(Arc::new(scanned.flat)),
            stale_temps: scanned.stale_temps,
        })
    }

    /// Carries out `plan`: conflicting paths are changed only with `overwrite_conflicts`;
    /// unrestorable ones never. Fails with [`Error::WorkspaceChanged`] if a path the restore
    /// would change is no longer as the preview saw it. Each file ends old or new, even if the
    /// process dies midway. Returns the snapshot of the restored workspace (so the restore can
    /// be undone by restoring `plan.current`): the preview's state with the changes made,
    /// recorded without walking the workspace again (anything else changed meanwhile is
    /// caught by the next snapshot, and counts as a conflict if that restore is undone).
    pub fn restore(&mut self, plan: &RestorePlan, overwrite_conflicts: bool) -> Result<SnapshotId> {
        let _lock = self.lock()?;
        self.drop_cache_if_pruned()?;
        restore::check_unchanged(
            plan,
            overwrite_conflicts,
            &self.cache,
            self.options.max_file_bytes,
        )?;
        restore::remove_stale_temps(&plan.stale_temps);
        restore::apply(&self.objects, plan, overwrite_conflicts)?;
        let root = tree::write_tree(&self.objects, &plan.restored(overwrite_conflicts))?;
        self.record_root(root)
    }

    /// What restoring `from` over a workspace in state `to` would do, without conflicts: the
    /// files a turn from `from` to `to` touched, for a picker.
    pub fn changes(
        &self,
        from: SnapshotId,
        to: SnapshotId,
    ) -> Result<(Vec<Change>, Vec<Unrestorable>)> {
        Ok(plan::diff(
            &self.flat(from)?,
            &self.flat(to)?,
            self.options.max_file_bytes,
        ))
    }

    /// The snapshots kept, oldest first.
    pub fn list(&self) -> Result<Vec<SnapshotInfo>> {
        Ok(self
            .records()?
            .into_iter()
            .map(|r| SnapshotInfo {
                id: r.id,
                created_unix_ms: r.created_unix_ms,
            })
            .collect())
    }

    /// Bytes the store's objects take.
    pub fn stored_bytes(&self) -> Result<u64> {
        Ok(self.objects.all()?.iter().map(|(_, n)| n).sum())
    }

    /// Bytes the store's objects take, known cheaply: the folder is listed once per `Store`
    /// (and again after a prune); after that, what this process wrote is added, so a budget
    /// check after every turn costs no listing of a store of many thousand objects. Objects
    /// another process wrote meanwhile are counted at its own listing, so a check with this
    /// can only be late by what other sessions added, never prune early.
    pub fn stored_bytes_estimate(&mut self) -> Result<u64> {
        let written = self.objects.take_written();
        let known = match self.known_bytes {
            Some(known) => known + written,
            None => self.stored_bytes()?,
        };
        self.known_bytes = Some(known);
        Ok(known)
    }

    /// Deletes the oldest snapshots until what the others need fits in `max_bytes`, then the
    /// objects no snapshot needs any more. The newest snapshot is always kept.
    pub fn prune(&mut self, max_bytes: u64) -> Result<PruneReport> {
        let _lock = self.lock()?;
        self.known_bytes = None;
        let sizes: HashMap<ObjectId, u64> = self.objects.all()?.into_iter().collect();
        let before: u64 = sizes.values().sum();
        let records = self.records()?;
        // Newest first: keep a snapshot while the union of what the kept ones need fits.
        let mut live: HashSet<ObjectId> = HashSet::new();
        let mut live_bytes = 0u64;
        let mut keep_from = records.len();
        for (i, record) in records.iter().enumerate().rev() {
            let root = parse_root(record)?;
            let mut added: Vec<ObjectId> = Vec::new();
            let mut added_bytes = 0u64;
            tree::walk_objects(&self.objects, &root, &mut |id| {
                if live.contains(id) || added.contains(id) {
                    return false;
                }
                added_bytes += sizes.get(id).copied().unwrap_or(0);
                added.push(*id);
                true
            })?;
            if keep_from != records.len() && live_bytes + added_bytes > max_bytes {
                break;
            }
            live.extend(added);
            live_bytes += added_bytes;
            keep_from = i;
        }
        let mut report = PruneReport::default();
        if keep_from == 0 {
            report.kept_bytes = before;
            return Ok(report);
        }
        self.delete_snapshots(&records[..keep_from], &sizes, &live, &mut report)?;
        report.kept_bytes = before - report.freed_bytes;
        Ok(report)
    }

    /// Deletes the snapshot records `gone`, then every object of `sizes` that `live` does not
    /// hold, adding both to `report` (shared by [`Store::prune`] and [`Store::forget`]).
    fn delete_snapshots(
        &mut self,
        gone: &[Record],
        sizes: &HashMap<ObjectId, u64>,
        live: &HashSet<ObjectId>,
        report: &mut PruneReport,
    ) -> Result<()> {
        for record in gone {
            let path = self.record_path(record.id);
            fs::remove_file(&path).at(&path)?;
            report.removed.push(record.id);
        }
        // Cached hashes may name objects about to go: other processes drop their caches.
        let generation = read_generation(&self.dir.join("generation"))? + 1;
        write_atomically(
            &self.dir.join("generation"),
            generation.to_string().as_bytes(),
        )?;
        self.cache.reset(generation);
        self.cache.save()?;
        for (id, size) in sizes {
            if !live.contains(id) {
                self.objects.remove(id)?;
                report.freed_bytes += size;
            }
        }
        Ok(())
    }

    fn lock(&self) -> Result<File> {
        let path = self.dir.join("lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .at(&path)?;
        fs4::FileExt::lock(&file).at(&path)?;
        Ok(file)
    }

    fn record_path(&self, id: SnapshotId) -> PathBuf {
        self.dir
            .join("snapshots")
            .join(format!("{:020}.json", id.0))
    }

    /// Every snapshot record, oldest first.
    fn records(&self) -> Result<Vec<Record>> {
        let dir = self.dir.join("snapshots");
        let mut out = Vec::new();
        for entry in fs::read_dir(&dir).at(&dir)? {
            let entry = entry.at(&dir)?;
            let name = entry.file_name();
            if !name.to_string_lossy().ends_with(".json") {
                continue; // a temporary file of an interrupted write
            }
            let bytes = match fs::read(entry.path()) {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e).at(&entry.path()),
            };
            let record: Record = serde_json::from_slice(&bytes)
                .map_err(|e| Error::Corrupt(format!("{}: {e}", entry.path().display())))?;
            out.push(record);
        }
        out.sort_by_key(|r| r.id);
        Ok(out)
    }

    /// The newest record, found by name (ids are zero-padded) so only one file is read.
    fn latest_record(&self) -> Result<Option<Record>> {
        let dir = self.dir.join("snapshots");
        let mut newest: Option<u64> = None;
        for entry in fs::read_dir(&dir).at(&dir)? {
            let name = entry.at(&dir)?.file_name();
            let id = name
                .to_str()
                .and_then(|n| n.strip_suffix(".json"))
                .and_then(|n| n.parse::<u64>().ok());
            newest = newest.max(id);
        }
        newest.map(|id| self.record(SnapshotId(id))).transpose()
    }

    fn record(&self, id: SnapshotId) -> Result<Record> {
        let path = self.record_path(id);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(Error::UnknownSnapshot(id));
            }
            Err(e) => return Err(e).at(&path),
        };
        serde_json::from_slice(&bytes)
            .map_err(|e| Error::Corrupt(format!("{}: {e}", path.display())))
    }

    fn root_of(&self, id: SnapshotId) -> Result<ObjectId> {
        parse_root(&self.record(id)?)
    }

    fn flat(&self, id: SnapshotId) -> Result<Flat> {
        tree::read_tree(&self.objects, &self.root_of(id)?)
    }
}

fn parse_root(record: &Record) -> Result<ObjectId> {
    ObjectId::from_hex(&record.root)
        .ok_or_else(|| Error::Corrupt(format!("snapshot {} has a bad root", record.id)))
}
