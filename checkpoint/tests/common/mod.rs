//! Helpers for the checkpoint tests: a temporary `$CORVID_HOME` and workspace, and shell
//! commands run in the workspace the way the model's would be.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use corvid_checkpoint::{Options, RestorePlan, SnapshotId, Store};
use tempfile::TempDir;

pub struct Fixture {
    pub home: TempDir,
    pub ws: TempDir,
    pub store: Store,
}

impl Fixture {
    pub fn new() -> Fixture {
        Fixture::with(Options::default())
    }

    pub fn with(options: Options) -> Fixture {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let store = Store::open_with(home.path(), "project", options).unwrap();
        Fixture { home, ws, store }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.ws.path().join(rel)
    }

    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    pub fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.path(rel)).unwrap()
    }

    pub fn exists(&self, rel: &str) -> bool {
        self.path(rel).symlink_metadata().is_ok()
    }

    /// Runs `script` with `sh -c` in the workspace and insists it succeeds.
    pub fn sh(&self, script: &str) {
        let status = Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(self.ws.path())
            .status()
            .unwrap();
        assert!(status.success(), "`{script}` failed");
    }

    pub fn snapshot(&mut self) -> SnapshotId {
        let ws = self.ws.path().to_path_buf();
        self.store.snapshot(&ws).unwrap()
    }

    pub fn preview(&mut self, target: SnapshotId, expected: SnapshotId) -> RestorePlan {
        let ws = self.ws.path().to_path_buf();
        self.store.preview(&ws, target, expected).unwrap()
    }

    /// Undoes a turn that went from `before` to `after`, insisting nothing conflicts.
    pub fn undo(&mut self, before: SnapshotId, after: SnapshotId) -> RestorePlan {
        let plan = self.preview(before, after);
        assert!(!plan.has_conflicts(), "unexpected conflicts: {plan:?}");
        self.store.restore(&plan, false).unwrap();
        plan
    }

    /// Whether any stored file of the store contains `needle`.
    pub fn store_contains(&self, needle: &[u8]) -> bool {
        files_under(self.store.dir())
            .iter()
            .any(|f| contains(&std::fs::read(f).unwrap(), needle))
    }
}

pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let ft = entry.file_type().unwrap();
        if ft.is_dir() {
            out.extend(files_under(&entry.path()));
        } else if ft.is_file() {
            out.push(entry.path());
        }
    }
    out
}

pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
