//! Custom commands over ACP (issue 29): every command file of the session is advertised with
//! its description and argument hint, the list is sent again when a file is added, and
//! `/name args` from the editor reaches the model as the command's expansion.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::*;
use corvid_acp::{AgentFactory, FactoryError, SessionSpec};
use corvid_core::agent::AgentConfig;
use corvid_core::commands::{Library, Roots};
use corvid_core::session::SessionStore;
use corvid_core::settings::{ProjectTrust, Trust};
use corvid_protocol::Message;
use pretty_assertions::assert_eq;

/// The test factory, with the session's folder read for commands (trusted).
struct WithCommands(Arc<TestFactory>);

impl AgentFactory for WithCommands {
    fn check_provider(&self) -> Result<(), FactoryError> {
        self.0.check_provider()
    }

    fn build(&self, spec: SessionSpec) -> Result<AgentConfig, FactoryError> {
        let cwd = spec.cwd.clone();
        let mut config = self.0.build(spec)?;
        let roots = Roots {
            cwd: cwd.clone(),
            project_dirs: vec![cwd.clone()],
            ..Roots::default()
        };
        let trust = ProjectTrust::vouched(Some(cwd), Trust::Trusted);
        config.policy.commands = Some(Library::new(roots, trust));
        Ok(config)
    }

    fn session_store(&self) -> Option<SessionStore> {
        None
    }
}

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[tokio::test]
async fn command_files_are_listed_with_hints_updated_when_one_is_added_and_run_as_typed() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join(".claude/commands/review.md"),
        "---\ndescription: Review a file\nargument-hint: FILE\n---\nReview $0.\n",
    );
    let provider = ScriptedProvider::new(vec![answer("Reviewed.")]);
    let factory = Arc::new(WithCommands(TestFactory::new(provider.clone())));
    let mut client = TestClient::start(factory, fs_caps(false, false)).await;
    let sid = client.new_session(dir.path()).await;
    let first = client
        .until(|m| m["params"]["update"]["sessionUpdate"] == "available_commands_update")
        .await;
    let review = first["params"]["update"]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "review")
        .unwrap()
        .clone();
    assert_eq!(
        review,
        serde_json::json!({
            "name": "review",
            "description": "Review a file",
            "input": {"hint": "FILE"}
        })
    );
    let names = |m: &serde_json::Value| -> Vec<String> {
        m["params"]["update"]["availableCommands"]
            .as_array()
            .map(|list| {
                list.iter()
                    .map(|c| c["name"].as_str().unwrap().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    assert!(names(&first).contains(&"init".to_owned()));

    write(
        &dir.path().join(".gemini/commands/git/commit.toml"),
        "prompt = \"Commit.\"\n",
    );
    let updated = client
        .until(|m| {
            m["params"]["update"]["sessionUpdate"] == "available_commands_update"
                && names(m).contains(&"git:commit".to_owned())
        })
        .await;
    assert_eq!(updated["params"]["sessionId"], sid.as_str());

    client
        .prompt(&sid, "/review src/lib.rs")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        provider.requests()[0].messages.last().unwrap(),
        &Message::user_text("Review src/lib.rs.\n")
    );
}
