//! `kill -9` during a restore: whatever moment the restoring process dies at, every file is
//! either its old version or its new one, whole, and never missing when both versions have
//! it. The test re-runs its own executable as the restoring child and kills it at several
//! points, each found by watching the workspace (no timing assumptions): the per-file
//! invariant is asserted whatever point the kill actually landed on.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use corvid_checkpoint::{SnapshotId, Store};

const CHILD_ENV: &str = "CORVID_CHECKPOINT_KILL_TEST_CHILD";
const FILES: usize = 240;

/// Paths present in both versions, with different content and sizes.
fn both(i: usize) -> String {
    format!("d{}/both-{i:03}.txt", i % 8)
}
/// Paths the turn deleted (the restore recreates them).
fn deleted(i: usize) -> String {
    format!("gone/del-{i:03}.txt")
}
/// Paths the turn created (the restore deletes them).
fn created(i: usize) -> String {
    format!("new/cre-{i:03}.txt")
}

fn old_content(i: usize) -> Vec<u8> {
    format!("old version of file {i}\n")
        .repeat(150)
        .into_bytes()
}
fn new_content(i: usize) -> Vec<u8> {
    format!("NEW {i}\n").repeat(90).into_bytes()
}

fn write(ws: &Path, rel: &str, content: &[u8]) {
    let path = ws.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// Puts the workspace in the state the turn left (the "new" state).
fn make_new_state(ws: &Path) {
    for i in 0..FILES {
        write(ws, &both(i), &new_content(i));
        write(ws, &created(i), &new_content(i));
    }
    let _ = std::fs::remove_dir_all(ws.join("gone"));
}

fn make_old_state(ws: &Path) {
    for i in 0..FILES {
        write(ws, &both(i), &old_content(i));
        write(ws, &deleted(i), &old_content(i));
    }
}

/// The child: previews and restores `target` over `expected`, as `corvid rewind` would.
#[test]
fn child_process_entry_point_for_the_kill_test() {
    // Only does something when the kill test below runs this executable as its child.
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let parts: Vec<&str> = spec.split('\n').collect();
    let (home, ws) = (Path::new(parts[0]), PathBuf::from(parts[1]));
    let target = SnapshotId(parts[2].parse().unwrap());
    let expected = SnapshotId(parts[3].parse().unwrap());
    let mut store = Store::open(home, "project").unwrap();
    let plan = store.preview(&ws, target, expected).unwrap();
    store.restore(&plan, false).unwrap();
}

fn spawn_child(home: &Path, ws: &Path, target: SnapshotId, expected: SnapshotId) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_process_entry_point_for_the_kill_test",
            "--test-threads=1",
            "--quiet",
        ])
        .env(
            CHILD_ENV,
            format!(
                "{}\n{}\n{}\n{}",
                home.display(),
                ws.display(),
                target.0,
                expected.0
            ),
        )
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

/// Every file is whole in one of its two versions; none that both versions have is missing.
fn assert_each_file_old_or_new(ws: &Path) {
    for i in 0..FILES {
        let b =
            std::fs::read(ws.join(both(i))).unwrap_or_else(|e| panic!("{} missing: {e}", both(i)));
        assert!(
            b == old_content(i) || b == new_content(i),
            "{} is partial",
            both(i)
        );
        if let Ok(d) = std::fs::read(ws.join(deleted(i))) {
            assert_eq!(d, old_content(i), "{} is partial", deleted(i));
        }
        if let Ok(c) = std::fs::read(ws.join(created(i))) {
            assert_eq!(c, new_content(i), "{} is partial", created(i));
        }
    }
}

fn temp_files_under(dir: &Path) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            n += temp_files_under(&entry.path());
        } else if entry
            .file_name()
            .to_string_lossy()
            .starts_with(".corvid-restore-")
        {
            n += 1;
        }
    }
    n
}

/// Kill points, each a condition on the workspace the parent waits for before `kill -9`.
enum KillPoint {
    Immediately,
    FirstTempFileWritten,
    FileRenamed(usize),
}

fn reached(ws: &Path, point: &KillPoint) -> bool {
    match point {
        KillPoint::Immediately => true,
        KillPoint::FirstTempFileWritten => temp_files_under(ws) > 0,
        KillPoint::FileRenamed(i) => {
            std::fs::read(ws.join(both(*i))).is_ok_and(|b| b == old_content(*i))
        }
    }
}

#[test]
fn kill_9_during_a_restore_leaves_every_file_old_or_new() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let mut store = Store::open(home.path(), "project").unwrap();
    make_old_state(ws.path());
    let old = store.snapshot(ws.path()).unwrap();
    make_new_state(ws.path());
    let new = store.snapshot(ws.path()).unwrap();

    let points = [
        KillPoint::Immediately,
        KillPoint::FirstTempFileWritten,
        KillPoint::FileRenamed(0),
        KillPoint::FileRenamed(FILES / 2),
        KillPoint::FileRenamed(FILES - 1),
    ];
    for point in &points {
        make_new_state(ws.path());
        let mut child = spawn_child(home.path(), ws.path(), old, new);
        loop {
            if reached(ws.path(), point) || child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::yield_now();
        }
        let _ = child.kill(); // SIGKILL
        child.wait().unwrap();
        assert_each_file_old_or_new(ws.path());
    }

    // A restore run again after the kill finishes the job and clears the leftovers.
    let plan = store.preview(ws.path(), old, new).unwrap();
    assert!(!plan.has_conflicts(), "{plan:?}");
    store.restore(&plan, false).unwrap();
    for i in 0..FILES {
        assert_eq!(
            std::fs::read(ws.path().join(both(i))).unwrap(),
            old_content(i)
        );
        assert_eq!(
            std::fs::read(ws.path().join(deleted(i))).unwrap(),
            old_content(i)
        );
        assert!(!ws.path().join(created(i)).exists());
    }
    assert_eq!(temp_files_under(ws.path()), 0);
}
