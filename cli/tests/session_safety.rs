//! Recorded sessions through the binary under stress: a torn end met by `--continue`, and a
//! session another corvid process is still recording (issue 15, findings 6 and 10).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Stdio;

use common::{Sandbox, assert_success, json_lines, run, stderr, text_turn, turn};
use corvid_testkit::{Gate, MockServer, ScriptedResponse};
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio::io::AsyncBufReadExt;

fn session_file(sb: &Sandbox, id: &str) -> std::path::PathBuf {
    let sessions = sb.home.path().join("sessions");
    let project = std::fs::read_dir(&sessions)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    project.path().join(format!("{id}.jsonl"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_warns_about_a_torn_last_line_like_resume() {
    let server = MockServer::start().await;
    for text in ["One.", "Two.", "Three."] {
        server.push(text_turn(text));
    }
    let sb = Sandbox::new();
    let corvid = |args: &[&str]| sb.against(&server, "k", args);
    let first = run(corvid(&["-p", "first", "--output-format", "json"])).await;
    assert_success(&first);
    let id = json_lines(&first)[0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = session_file(&sb, &id);
    let tear = || {
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str(r#"{"record":"message","mess"#);
        std::fs::write(&path, text).unwrap();
    };
    let warned = |out: &std::process::Output| {
        stderr(out).lines().any(|l| {
            l.starts_with(&format!(
                "corvid: warning: {}: skipped the torn last line",
                path.display()
            ))
        })
    };

    tear();
    let continued = run(corvid(&["--continue", "-p", "second"])).await;
    assert_success(&continued);
    assert!(warned(&continued), "stderr: {}", stderr(&continued));

    tear();
    let resumed = run(corvid(&["--resume", &id, "-p", "third"])).await;
    assert_success(&resumed);
    assert!(warned(&resumed), "stderr: {}", stderr(&resumed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_in_use_cannot_be_resumed_by_a_second_process() {
    let server = MockServer::start().await;
    let gate = Gate::new();
    let mut held = turn(json!({"role": "assistant", "content": "Done."}), "stop");
    held[0] = held[0].clone().gate(&gate);
    server.push(ScriptedResponse::sse(held));
    let sb = Sandbox::new();
    let mut first = sb.against(
        &server,
        "k",
        &["-p", "slow", "--output-format", "stream-json"],
    );
    first.stdout(Stdio::piped());
    let mut first = first.spawn().unwrap();
    let mut lines = tokio::io::BufReader::new(first.stdout.take().unwrap()).lines();
    let init: serde_json::Value =
        serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    let id = init["session_id"].as_str().unwrap().to_owned();
    gate.wait_reached().await;

    let second = run(sb.against(&server, "k", &["--resume", &id, "-p", "meanwhile"])).await;
    assert_eq!(second.status.code(), Some(2), "stderr: {}", stderr(&second));
    assert!(
        stderr(&second).starts_with(&format!(
            "corvid: the session {id} is in use by another corvid process"
        )),
        "stderr: {}",
        stderr(&second)
    );
    assert_eq!(
        server.requests().len(),
        1,
        "the second process sent nothing"
    );

    gate.open();
    while lines.next_line().await.unwrap().is_some() {}
    assert_eq!(first.wait().await.unwrap().code(), Some(0));
    // Once the first process is done the session resumes.
    server.push(text_turn("Later."));
    assert_success(&run(sb.against(&server, "k", &["--resume", &id, "-p", "later"])).await);
}
