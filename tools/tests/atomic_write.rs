//! Writes replace a file atomically (issue 15, finding 5): a `kill -9` or a full disk leaves
//! the old content or the new, never a truncated or half-written file.

// Test helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use common::Workspace;
use corvid_tools::{Edit, FileSystem, LocalFs, WriteFile};
use pretty_assertions::assert_eq;
use serde_json::json;

/// Set in the re-invoked test binary: the path it keeps rewriting until it is killed.
const CHILD_TARGET: &str = "CORVID_TEST_ATOMIC_WRITE_TARGET";
const CONTENT_BYTES: usize = 4 * 1024 * 1024;

fn content(fill: u8) -> String {
    String::from_utf8(vec![fill; CONTENT_BYTES]).unwrap()
}

/// The child's loop: rewrite the target with alternating contents, marking the first
/// finished write so the parent knows the next kill lands during a write.
fn rewrite_forever(target: PathBuf) -> ! {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let marker = target.with_extension("started");
    let (a, b) = (content(b'a'), content(b'b'));
    let root = target.parent().unwrap().to_owned();
    runtime.block_on(async {
        loop {
            LocalFs
                .write_text(root.clone(), target.clone(), a.clone())
                .await
                .unwrap();
            std::fs::write(&marker, "").unwrap();
            LocalFs
                .write_text(root.clone(), target.clone(), b.clone())
                .await
                .unwrap();
        }
    })
}

fn spawn_writer(target: &Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "write_is_atomic_under_kill", "--nocapture"])
        .env(CHILD_TARGET, target)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

fn wait_for(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "the writer never finished a first write"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn write_is_atomic_under_kill() {
    if let Some(target) = std::env::var_os(CHILD_TARGET) {
        rewrite_forever(target.into());
    }
    let ws = Workspace::new();
    let (a, b) = (content(b'a'), content(b'b'));
    for round in 0..8u64 {
        let target = ws.path(&format!("round{round}.txt"));
        let mut child = spawn_writer(&target);
        wait_for(&target.with_extension("started"));
        // Different moments of the write, on whatever the machine's speed is.
        std::thread::sleep(Duration::from_millis(round * 3));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();

        let left = std::fs::read_to_string(&target).unwrap();
        assert!(
            left == a || left == b,
            "round {round}: a kill mid-write left {} bytes that are neither the old nor the new content",
            left.len()
        );
    }
}

/// A tmpfs mounted over a directory, unmounted when dropped.
struct SmallDisk(PathBuf);

impl SmallDisk {
    fn mount(dir: &Path) -> Self {
        assert!(
            std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) == 0,
            "this test mounts a 64 KiB tmpfs to fill a disk and must run as root (CI does)"
        );
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
            .arg(dir)
            .status()
            .unwrap();
        assert!(
            status.success(),
            "mounting a tmpfs on {} failed",
            dir.display()
        );
        Self(dir.to_owned())
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn failed_write_on_a_full_disk_keeps_the_original() {
    let ws = Workspace::new();
    let _disk = SmallDisk::mount(&ws.root);
    let original = format!("head\n{}", "keep me\n".repeat(4 * 1024)); // 32 KiB of the 64
    ws.file("a.txt", &original);
    let too_much = "x".repeat(80 * 1024); // more than the whole disk
    let full = "the disk is full; nothing was changed: free some space and try again";

    let write = ws
        .run_err(
            &WriteFile,
            json!({"file_path": "a.txt", "content": too_much}),
        )
        .await;
    let edit = ws
        .run_err(
            &Edit,
            json!({"file_path": "a.txt", "old_string": "head\n", "new_string": too_much}),
        )
        .await;

    assert_eq!(write, format!("cannot write a.txt: {full}"));
    assert_eq!(edit, format!("cannot write a.txt: {full}"));
    assert_eq!(ws.read("a.txt"), original);
    // No temporary file is left behind.
    assert_eq!(names_in(&ws.root), vec!["a.txt".to_owned()]);
}

#[tokio::test]
async fn a_write_keeps_the_mode_of_the_file_it_replaces() {
    use std::os::unix::fs::PermissionsExt;
    let ws = Workspace::new();
    ws.file("run.sh", "echo old\n");
    std::fs::set_permissions(ws.path("run.sh"), std::fs::Permissions::from_mode(0o751)).unwrap();

    ws.run_ok(
        &WriteFile,
        json!({"file_path": "run.sh", "content": "echo new\n"}),
    )
    .await;

    let mode = std::fs::metadata(ws.path("run.sh"))
        .unwrap()
        .permissions()
        .mode()
        & 0o7777;
    assert_eq!((ws.read("run.sh"), mode), ("echo new\n".to_owned(), 0o751));
    assert_eq!(names_in(&ws.root), vec!["run.sh".to_owned()]);
}
