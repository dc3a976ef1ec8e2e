//! The store's budget: pruning frees the oldest snapshots first and keeps what the newer
//! ones need.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::Fixture;
use corvid_checkpoint::{Error, SnapshotId};

#[test]
fn prune_frees_the_oldest_snapshots_first_and_keeps_newer_ones_restorable() {
    let mut f = Fixture::new();
    f.write("shared.txt", "same in every snapshot");
    let mut ids = Vec::new();
    for fill in [b'a', b'b', b'c'] {
        f.write("data.bin", vec![fill; 10_000]);
        ids.push(f.snapshot());
    }
    let total = f.store.stored_bytes().unwrap();
    // Room for two snapshots' contents, not three.
    let report = f.store.prune(total - 5_000).unwrap();
    assert_eq!(report.removed, vec![ids[0]]);
    assert!(report.freed_bytes >= 10_000, "{report:?}");
    assert_eq!(f.store.stored_bytes().unwrap(), total - report.freed_bytes);
    let kept: Vec<SnapshotId> = f.store.list().unwrap().iter().map(|s| s.id).collect();
    assert_eq!(kept, vec![ids[1], ids[2]]);

    let plan = f.preview(ids[1], ids[2]);
    f.store.restore(&plan, false).unwrap();
    assert_eq!(f.read("data.bin"), vec![b'b'; 10_000]);
    assert_eq!(f.read("shared.txt"), b"same in every snapshot");

    let ws = f.ws.path().to_path_buf();
    let err = f.store.preview(&ws, ids[0], ids[2]).unwrap_err();
    assert!(matches!(err, Error::UnknownSnapshot(_)), "{err}");
}

#[test]
fn prune_to_zero_keeps_only_the_newest_snapshot() {
    let mut f = Fixture::new();
    let mut last = None;
    for i in 0..4 {
        f.write("a.txt", format!("version {i}"));
        last = Some(f.snapshot());
    }
    let report = f.store.prune(0).unwrap();
    assert_eq!(report.removed.len(), 3);
    let kept: Vec<SnapshotId> = f.store.list().unwrap().iter().map(|s| s.id).collect();
    assert_eq!(kept, vec![last.unwrap()]);
    // The stat cache was reset with the objects it named: a new snapshot stores again.
    f.write("a.txt", "version 0");
    let next = f.snapshot();
    let plan = f.preview(last.unwrap(), next);
    f.store.restore(&plan, false).unwrap();
    assert_eq!(f.read("a.txt"), b"version 3");
}

#[test]
fn the_running_size_matches_a_listing_after_new_files_an_unchanged_snapshot_and_a_prune() {
    let mut f = Fixture::new();
    f.write("a.bin", vec![1u8; 5_000]);
    f.snapshot();
    let listed = f.store.stored_bytes().unwrap();
    assert_eq!(f.store.stored_bytes_estimate().unwrap(), listed);
    // Files added after the first count: the estimate grows by what was written, exactly.
    f.write("b.bin", vec![2u8; 7_000]);
    f.snapshot();
    assert_eq!(
        f.store.stored_bytes_estimate().unwrap(),
        f.store.stored_bytes().unwrap()
    );
    // An unchanged tree writes nothing new.
    let before = f.store.stored_bytes_estimate().unwrap();
    f.snapshot();
    assert_eq!(f.store.stored_bytes_estimate().unwrap(), before);
    // After a prune the next estimate lists again.
    f.write("a.bin", vec![3u8; 5_000]);
    f.snapshot();
    f.store.prune(0).unwrap();
    assert_eq!(
        f.store.stored_bytes_estimate().unwrap(),
        f.store.stored_bytes().unwrap()
    );
}

#[test]
fn forget_deletes_the_chosen_snapshots_and_only_the_content_no_other_snapshot_needs() {
    let mut f = Fixture::new();
    f.write("shared.txt", "kept by the later snapshots too");
    f.write("gone.bin", vec![b'g'; 10_000]);
    let forgotten = f.snapshot();
    std::fs::remove_file(f.ws.path().join("gone.bin")).unwrap();
    f.write("kept.bin", vec![b'k'; 10_000]);
    let kept = f.snapshot();
    f.write("kept.bin", vec![b'n'; 10_000]);
    let newest = f.snapshot();
    let total = f.store.stored_bytes().unwrap();

    let chosen = [forgotten, newest].into_iter().collect();
    let report = f.store.forget(&chosen).unwrap();
    assert_eq!(report.removed, vec![forgotten], "the newest is always kept");
    assert!(report.freed_bytes >= 10_000, "{report:?}");
    assert_eq!(f.store.stored_bytes().unwrap(), total - report.freed_bytes);
    let listed: Vec<SnapshotId> = f.store.list().unwrap().iter().map(|s| s.id).collect();
    assert_eq!(listed, vec![kept, newest]);

    let plan = f.preview(kept, newest);
    f.store.restore(&plan, false).unwrap();
    assert_eq!(f.read("kept.bin"), vec![b'k'; 10_000]);
    assert_eq!(f.read("shared.txt"), b"kept by the later snapshots too");
    let nothing = f.store.forget(&Default::default()).unwrap();
    assert!(nothing.removed.is_empty());
}
