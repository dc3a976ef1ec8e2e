//! Checkpoints over `session/load` (issue 26): a session loaded in a new connection goes on
//! with its own checkpoint journal, so `/undo` there undoes a turn made before the load.
//! In-process, over a duplex pipe, with a scripted model whose shell command changes a file.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::*;
use corvid_acp::{AgentFactory, FactoryError, SessionSpec};
use corvid_core::agent::AgentConfig;
use corvid_core::checkpoints::{CheckpointSettings, SessionCheckpoints};
use corvid_core::session::SessionStore;
use corvid_protocol::{ApprovalMode, FinishReason};
use serde_json::json;

/// The test factory with checkpoints opened as the real one opens them: under the id the
/// session is built with.
struct WithCheckpoints {
    inner: Arc<TestFactory>,
    home: PathBuf,
}

impl AgentFactory for WithCheckpoints {
    fn check_provider(&self) -> Result<(), FactoryError> {
        self.inner.check_provider()
    }

    fn build(&self, spec: SessionSpec) -> Result<AgentConfig, FactoryError> {
        let mut config = self.inner.build(spec)?;
        let checkpoints = SessionCheckpoints::open(
            &self.home,
            &config.cwd,
            &config.session_id,
            CheckpointSettings::default(),
        )
        .unwrap();
        config.policy.checkpoints = Some(Arc::new(checkpoints));
        Ok(config)
    }

    fn session_store(&self) -> Option<SessionStore> {
        self.inner.session_store()
    }

    fn corvid_home(&self) -> Option<PathBuf> {
        self.inner.corvid_home()
    }
}

async fn client(provider: Arc<ScriptedProvider>, home: &Path) -> TestClient {
    let factory = Arc::new(WithCheckpoints {
        inner: Arc::new(TestFactory {
            provider,
            summaries: false,
            mode: ApprovalMode::Yolo,
            store: Some(SessionStore::new(home)),
            home: Some(home.to_path_buf()),
            real: None,
        }),
        home: home.to_path_buf(),
    });
    TestClient::start(factory, fs_caps(false, false)).await
}

#[tokio::test]
async fn undo_in_a_loaded_session_undoes_a_turn_made_before_the_load() {
    let home = tempfile::tempdir().unwrap();
    let dir = project();
    let provider = ScriptedProvider::new(vec![
        vec![
            call(
                "call_1",
                "run_shell_command",
                json!({"command": "printf changed > a.txt"}),
            ),
            finish(FinishReason::ToolCalls),
        ],
        answer("Changed it."),
    ]);
    let first = client(provider, home.path()).await;
    let sid = first.new_session(dir.path()).await;
    first.prompt(&sid, "change a.txt").await.unwrap().unwrap();
    first.close().await;
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "changed"
    );

    let mut second = client(ScriptedProvider::new(Vec::new()), home.path()).await;
    second.load_released(&sid, dir.path()).await.unwrap();
    *second.policy.lock().unwrap() = PermissionPolicy::Select("rewind");
    second.prompt(&sid, "/undo").await.unwrap().unwrap();
    second.drain();
    let asked = second
        .seen
        .iter()
        .filter(|m| m["request"] == "session/request_permission")
        .count();
    assert_eq!(asked, 1, "the preview is confirmed first");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "hello\n"
    );
}
