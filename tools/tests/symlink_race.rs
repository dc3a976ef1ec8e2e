//! File tools stay inside the workspace while another process swaps a folder for a symlink
//! pointing out of it (issue 25, finding 3): the path is resolved and written relative to
//! directory descriptors opened from the workspace root, so no swap can redirect a write.

// Test helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

use common::Workspace;
use corvid_tools::{Edit, FileSystem, LocalFs, WriteFile};
use pretty_assertions::assert_eq;
use rustix::fs::{CWD, RenameFlags, renameat_with};
use serde_json::json;

/// Calls of each kind made while the swap runs.
const ROUNDS: usize = 150;

/// Exchanges `a` and `b` (a real folder and a symlink) as fast as it can until stopped, as a
/// hostile background process in the workspace would.
struct Swapper {
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl Swapper {
    fn start(a: PathBuf, b: PathBuf) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicU64::new(0));
        let thread = std::thread::spawn({
            let (stop, swaps) = (stop.clone(), swaps.clone());
            move || {
                while !stop.load(Ordering::Relaxed) {
                    renameat_with(CWD, &a, CWD, &b, RenameFlags::EXCHANGE)
                        .expect("renameat2(RENAME_EXCHANGE) must work for this test");
                    swaps.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        Self {
            stop,
            swaps,
            thread: Some(thread),
        }
    }

    /// Stops swapping; returns how many swaps were made.
    fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap();
        self.swaps.load(Ordering::Relaxed)
    }
}

/// Every entry under `dir`, recursively, as paths relative to it.
fn everything_under(dir: &Path) -> Vec<String> {
    let mut found = vec![];
    let mut pending = vec![dir.to_owned()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            found.push(path.strip_prefix(dir).unwrap().display().to_string());
            if entry.file_type().unwrap().is_dir() {
                pending.push(path);
            }
        }
    }
    found.sort();
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_file_stays_inside_under_a_symlink_swap_race() {
    let ws = Workspace::new();
    let outside = tempfile::tempdir().unwrap();
    ws.file("dir/sub/w.txt", "old\n").file("dir/e.txt", "a\n");
    // `swap` points out of the workspace; the swapper exchanges it with the real `dir`, so
    // at any moment `dir` is either the real folder or that link.
    std::os::unix::fs::symlink(outside.path(), ws.path("swap")).unwrap();
    let swapper = Swapper::start(ws.path("dir"), ws.path("swap"));

    let mut done = 0;
    for round in 0..ROUNDS {
        let calls = [
            ws.run(
                &WriteFile,
                json!({"file_path": format!("dir/sub/new{round}.txt"), "content": "x\n"}),
            )
            .await,
            ws.run(
                &WriteFile,
                json!({"file_path": "dir/sub/w.txt", "content": format!("{round}\n")}),
            )
            .await,
            ws.run(
                &WriteFile,
                json!({"file_path": format!("dir/made{round}/f.txt"), "content": "x\n"}),
            )
            .await,
            ws.run(
                &Edit,
                json!({"file_path": "dir/e.txt", "old_string": if round % 2 == 0 { "a" } else { "b" },
                       "new_string": if round % 2 == 0 { "b" } else { "a" }}),
            )
            .await,
            ws.run(
                &Edit,
                json!({"file_path": format!("dir/sub/c{round}.txt"), "old_string": "", "new_string": "x\n"}),
            )
            .await,
        ];
        // Refusals and failures are fine while the tree is being swapped; landing outside is not.
        done += calls.iter().filter(|call| call.is_ok()).count();
    }
    let swaps = swapper.stop();

    let escaped = everything_under(outside.path());
    assert!(
        escaped.is_empty(),
        "{} file tool calls ({done} succeeded, {swaps} swaps) left {} entries outside the \
         workspace: {escaped:?}",
        ROUNDS * 5,
        escaped.len()
    );
    // The tools still work once the tree holds still.
    if std::fs::symlink_metadata(ws.path("dir"))
        .unwrap()
        .is_symlink()
    {
        renameat_with(
            CWD,
            ws.path("dir"),
            CWD,
            ws.path("swap"),
            RenameFlags::EXCHANGE,
        )
        .unwrap();
    }
    ws.run_ok(
        &WriteFile,
        json!({"file_path": "dir/sub/after.txt", "content": "after\n"}),
    )
    .await;
    assert_eq!(ws.read("dir/sub/after.txt"), "after\n");
    assert!(everything_under(outside.path()).is_empty());
}

/// The moment the race exploits, held still: the path was checked while `dir` was a real
/// folder, and `dir` is a link out of the workspace when the write runs.
#[tokio::test]
async fn a_folder_that_became_a_symlink_is_refused_not_followed() {
    let ws = Workspace::new();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.path("dir")).unwrap();

    for (rel, walked) in [("dir/f.txt", "dir"), ("dir/new/f.txt", "dir")] {
        let err = LocalFs
            .write_text(ws.root.clone(), ws.path(rel), "x\n".to_owned())
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{walked} is a symbolic link (it changed after the path was checked); file \
                 tools write only through real folders, so nothing was written"
            )
        );
    }
    assert_eq!(everything_under(outside.path()), Vec::<String>::new());
}

/// A path outside the working directory never reaches the disk, whatever the caller passes.
#[tokio::test]
async fn a_local_write_outside_the_root_is_refused() {
    let ws = Workspace::new();
    let outside = tempfile::tempdir().unwrap();

    for path in [
        outside.path().join("f.txt"),
        ws.root.join("../f.txt"),
        ws.root.clone(),
    ] {
        assert!(
            LocalFs
                .write_text(ws.root.clone(), path.clone(), "x\n".to_owned())
                .await
                .is_err(),
            "{} was written",
            path.display()
        );
    }
    assert_eq!(everything_under(outside.path()), Vec::<String>::new());
}

/// Links inside the workspace keep working: the tools resolve them to their targets (and
/// refuse those leaving the workspace) before writing through real folders.
#[tokio::test]
async fn write_and_edit_through_a_link_inside_the_workspace_change_its_target() {
    let ws = Workspace::new();
    ws.file("real/a.txt", "one\n");
    std::os::unix::fs::symlink(ws.path("real"), ws.path("in")).unwrap();
    std::os::unix::fs::symlink("a.txt", ws.path("real/alias.txt")).unwrap();

    ws.run_ok(
        &WriteFile,
        json!({"file_path": "in/b.txt", "content": "two\n"}),
    )
    .await;
    ws.run_ok(
        &Edit,
        json!({"file_path": "in/alias.txt", "old_string": "one", "new_string": "uno"}),
    )
    .await;

    assert_eq!(ws.read("real/b.txt"), "two\n");
    assert_eq!(ws.read("real/a.txt"), "uno\n");
    assert!(
        std::fs::symlink_metadata(ws.path("real/alias.txt"))
            .unwrap()
            .is_symlink()
    );
}

/// The working directory itself may be spelled through a link (the user's choice); only
/// links below it are refused.
#[tokio::test]
async fn a_working_directory_spelled_through_a_link_is_written_normally() {
    let ws = Workspace::new();
    let spelled = tempfile::tempdir().unwrap();
    let root = spelled.path().join("project");
    std::os::unix::fs::symlink(&ws.root, &root).unwrap();

    LocalFs
        .write_text(root.clone(), root.join("src/a.txt"), "x\n".to_owned())
        .await
        .unwrap();

    assert_eq!(ws.read("src/a.txt"), "x\n");
}
