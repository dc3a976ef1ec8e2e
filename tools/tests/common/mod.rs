//! Shared setup for the tool tests: a temporary working directory and a context on it.

#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use corvid_protocol::ToolOutput;
use corvid_tools::{FileSystem, LocalFs, Tool, ToolContext, ToolError};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// A temporary working directory that is removed when dropped.
pub struct Workspace {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
}

impl Workspace {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        Self { _dir: dir, root }
    }

    /// Writes a file (creating parents) relative to the root.
    pub fn file(&self, rel: &str, content: impl AsRef<[u8]>) -> &Self {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
        self
    }

    pub fn dir(&self, rel: &str) -> &Self {
        std::fs::create_dir_all(self.root.join(rel)).unwrap();
        self
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root.join(rel)).unwrap()
    }

    pub fn ctx(&self) -> ToolContext {
        self.ctx_with(Arc::new(LocalFs))
    }

    /// A context on this workspace reading and writing through `fs`.
    pub fn ctx_with(&self, fs: Arc<dyn FileSystem>) -> ToolContext {
        ToolContext {
            call_id: String::new(),
            cwd: self.root.clone(),
            fs,
            cancel: CancellationToken::new(),
            shell_timeout: Duration::from_secs(30),
            shell: Default::default(),
            live_output: None,
        }
    }

    pub async fn run(&self, tool: &dyn Tool, args: Value) -> Result<ToolOutput, ToolError> {
        tool.execute(args, self.ctx()).await
    }

    pub async fn run_ok(&self, tool: &dyn Tool, args: Value) -> ToolOutput {
        match self.run(tool, args).await {
            Ok(output) => output,
            Err(e) => panic!("tool failed: {}", e.message),
        }
    }

    pub async fn run_err(&self, tool: &dyn Tool, args: Value) -> String {
        match self.run(tool, args).await {
            Ok(output) => panic!("tool succeeded unexpectedly: {}", output.text),
            Err(e) => e.message,
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
}

/// Makes a symlink at `link` (relative to the workspace) pointing at `target`.
pub fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}
