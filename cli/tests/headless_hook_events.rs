//! Every hook event of a headless session against the real binary and a loopback model
//! (issue 27), each handler a logger that appends its stdin: the events fire in order with
//! Claude Code's input fields, `transcript_path` names the session's real recording, and a
//! subagent's calls and end carry `agent_id` and `agent_type`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Sandbox, assert_success, run, text_turn, turn};
use corvid_testkit::{MockServer, ScriptedResponse};
use serde_json::{Value, json};

/// Appends the handler's stdin as one line of `events.jsonl` in the project.
const LOG: &str = r#"{ cat; echo; } >> "$CLAUDE_PROJECT_DIR/events.jsonl""#;

fn call_turn(id: &str, name: &str, args: Value) -> ScriptedResponse {
    ScriptedResponse::sse(turn(
        json!({"tool_calls": [{"index": 0, "id": id, "type": "function",
               "function": {"name": name, "arguments": args.to_string()}}]}),
        "tool_calls",
    ))
}

fn logger() -> Value {
    json!([{"hooks": [{"type": "command", "command": LOG}]}])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_of_a_session_with_a_subagent_fires_with_claudes_input() {
    let sb = Sandbox::new();
    std::fs::write(sb.project_dir().join("notes.txt"), "the answer is 42\n").unwrap();
    let server = MockServer::start().await;
    server.push(call_turn(
        "task_1",
        "task",
        json!({"description": "Find the answer", "prompt": "Read notes.txt.",
               "subagent_type": "explore"}),
    ));
    server.push(call_turn(
        "read_1",
        "read_file",
        json!({"file_path": "notes.txt"}),
    ));
    server.push(text_turn("The notes say 42."));
    server.push(text_turn("Your notes say 42."));
    let start = format!("{LOG}; echo 'release freeze until Monday'");
    let hooks = json!({
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": start}]}],
        "UserPromptSubmit": logger(),
        "PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": LOG}]}],
        "SubagentStop": [{"matcher": "explore", "hooks": [{"type": "command", "command": LOG}]}],
        "Stop": logger(),
        "SessionEnd": logger(),
    });
    sb.user_settings(&json!({ "hooks": hooks }).to_string());
    let args = [
        "-p",
        "what do my notes say?",
        "--output-format",
        "stream-json",
        "-y",
    ];
    let mut cmd = sb.against(&server, "sk-test", &args);
    cmd.env("OPENAI_MODEL", "mock-model");
    let out = run(cmd).await;
    assert_success(&out);

    let first = server.requests()[0].body["messages"].to_string();
    assert!(first.contains("release freeze until Monday"), "{first}");
    let log = std::fs::read_to_string(sb.project_dir().join("events.jsonl")).unwrap();
    let entries: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seen: Vec<String> = entries
        .iter()
        .map(|e| {
            let mut name = e["hook_event_name"].as_str().unwrap().to_owned();
            if let Some(tool) = e["tool_name"].as_str() {
                name = format!("{name} {tool}");
            }
            if let Some(agent) = e["agent_type"].as_str() {
                name = format!("{name} in {agent}");
            }
            name
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse Task",
            "PreToolUse Read in explore",
            "SubagentStop in explore",
            "Stop",
            "SessionEnd",
        ],
        "{log}"
    );
    let session = &entries[0]["session_id"];
    let transcript = entries[0]["transcript_path"]
        .as_str()
        .expect("a transcript");
    assert!(std::path::Path::new(transcript).is_file(), "{transcript}");
    for entry in &entries {
        assert_eq!(&entry["session_id"], session);
        assert_eq!(entry["transcript_path"], transcript);
        assert_eq!(entry["permission_mode"], "bypassPermissions");
        let cwd = std::fs::canonicalize(entry["cwd"].as_str().unwrap()).unwrap();
        assert_eq!(cwd, std::fs::canonicalize(sb.project_dir()).unwrap());
    }
    assert_eq!(entries[0]["source"], "startup");
    assert_eq!(entries[0]["model"], "mock-model");
    let read = &entries[3];
    assert_eq!(read["agent_id"], "task_1");
    let path = read["tool_input"]["file_path"].as_str().unwrap();
    assert!(
        path.ends_with("/notes.txt") && path.starts_with('/'),
        "{path}"
    );
    let sub = &entries[4];
    assert_eq!(
        (
            &sub["agent_id"],
            &sub["stop_hook_active"],
            &sub["last_assistant_message"],
            &sub["agent_transcript_path"]
        ),
        (
            &json!("task_1"),
            &json!(false),
            &json!("The notes say 42."),
            &json!(transcript)
        )
    );
    assert_eq!(entries[5]["last_assistant_message"], "Your notes say 42.");
    assert!(entries[5].get("agent_id").is_none());
    assert_eq!(entries[6]["reason"], "other");
}
