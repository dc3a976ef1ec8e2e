//! Hooks over ACP, driven by the official ACP TypeScript client (`tests/acp/client.mjs`) against
//! the real `corvid --acp` binary and the testkit's loopback mock OpenAI server: a PreToolUse
//! block's reason is on the failed card (the parent's call and a subagent's alike), a
//! `systemMessage` is an agent message, and a project hook waiting for review says so.
//!
//! Needs `node` and `cd tests/acp && npm ci`; without them the tests fail, saying what to
//! install (`bash tests/run.sh` installs both).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Stdio;

use common::{chunk, client_dir, require_client};
use corvid_testkit::{Chunk, MockServer, ScriptedResponse};
use serde_json::{Value, json};

fn tool_call(id: &str, name: &str, args: &Value) -> ScriptedResponse {
    ScriptedResponse::sse(vec![
        chunk(
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": id, "type": "function",
                "function": {"name": name, "arguments": args.to_string()}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        Chunk::new("data: [DONE]\n\n"),
    ])
}

fn text_answer(text: &str) -> ScriptedResponse {
    ScriptedResponse::sse(vec![
        chunk(json!({"role": "assistant", "content": text}), None),
        chunk(json!({}), Some("stop")),
        Chunk::new("data: [DONE]\n\n"),
    ])
}

/// The user's hooks: every read is refused with a reason; the end of a turn says something.
fn user_hooks() -> Value {
    json!({"hooks": {
        "PreToolUse": [{"matcher": "Read", "hooks": [
            {"type": "command", "command": "echo 'reads are audited today' >&2; exit 2"}]}],
        "Stop": [{"hooks": [
            {"type": "command", "command": "echo '{\"systemMessage\": \"remember to run the tests\"}'"}]}]
    }})
}

/// Runs the client with one prompt against `corvid --acp --trust` in `project`, whose user
/// settings are `settings`; returns the client's output lines.
async fn run_client(
    server: &MockServer,
    project: &Path,
    home: &Path,
    settings: &Value,
) -> Vec<Value> {
    std::fs::write(home.join("settings.json"), settings.to_string()).unwrap();
    let output = tokio::process::Command::new("node")
        .arg(client_dir().join("client.mjs"))
        .args(["--cwd", project.to_str().unwrap(), "--timeout", "60"])
        .args(["--prompt", "what does a.txt say?"])
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_corvid"))
        .arg("--acp")
        .arg("--trust")
        .current_dir(project)
        .env("CORVID_HOME", home)
        .env("OPENAI_BASE_URL", server.url())
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_MODEL", "mock-model")
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "client failed ({}):\n{stdout}",
        output.status
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l}: {e}")))
        .collect()
}

fn updates(lines: &[Value]) -> Vec<&Value> {
    lines
        .iter()
        .filter(|l| l["kind"] == "update")
        .map(|l| &l["update"])
        .collect()
}

/// Everything the agent said as messages, joined.
fn agent_messages(lines: &[Value]) -> String {
    updates(lines)
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap_or(""))
        .collect()
}

/// The last frame of the card `id`.
fn last_card<'a>(lines: &'a [Value], id: &str) -> &'a Value {
    updates(lines)
        .into_iter()
        .rev()
        .find(|u| u["toolCallId"] == id)
        .unwrap_or_else(|| panic!("no card {id}"))
}

fn project() -> (tempfile::TempDir, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
    (dir, tempfile::tempdir().unwrap())
}

#[tokio::test]
async fn over_acp_a_blocked_calls_reason_is_on_its_failed_card_and_a_system_message_is_said() {
    require_client();
    let server = MockServer::start().await;
    server.push(tool_call(
        "read_1",
        "read_file",
        &json!({"file_path": "a.txt"}),
    ));
    server.push(text_answer("I may not read it."));
    let (dir, home) = project();
    let lines = run_client(&server, dir.path(), home.path(), &user_hooks()).await;

    let card = last_card(&lines, "read_1");
    assert_eq!(card["status"], "failed", "{card}");
    assert!(
        card.to_string().contains("reads are audited today"),
        "{card}"
    );
    let said = agent_messages(&lines);
    assert!(said.contains("remember to run the tests"), "{said}");
    // The reason reached the model with the refused call's result.
    let sent = serde_json::to_string(&server.requests()[1].body).unwrap();
    assert!(sent.contains("reads are audited today"), "{sent}");
}

#[tokio::test]
async fn over_acp_a_subagents_blocked_call_shows_the_reason_on_its_own_card() {
    require_client();
    let server = MockServer::start().await;
    server.push(tool_call(
        "task_1",
        "task",
        &json!({"description": "Read the notes", "prompt": "Read a.txt.", "subagent_type": "explore"}),
    ));
    server.push(tool_call(
        "read_1",
        "read_file",
        &json!({"file_path": "a.txt"}),
    ));
    server.push(text_answer("The read was refused."));
    server.push(text_answer("The subagent could not read it."));
    let (dir, home) = project();
    let lines = run_client(&server, dir.path(), home.path(), &user_hooks()).await;

    let card = last_card(&lines, "task_1/read_1");
    assert_eq!(card["status"], "failed", "{card}");
    assert!(
        card.to_string().contains("reads are audited today"),
        "{card}"
    );
}

#[tokio::test]
async fn over_acp_a_project_hook_waiting_for_review_is_an_agent_message_and_does_not_run() {
    require_client();
    let server = MockServer::start().await;
    server.push(text_answer("Hello."));
    let (dir, home) = project();
    std::fs::create_dir(dir.path().join(".corvid")).unwrap();
    std::fs::write(
        dir.path().join(".corvid/settings.json"),
        json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "touch ran"}]}]}})
            .to_string(),
    )
    .unwrap();
    let lines = run_client(&server, dir.path(), home.path(), &json!({})).await;
    let said = agent_messages(&lines);
    assert!(
        said.contains("1 project hook waits for review") && said.contains("`corvid hooks trust`"),
        "{said}"
    );
    assert!(!dir.path().join("ran").exists());
}
