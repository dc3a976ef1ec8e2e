//! End to end, custom commands and skills over ACP (issue 29): the official ACP TypeScript
//! client (`tests/acp/commands.mjs`, on `@agentclientprotocol/sdk` 2.4.0) opens a session of
//! the real `corvid --acp`; `available_commands_update` lists the user's command files and
//! user-invocable skills with their `argument-hint` as `input.hint` (and no model-only skill,
//! no command of the untrusted project); a command file added while the session runs is listed
//! in a new update, and `/added now` reaches the model (the testkit's loopback mock) expanded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{require_client, run_session_script, text_turn};
use corvid_testkit::MockServer;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The command lists the client received, in order.
fn command_lists(lines: &[Value]) -> Vec<&Vec<Value>> {
    lines
        .iter()
        .filter(|l| l["kind"] == "update")
        .filter(|l| l["update"]["sessionUpdate"] == "available_commands_update")
        .map(|l| l["update"]["availableCommands"].as_array().unwrap())
        .collect()
}

fn named<'a>(list: &'a [Value], name: &str) -> Option<&'a Value> {
    list.iter().find(|c| c["name"] == name)
}

#[tokio::test]
async fn the_official_client_sees_commands_and_skills_with_hints_and_a_file_added_later() {
    require_client();
    let server = MockServer::start().await;
    server.push(text_turn("Done."));
    let home = tempfile::tempdir().unwrap();
    write(
        &home.path().join("commands/review.md"),
        "---\ndescription: Review a file\nargument-hint: FILE\n---\nReview $1.\n",
    );
    write(
        &home.path().join("skills/deploy/SKILL.md"),
        "---\nname: deploy\ndescription: Deploy the app\nargument-hint: ENV\n---\nDeploy to $ARGUMENTS.\n",
    );
    write(
        &home.path().join("skills/internal/SKILL.md"),
        "---\nname: internal\ndescription: Only for the model\nuser-invocable: false\n---\nBody.\n",
    );
    let project = tempfile::tempdir().unwrap();
    // Not trusted (no --trust): the project's commands are not read.
    write(
        &project.path().join(".claude/commands/secret.md"),
        "---\ndescription: From the repository\n---\nRun this.\n",
    );
    let lines = run_session_script(
        "commands.mjs",
        &server.url(),
        project.path(),
        home.path(),
        "/added now",
        "allow_once",
    )
    .await;

    let lists = command_lists(&lines);
    let first = lists.first().expect("a command list");
    assert_eq!(
        named(first, "review"),
        Some(&json!({"name": "review", "description": "Review a file", "input": {"hint": "FILE"}}))
    );
    assert_eq!(
        named(first, "deploy"),
        Some(&json!({"name": "deploy", "description": "Deploy the app", "input": {"hint": "ENV"}}))
    );
    assert!(named(first, "compress").is_some(), "{first:?}");
    assert_eq!(named(first, "internal"), None);
    assert_eq!(named(first, "secret"), None);
    assert_eq!(named(first, "added"), None);
    let last = lists.last().unwrap();
    assert_eq!(
        named(last, "added"),
        Some(
            &json!({"name": "added", "description": "Added while the session ran",
            "input": {"hint": "WHAT"}})
        )
    );
    assert!(named(last, "review").is_some());

    let answer = lines.iter().find(|l| l["kind"] == "response").unwrap();
    assert_eq!(answer["response"]["stopReason"], "end_turn");
    let requests = server.requests();
    let messages = requests[0].body["messages"].as_array().unwrap();
    assert_eq!(messages.last().unwrap()["content"], json!("Added now.\n"));
}
