//! `corvid --resume ID --fork` and `--continue --fork` (issue 30): the run goes on in a new
//! session whose first request holds the parent's turns; the parent's recording is not
//! written; `sessions list` shows the family.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Sandbox, assert_success, json_lines, run, stderr, stdout, text_turn};
use corvid_testkit::MockServer;
use pretty_assertions::assert_eq;

fn session_file(sb: &Sandbox, id: &str) -> std::path::PathBuf {
    let sessions = sb.home.path().join("sessions");
    let project = std::fs::read_dir(&sessions)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    project.join(format!("{id}.jsonl"))
}

fn user_contents(body: &serde_json::Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_with_fork_goes_on_in_a_new_session_and_leaves_the_parent_file_alone() {
    let server = MockServer::start().await;
    server.push(text_turn("One."));
    server.push(text_turn("Fork one."));
    server.push(text_turn("Fork two."));
    let sb = Sandbox::new();
    let corvid = |args: &[&str]| sb.against(&server, "k", args);

    let first = run(corvid(&["-p", "first prompt", "--output-format", "json"])).await;
    assert_success(&first);
    let parent = json_lines(&first)[0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let parent_bytes = std::fs::read(session_file(&sb, &parent)).unwrap();

    let forked = run(corvid(&[
        "--resume",
        &parent[..8],
        "--fork",
        "-p",
        "on the fork",
        "--output-format",
        "json",
    ]))
    .await;
    assert_success(&forked);
    let child = json_lines(&forked)[0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(child, parent);
    assert_eq!(
        user_contents(&server.requests()[1].body),
        vec!["first prompt", "on the fork"]
    );
    assert_eq!(
        std::fs::read(session_file(&sb, &parent)).unwrap(),
        parent_bytes
    );
    let header: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(session_file(&sb, &child))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(header["forkedFrom"]["sessionId"], parent.as_str());

    // `--continue --fork` forks the latest session: the fork just made.
    let again = run(corvid(&[
        "--continue",
        "--fork",
        "-p",
        "fork of the fork",
        "--output-format",
        "json",
    ]))
    .await;
    assert_success(&again);
    let grandchild = json_lines(&again)[0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        user_contents(&server.requests()[2].body),
        vec!["first prompt", "on the fork", "fork of the fork"]
    );

    let list = run(sb.corvid(&["sessions", "list", "--output-format", "json"])).await;
    assert_success(&list);
    let listed: serde_json::Value = serde_json::from_str(&stdout(&list)).unwrap();
    let parent_of = |id: &str| {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .unwrap()["forkedFrom"]["sessionId"]
            .clone()
    };
    assert_eq!(parent_of(&grandchild), child.as_str());
    assert_eq!(parent_of(&child), parent.as_str());
    assert_eq!(parent_of(&parent), serde_json::Value::Null);
    let text = run(sb.corvid(&["sessions", "list"])).await;
    let rows: Vec<String> = stdout(&text).lines().skip(1).map(str::to_owned).collect();
    assert!(rows[0].starts_with(&parent), "{rows:?}");
    assert!(rows[1].starts_with(&format!("└ {child}")), "{rows:?}");
    assert!(
        rows[2].starts_with(&format!("  └ {grandchild}")),
        "{rows:?}"
    );
}

#[tokio::test]
async fn fork_without_a_session_to_copy_is_a_configuration_error() {
    let sb = Sandbox::new();
    let out = run(sb.corvid(&["--demo", "--fork", "-p", "hi"])).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--resume ID"), "{}", stderr(&out));
}
