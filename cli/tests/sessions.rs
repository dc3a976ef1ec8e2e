//! Recorded sessions through the binary: every headless run is recorded, `--continue` and
//! `--resume` go on with one, `sessions list|show` read them back (SPEC §9).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{
    Sandbox, assert_success, json_lines, label_answer, run, stderr, stdout, text_turn, turn,
};
use corvid_testkit::{MockServer, ScriptedResponse};
use pretty_assertions::assert_eq;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_and_resume_go_on_with_the_recorded_history() {
    let server = MockServer::start().await;
    server.push(text_turn("One."));
    server.push(text_turn("Two."));
    server.push(text_turn("Three."));
    let sb = Sandbox::new();
    let corvid = |args: &[&str]| sb.against(&server, "k", args);

    let first = run(corvid(&["-p", "first prompt", "--output-format", "json"])).await;
    assert_success(&first);
    let id = json_lines(&first)[0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();

    let second = run(corvid(&[
        "--continue",
        "-p",
        "second prompt",
        "--output-format",
        "json",
    ]))
    .await;
    assert_success(&second);
    assert_eq!(json_lines(&second)[0]["session_id"], id.as_str());

    let third = run(corvid(&[
        "--resume",
        &id[..8],
        "-p",
        "third",
        "--output-format",
        "json",
    ]))
    .await;
    assert_success(&third);
    assert_eq!(json_lines(&third)[0]["result"], "Three.");

    let sent: Vec<(String, String)> = server.requests()[2].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let pairs = |r: &str, c: &str| (r.to_owned(), c.to_owned());
    assert_eq!(
        sent,
        vec![
            pairs("user", "first prompt"),
            pairs("assistant", "One."),
            pairs("user", "second prompt"),
            pairs("assistant", "Two."),
            pairs("user", "third"),
        ]
    );
}

#[tokio::test]
async fn sessions_list_and_show_read_a_demo_session_back() {
    let sb = Sandbox::new();
    let out = sb.look_around(&["-y", "--output-format", "json"]).await;
    let id = json_lines(&out)[0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();

    let list = run(sb.corvid(&["sessions", "list"])).await;
    assert_success(&list);
    let listing = stdout(&list);
    let rows: Vec<&str> = listing.lines().skip(1).collect();
    assert_eq!(rows.len(), 1, "{listing}");
    assert!(rows[0].starts_with(&id), "{listing}");
    assert!(rows[0].contains("corvid-demo"), "{listing}");
    assert!(rows[0].trim_end().ends_with("look around"), "{listing}");

    let show = run(sb.corvid(&["sessions", "show", &id])).await;
    assert_success(&show);
    let transcript = stdout(&show);
    for expected in [
        "> look around",
        "  ✓ list_directory {\"path\":\".\"}",
        "  ✓ read_file {\"file_path\":\"README.md\"}",
        "  ✓ run_shell_command {\"command\":\"ls -la\"",
        "● Ran ls -la",
        "## What I found",
    ] {
        assert!(
            transcript.contains(expected),
            "missing {expected:?} in\n{transcript}"
        );
    }
}

#[tokio::test]
async fn an_unknown_session_is_a_configuration_error_pointing_at_the_list() {
    let sb = Sandbox::new();
    let out = run(sb.corvid(&["--demo", "--resume", "nope", "-p", "hi"])).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("corvid sessions list"),
        "{}",
        stderr(&out)
    );
    let out = run(sb.corvid(&["--demo", "--continue", "-p", "hi"])).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no recorded session"),
        "{}",
        stderr(&out)
    );
}

fn list_turn() -> ScriptedResponse {
    ScriptedResponse::sse(turn(
        json!({"role": "assistant", "tool_calls": [
            {"index": 0, "id": "call_1", "type": "function",
             "function": {"name": "list_directory", "arguments": "{\"path\":\".\"}"}},
            {"index": 1, "id": "call_2", "type": "function",
             "function": {"name": "read_file", "arguments": "{\"file_path\":\"main.rs\"}"}},
        ]}),
        "tool_calls",
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_tool_task_with_its_summary_resumes_with_calls_paired_and_no_key_on_disk() {
    const KEY: &str = "sk-corvid-headless-NEVER-RECORD-77e1";
    let server = MockServer::start().await;
    let main = |r: &corvid_testkit::RecordedRequest| r.body["model"] == "main-model";
    server.push_matching(main, list_turn());
    server.push_matching(main, text_turn("Listed."));
    server.push_matching(main, text_turn("Still here."));
    server.push_matching(
        |r| r.body["model"] == "fast-model",
        label_answer("Listed the project"),
    );
    let sb = Sandbox::new();
    let corvid = |args: &[&str]| {
        let mut cmd = sb.against(&server, KEY, args);
        cmd.env("OPENAI_MODEL", "main-model");
        cmd
    };
    let first = run(corvid(&[
        "-p",
        "list it",
        "--fast-model",
        "fast-model",
        "--output-format",
        "json",
    ]))
    .await;
    assert_success(&first);
    assert_eq!(
        json_lines(&first)[0]["tool_use_summaries"],
        json!([{"summary": "Listed the project", "preceding_tool_use_ids": ["call_1", "call_2"]}])
    );

    let second = run(corvid(&[
        "--continue",
        "-p",
        "and now?",
        "--output-format",
        "json",
    ]))
    .await;
    assert_success(&second);
    let resumed = server
        .requests()
        .into_iter()
        .filter(|r| r.body["model"] == "main-model")
        .nth(2)
        .expect("the resumed prompt's request");
    let messages = resumed.body["messages"].as_array().unwrap();
    let calls: Vec<String> = messages
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
        .map(|c| c["id"].as_str().unwrap_or_default().to_owned())
        .collect();
    let results: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(calls, vec!["call_1", "call_2"]);
    assert_eq!(
        results,
        vec!["call_1", "call_2"],
        "each result follows its call: {messages:#?}"
    );
    let read = messages
        .iter()
        .find(|m| m["tool_call_id"] == "call_2")
        .unwrap();
    assert_eq!(read["content"], "fn main() {}\n");
    assert_eq!(messages.last().unwrap()["content"], "and now?");

    let mut recorded = String::new();
    for dir in std::fs::read_dir(sb.home.path().join("sessions")).unwrap() {
        for file in std::fs::read_dir(dir.unwrap().path()).unwrap() {
            recorded.push_str(&std::fs::read_to_string(file.unwrap().path()).unwrap());
        }
    }
    assert!(
        recorded.contains("\"summary\":\"Listed the project\""),
        "{recorded}"
    );
    assert!(
        !recorded.contains(KEY),
        "the API key must never be recorded"
    );
    assert!(
        !recorded.contains("Bearer"),
        "no auth header may be recorded"
    );
}
