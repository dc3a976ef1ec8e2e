//! Running the real `corvid` binary in a hermetic environment: a temp project, a temp
//! `CORVID_HOME`, no inherited keys, the demo model without pacing.
#![allow(dead_code, unused_imports, clippy::unwrap_used, clippy::expect_used)]

mod acp_client;
mod mcp;
mod openai;

pub use acp_client::*;
pub use mcp::*;
pub use openai::*;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use serde_json::Value;
use tempfile::TempDir;
use tokio::process::Command;

/// A temp project directory and a temp corvid home.
pub struct Sandbox {
    pub project: TempDir,
    pub home: TempDir,
}

impl Sandbox {
    /// A project holding `README.md` and `main.rs`.
    pub fn new() -> Self {
        let project = tempfile::tempdir().unwrap();
        std::fs::write(
            project.path().join("README.md"),
            "# Sample project\n\nHello.\n",
        )
        .unwrap();
        std::fs::write(project.path().join("main.rs"), "fn main() {}\n").unwrap();
        Self {
            project,
            home: tempfile::tempdir().unwrap(),
        }
    }

    pub fn project_dir(&self) -> &Path {
        self.project.path()
    }

    /// Writes `$CORVID_HOME/settings.json`.
    pub fn user_settings(&self, text: &str) -> PathBuf {
        let path = self.home.path().join("settings.json");
        std::fs::write(&path, text).unwrap();
        path
    }

    /// `corvid ARGS` in the project with nothing but PATH, CORVID_HOME and zero demo pacing.
    pub fn corvid(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_corvid"));
        cmd.args(args)
            .current_dir(self.project.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("CORVID_HOME", self.home.path())
            .env("CORVID_DEMO_PACING_MS", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }
}

impl Sandbox {
    /// Runs the demo model's "look around" task with `args` added; checks that it succeeded.
    pub async fn look_around(&self, args: &[&str]) -> Output {
        let out = run(self.corvid(&[&["--demo", "-p", "look around"], args].concat())).await;
        assert_success(&out);
        out
    }
}

/// Runs a command to completion.
pub async fn run(mut cmd: Command) -> Output {
    cmd.output().await.unwrap()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Every stdout line parsed as JSON.
pub fn json_lines(out: &Output) -> Vec<Value> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// A message's `type`, with `/subtype` for system messages.
pub fn kind(msg: &Value) -> String {
    let t = msg["type"].as_str().unwrap_or("?");
    match msg["subtype"].as_str() {
        Some(sub) if t == "system" => format!("{t}/{sub}"),
        _ => t.to_owned(),
    }
}

/// The content blocks' kinds of an assistant/user message (`text`, `tool_use`, `tool_result`).
pub fn block_kinds(msg: &Value) -> Vec<String> {
    msg["message"]["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .map(|b| b["type"].as_str().unwrap_or("?").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Fails the test, showing stderr, unless the run exited 0.
pub fn assert_success(out: &Output) {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(out));
}
