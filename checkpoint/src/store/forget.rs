//! Deleting chosen snapshots (those of a session that no longer exists), and the content only
//! they needed: [`Store::forget`]. Unlike [`Store::prune`] it does not go by age.

use std::collections::{HashMap, HashSet};

use super::{PruneReport, Store, parse_root};
use crate::error::Result;
use crate::objects::ObjectId;
use crate::store::SnapshotId;
use crate::tree;

impl Store {
    /// Deletes the snapshots `ids`, then every object no remaining snapshot needs. The newest
    /// snapshot is always kept: a session may have just been handed it (a snapshot of an
    /// unchanged workspace is the newest one) and not have journaled it yet.
    pub fn forget(&mut self, ids: &HashSet<SnapshotId>) -> Result<PruneReport> {
        let _lock = self.lock()?;
        let records = self.records()?;
        let newest = records.last().map(|r| r.id);
        let (gone, kept): (Vec<_>, Vec<_>) = records
            .into_iter()
            .partition(|r| ids.contains(&r.id) && Some(r.id) != newest);
        let mut report = PruneReport::default();
        if gone.is_empty() {
            return Ok(report);
        }
        self.known_bytes = None;
        let sizes: HashMap<ObjectId, u64> = self.objects.all()?.into_iter().collect();
        let mut live: HashSet<ObjectId> = HashSet::new();
        for record in &kept {
            tree::walk_objects(&self.objects, &parse_root(record)?, &mut |id| {
                live.insert(*id)
            })?;
        }
        self.delete_snapshots(&gone, &sizes, &live, &mut report)?;
        report.kept_bytes = sizes.values().sum::<u64>() - report.freed_bytes;
        Ok(report)
    }
}
