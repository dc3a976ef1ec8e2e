//! End to end, `/branch` over ACP (issue 30): the official ACP TypeScript client
//! (`tests/acp/branch.mjs`, on `@agentclientprotocol/sdk` 2.4.0) drives the real
//! `corvid --acp` against the testkit's loopback mock model. `/branch` is advertised, its
//! answer names the fork's id (text and `_meta`), `session/load` opens the fork, and the
//! fork's next model request holds the parent's turn.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{require_client, run_session_script, text_turn};
use corvid_testkit::MockServer;
use serde_json::Value;

#[tokio::test]
async fn branch_names_a_new_session_that_loads_with_the_parents_history() {
    require_client();
    let server = MockServer::start().await;
    server.push(text_turn("First answer."));
    server.push(text_turn("Answer on the fork."));
    let project = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let url = server.url();
    let lines = run_session_script(
        "branch.mjs",
        &url,
        project.path(),
        home.path(),
        "first prompt",
        "keep",
    )
    .await;
    let commands: Vec<&str> = lines
        .iter()
        .filter(|l| l["update"]["sessionUpdate"] == "available_commands_update")
        .flat_map(|l| l["update"]["availableCommands"].as_array().unwrap())
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert!(commands.contains(&"branch"), "{commands:?}");
    let parent = lines.iter().find(|l| l["kind"] == "session").unwrap()["response"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let loaded = lines.iter().find(|l| l["kind"] == "loaded").unwrap();
    let child = loaded["sessionId"].as_str().unwrap().to_owned();
    assert_ne!(child, parent);
    let text: String = lines
        .iter()
        .filter(|l| l["kind"] == "update" && l["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|l| l["update"]["content"]["text"].as_str())
        .collect();
    assert!(
        text.contains(&format!(
            "the new session {child} is a fork of this one ({parent})"
        )),
        "{text}"
    );
    let responses: Vec<&Value> = lines.iter().filter(|l| l["kind"] == "response").collect();
    assert_eq!(responses.len(), 3, "{lines:?}");
    assert_eq!(
        responses[1]["response"]["_meta"]["corvid"]["forkedFrom"],
        parent.as_str()
    );
    // The fork's first model request holds the parent's turn, then its own prompt.
    let users: Vec<String> = server.requests()[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| {
            m["content"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| m["content"].to_string())
        })
        .collect();
    assert_eq!(users.len(), 2, "{users:?}");
    assert!(users[0].contains("first prompt"), "{users:?}");
    assert!(users[1].contains("on the fork"), "{users:?}");
    // The fork's recording names its parent.
    let sessions = home.path().join("sessions");
    let project_dir = std::fs::read_dir(&sessions)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let recorded = std::fs::read_to_string(project_dir.join(format!("{child}.jsonl"))).unwrap();
    let header: Value = serde_json::from_str(recorded.lines().next().unwrap()).unwrap();
    assert_eq!(header["forkedFrom"]["sessionId"], parent.as_str());
}
