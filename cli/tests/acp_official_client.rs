//! End to end: the official ACP TypeScript client (`tests/acp/client.mjs`, on
//! `@agentclientprotocol/sdk` 2.4.0) drives the real `corvid --acp` binary, whose model is the
//! testkit's loopback mock OpenAI server.
//!
//! Needs `node` and `cd tests/acp && npm ci`; without them the tests fail, saying what to
//! install (`bash tests/run.sh` installs both).

// A skipped test says so on stderr, so a local run without node is not mistaken for a pass.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

mod common;
#[path = "acp_official_client/real_clients.rs"]
mod real_clients;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::{chunk, client_dir, require_client};
use corvid_testkit::{Chunk, MockServer, ScriptedResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// The `corvid` binary cargo built for this test.
fn corvid_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_corvid"))
}

/// The first chunk of a tool call: id and name known, arguments not yet.
fn tool_start(id: &str, name: &str) -> Chunk {
    chunk(
        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": id, "type": "function",
            "function": {"name": name, "arguments": ""}}]}),
        None,
    )
}

fn read_a_call(id: &str) -> ScriptedResponse {
    ScriptedResponse::sse(vec![
        tool_start(id, "read_file"),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"file_path\":"}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"a.txt\"}"}}]}),
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

/// A recognisable provider key: it must never show up in a session recording.
const API_KEY: &str = "sk-corvid-e2e-NEVER-RECORD-4f2a9c";

/// A project with `a.txt` and fast retries, and the `CORVID_HOME` its sessions are recorded in.
struct Project {
    dir: tempfile::TempDir,
    home: tempfile::TempDir,
}

impl Project {
    /// `settings` is the project's `.corvid/settings.json` (applied: the run passes `--trust`).
    fn new(settings: &Value) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
        std::fs::create_dir(dir.path().join(".corvid")).unwrap();
        std::fs::write(
            dir.path().join(".corvid/settings.json"),
            settings.to_string(),
        )
        .unwrap();
        Self {
            dir,
            home: tempfile::tempdir().unwrap(),
        }
    }

    /// Runs the client against `corvid --acp` here; returns its output lines.
    async fn run(&self, server: &MockServer, flags: &[&str], summaries: bool) -> Vec<Value> {
        let output = tokio::process::Command::new("node")
            .arg(client_dir().join("client.mjs"))
            .args([
                "--cwd",
                self.dir.path().to_str().unwrap(),
                "--timeout",
                "60",
            ])
            .args(flags)
            .arg("--")
            .arg(corvid_bin())
            .arg("--acp")
            // The project's settings (fast retries) apply only in a trusted folder.
            .arg("--trust")
            .current_dir(self.dir.path())
            .env("CORVID_HOME", self.home.path())
            .env("OPENAI_BASE_URL", server.url())
            .env("OPENAI_API_KEY", API_KEY)
            .env("OPENAI_MODEL", "mock-model")
            .env_remove("ANTHROPIC_API_KEY")
            .env(
                "CORVID_EMIT_TOOL_USE_SUMMARIES",
                if summaries { "1" } else { "0" },
            )
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
}

/// Fast retries, so the cut-stream scenario does not wait a second.
fn fast_retries() -> Value {
    json!({"retry": {"initialDelayMs": 10, "maxDelayMs": 10}})
}

/// Runs the client against `corvid --acp` in a fresh project without summaries.
async fn run_client(server: &MockServer, flags: &[&str]) -> Vec<Value> {
    Project::new(&fast_retries())
        .run(server, flags, false)
        .await
}

/// `(toolCallId, status, discarded?)` of every card frame, in order.
fn card_statuses(lines: &[Value]) -> Vec<(String, String, bool)> {
    lines
        .iter()
        .filter(|l| l["kind"] == "update")
        .map(|l| &l["update"])
        .filter(|u| u["sessionUpdate"] == "tool_call" || u["sessionUpdate"] == "tool_call_update")
        .map(|u| {
            (
                u["toolCallId"].as_str().unwrap().to_owned(),
                u["status"].as_str().unwrap_or("").to_owned(),
                u["_meta"]["preparationDiscarded"] == json!(true),
            )
        })
        .collect()
}

fn stop_reason(lines: &[Value]) -> Value {
    lines
        .iter()
        .find(|l| l["kind"] == "response")
        .map(|l| l["response"]["stopReason"].clone())
        .unwrap_or(Value::Null)
}

fn card(id: &str, status: &str, discarded: bool) -> (String, String, bool) {
    (id.to_owned(), status.to_owned(), discarded)
}

#[tokio::test]
async fn the_official_client_sees_a_tool_call_go_from_pending_to_completed() {
    require_client();
    let server = MockServer::start().await;
    server.push(read_a_call("call_1"));
    server.push(text_answer("Done."));
    let lines = run_client(&server, &["--prompt", "read a.txt"]).await;

    let initialize = lines.iter().find(|l| l["kind"] == "initialize").unwrap();
    assert_eq!(initialize["response"]["agentInfo"]["name"], json!("corvid"));
    assert_eq!(
        card_statuses(&lines),
        vec![
            card("call_1", "pending", false),
            card("call_1", "in_progress", false),
            card("call_1", "completed", false),
        ]
    );
    let preparing = lines
        .iter()
        .find(|l| l["update"]["sessionUpdate"] == "tool_call")
        .unwrap();
    assert_eq!(
        preparing["update"],
        json!({
            "sessionUpdate": "tool_call",
            "toolCallId": "call_1",
            "status": "pending",
            "title": "ReadFile",
            "kind": "read",
            "content": [],
            "locations": [],
            "rawInput": {},
            "_meta": {"toolName": "read_file", "provenance": "builtin", "phase": "preparing"},
        })
    );
    assert_eq!(stop_reason(&lines), json!("end_turn"));
}

#[tokio::test]
async fn the_official_client_sees_a_cut_stream_discard_its_card_before_the_retry() {
    require_client();
    let server = MockServer::start().await;
    server.push(ScriptedResponse::sse(vec![tool_start("call_1", "write_file")]).cut());
    server.push(read_a_call("call_2"));
    server.push(text_answer("Done."));
    let lines = run_client(&server, &["--prompt", "go"]).await;

    assert_eq!(
        card_statuses(&lines),
        vec![
            card("call_1", "pending", false),
            card("call_1", "failed", true),
            card("call_2", "pending", false),
            card("call_2", "in_progress", false),
            card("call_2", "completed", false),
        ]
    );
    // A client that keeps the discarded card (none knows the mark) shows why it failed.
    let discarded = lines
        .iter()
        .find(|l| l["update"]["_meta"]["preparationDiscarded"] == json!(true))
        .unwrap();
    assert_eq!(
        discarded["update"]["title"],
        json!("WriteFile (discarded: the model retried)")
    );
    assert_eq!(stop_reason(&lines), json!("end_turn"));
}

#[tokio::test]
async fn the_official_client_cancels_while_arguments_stream() {
    require_client();
    let server = MockServer::start().await;
    server.push(ScriptedResponse::sse(vec![tool_start("call_1", "write_file")]).hang());
    let lines = run_client(&server, &["--prompt", "go", "--cancel-on-tool-call"]).await;

    assert_eq!(
        card_statuses(&lines),
        vec![
            card("call_1", "pending", false),
            card("call_1", "failed", true)
        ]
    );
    assert_eq!(stop_reason(&lines), json!("cancelled"));
}

/// The `session/update`s, without command lists and tool-use labels (checked on their own).
fn updates(lines: &[Value]) -> Vec<Value> {
    lines
        .iter()
        .filter(|l| l["kind"] == "update")
        .map(|l| l["update"].clone())
        .filter(|u| u["sessionUpdate"] != "available_commands_update")
        .filter(|u| u["_meta"]["toolUseSummary"].is_null())
        .collect()
}

/// The tool-use label frames (`tool_call_update`s carrying only `_meta.toolUseSummary`).
fn labels(lines: &[Value]) -> Vec<Value> {
    lines
        .iter()
        .filter(|l| l["kind"] == "update" && !l["update"]["_meta"]["toolUseSummary"].is_null())
        .map(|l| l["update"].clone())
        .collect()
}

/// The label frame of a `read a.txt` batch of call `call_1`: the card restated, with the label.
fn read_a_label() -> Value {
    json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": "call_1",
        "title": "Read a.txt",
        "kind": "read",
        "status": "completed",
        "_meta": {"toolUseSummary": {"label": "Read a.txt", "toolCallIds": ["call_1"]}},
    })
}

/// Notifications other than `session/update`.
fn notifications(lines: &[Value]) -> Vec<&Value> {
    lines
        .iter()
        .filter(|l| l["kind"] == "notification")
        .collect()
}

/// The command names of every `available_commands_update`.
fn command_names(lines: &[Value]) -> Vec<Vec<String>> {
    lines
        .iter()
        .filter(|l| l["update"]["sessionUpdate"] == "available_commands_update")
        .map(|l| {
            l["update"]["availableCommands"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .collect()
}

/// The session files under `home`, with their contents.
fn recordings(home: &Path) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    let mut dirs = vec![home.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|x| x == "jsonl") {
                let text = std::fs::read_to_string(&path).unwrap();
                found.push((path, text));
            }
        }
    }
    found
}

#[tokio::test]
async fn the_official_client_loads_a_recorded_session_and_sees_it_replayed_with_its_summary() {
    require_client();
    let server = MockServer::start().await;
    server.push(read_a_call("call_1"));
    server.push(text_answer("Done."));
    server.push(text_answer("Again."));
    // A fast model turns summaries on; a single read is labelled locally, without a call.
    let mut settings = fast_retries();
    settings["fastModel"] = json!("mock-fast");
    let project = Project::new(&settings);
    let first = project
        .run(&server, &["--prompt", "read a.txt", "--wait-summary"], true)
        .await;
    let session = first.iter().find(|l| l["kind"] == "session").unwrap();
    let sid = session["sessionId"].as_str().unwrap().to_owned();
    // The label came in a standard frame; a client that did not opt in gets no notification.
    assert_eq!(labels(&first), vec![read_a_label()]);
    assert_eq!(notifications(&first), Vec::<&Value>::new());

    // This client opts in to the extension notification.
    let lines = project
        .run(
            &server,
            &[
                "--load",
                &sid,
                "--prompt",
                "and now?",
                "--summary-notification",
            ],
            true,
        )
        .await;
    let loaded = lines.iter().position(|l| l["kind"] == "loaded").unwrap();
    let (replay, live) = lines.split_at(loaded);
    let a_txt = project.dir.path().join("a.txt").display().to_string();
    assert_eq!(
        updates(replay),
        vec![
            json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "read a.txt"}}),
            json!({
                "sessionUpdate": "tool_call",
                "toolCallId": "call_1",
                "status": "in_progress",
                "title": "Read a.txt",
                "kind": "read",
                "content": [],
                "locations": [{"path": a_txt}],
                "rawInput": {"file_path": "a.txt"},
                "_meta": {"toolName": "read_file", "provenance": "builtin"},
            }),
            json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": "call_1",
                "status": "completed",
                "content": [{"type": "content", "content": {"type": "text", "text": "hello\n"}}],
                "rawOutput": {"output": "hello\n"},
                "_meta": {"toolName": "read_file", "provenance": "builtin"},
            }),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Done."}}),
        ]
    );
    assert_eq!(labels(replay), vec![read_a_label()]);
    // The library hands extension notifications to their handler asynchronously, so the
    // replayed one may be printed after the load's answer: look at the whole run.
    assert_eq!(
        notifications(&lines),
        vec![&json!({
            "kind": "notification",
            "method": "_corvid/tool_use_summary",
            "params": {"sessionId": sid, "summary": "Read a.txt", "precedingToolUseIds": ["call_1"]},
        })]
    );
    assert_eq!(
        lines[loaded]["response"]["modes"]["currentModeId"],
        json!("default")
    );
    assert_eq!(
        updates(live),
        vec![
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Again."}})
        ]
    );
    assert_eq!(
        command_names(live),
        vec![vec![
            "stats", "clear", "tasks", "compress", "undo", "rewind", "branch", "model", "init"
        ]]
    );
    assert_eq!(stop_reason(&lines), json!("end_turn"));

    // The resumed model request carries the whole earlier conversation, call paired with result.
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let messages = requests[2].body["messages"].as_array().unwrap();
    assert_eq!(
        messages[1..].to_vec(),
        vec![
            json!({"role": "user", "content": "read a.txt"}),
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "read_file", "arguments": "{\"file_path\":\"a.txt\"}"}}]}),
            json!({"role": "tool", "tool_call_id": "call_1", "content": "hello\n"}),
            json!({"role": "assistant", "content": "Done."}),
            json!({"role": "user", "content": "and now?"}),
        ]
    );

    // One recording, and the provider key is nowhere in it.
    let files = recordings(project.home.path());
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(
        !files[0].1.contains(API_KEY),
        "the API key leaked into {}",
        files[0].0.display()
    );
}

/// A complete tool call streamed in one chunk after its preparing chunk.
fn tool_call(id: &str, name: &str, args: &Value) -> ScriptedResponse {
    ScriptedResponse::sse(vec![
        tool_start(id, name),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": args.to_string()}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        Chunk::new("data: [DONE]\n\n"),
    ])
}

#[tokio::test]
async fn the_official_client_creates_a_new_file_through_its_fs_after_a_permission_request() {
    require_client();
    let server = MockServer::start().await;
    server.push(tool_call(
        "call_w",
        "write_file",
        &json!({"file_path": "b.txt", "content": "new\n"}),
    ));
    server.push(text_answer("Written."));
    let project = Project::new(&fast_retries());
    let lines = project
        .run(&server, &["--fs", "--prompt", "write b.txt"], false)
        .await;

    let b = project.dir.path().join("b.txt").display().to_string();
    // The client's read of the missing file failed with a plain -32603; corvid asked with a
    // diff from nothing, then wrote through the client.
    let steps: Vec<Value> = lines
        .iter()
        .filter(|l| l["kind"] == "fs" || l["kind"] == "permission")
        .map(|l| match l["kind"].as_str() {
            Some("fs") => json!([l["method"], l["path"]]),
            _ => json!(["permission", l["toolCall"]["content"]]),
        })
        .collect();
    // One read is enough: the second look before writing is answered from the first.
    assert_eq!(
        steps,
        vec![
            json!(["fs/read_text_file", b]),
            json!(["permission", [{"type": "diff", "path": b, "newText": "new\n"}]]),
            json!(["fs/write_text_file", b]),
        ]
    );
    assert_eq!(
        std::fs::read_to_string(project.dir.path().join("b.txt")).unwrap(),
        "new\n"
    );
    assert_eq!(
        card_statuses(&lines).last().unwrap(),
        &card("call_w", "completed", false)
    );
    assert_eq!(stop_reason(&lines), json!("end_turn"));
}

#[tokio::test]
async fn the_official_client_reloads_a_session_open_on_the_same_connection() {
    require_client();
    let server = MockServer::start().await;
    server.push(read_a_call("call_1"));
    server.push(text_answer("Done."));
    server.push(text_answer("Again."));
    let project = Project::new(&fast_retries());
    let lines = project
        .run(
            &server,
            &["--prompt", "read a.txt", "--reload", "--prompt", "and now?"],
            false,
        )
        .await;

    let reloaded = lines.iter().position(|l| l["kind"] == "reloaded").unwrap();
    let first_answer = lines.iter().position(|l| l["kind"] == "response").unwrap();
    let replay = updates(&lines[first_answer..reloaded]);
    assert_eq!(
        replay.first().unwrap(),
        &json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "read a.txt"}})
    );
    assert_eq!(
        replay.last().unwrap(),
        &json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Done."}})
    );
    assert_eq!(
        lines[reloaded]["response"]["modes"]["currentModeId"],
        json!("default")
    );
    let answers: Vec<&Value> = lines
        .iter()
        .filter(|l| l["kind"] == "response")
        .map(|l| &l["response"]["stopReason"])
        .collect();
    assert_eq!(answers, vec![&json!("end_turn"), &json!("end_turn")]);
    // The same agent went on with its history, and one recording holds the session.
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[2].body["messages"].as_array().unwrap().len(), 6);
    assert_eq!(recordings(project.home.path()).len(), 1);
}

#[tokio::test]
async fn the_official_client_gets_the_command_list_and_a_stats_answer() {
    require_client();
    let server = MockServer::start().await;
    let lines = run_client(&server, &["--prompt", "/stats"]).await;

    assert_eq!(
        command_names(&lines),
        vec![vec![
            "stats", "clear", "tasks", "compress", "undo", "rewind", "branch", "model", "init"
        ]]
    );
    assert_eq!(
        updates(&lines),
        vec![
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text",
            "text": "Session stats\nturns 0 · tool calls 0 (0 completed, 0 failed)\nno token usage reported yet"}})
        ]
    );
    assert_eq!(stop_reason(&lines), json!("end_turn"));
    assert_eq!(server.requests().len(), 0);
}

/// Reads `corvid --acp` output lines until one answers (has no `method`).
async fn next_answer(
    lines: &mut tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
) -> Value {
    loop {
        let line = tokio::time::timeout(std::time::Duration::from_secs(30), lines.next_line())
            .await
            .expect("corvid --acp went silent")
            .unwrap()
            .expect("corvid --acp closed stdout");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message.get("method").is_none() {
            return message;
        }
    }
}

#[tokio::test]
async fn invalid_utf8_on_acp_stdin_is_a_parse_error_for_the_real_binary() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let server = MockServer::start().await;
    let project = Project::new(&fast_retries());
    let mut child = tokio::process::Command::new(corvid_bin())
        .arg("--acp")
        .current_dir(project.dir.path())
        .env("CORVID_HOME", project.home.path())
        .env("OPENAI_BASE_URL", server.url())
        .env("OPENAI_API_KEY", API_KEY)
        .env("OPENAI_MODEL", "mock-model")
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n")
        .await
        .unwrap();
    assert_eq!(next_answer(&mut lines).await["id"], json!(0));

    stdin
        .write_all(
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":\"\xff\xfe\"}\n",
        )
        .await
        .unwrap();
    let error = next_answer(&mut lines).await;
    assert_eq!(
        (error["id"].clone(), error["error"]["code"].clone()),
        (Value::Null, json!(-32700))
    );

    // Still serving: a session can be created after the bad line.
    let new = json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": project.dir.path(), "mcpServers": []}});
    stdin
        .write_all(format!("{new}\n").as_bytes())
        .await
        .unwrap();
    let created = next_answer(&mut lines).await;
    assert_eq!(created["id"], json!(2));
    assert!(created["result"]["sessionId"].is_string(), "{created}");
    drop(stdin);
    assert!(child.wait().await.unwrap().success());
}

#[tokio::test]
async fn the_official_client_sees_a_task_card_with_its_childs_steps_and_marked_child_cards() {
    require_client();
    let server = MockServer::start().await;
    let task_args = json!({"description": "Read the notes", "prompt": "Read a.txt and report.",
                           "subagent_type": "explore"})
    .to_string();
    // Parent (the task call), child (a read, then its report), parent (the answer).
    server.push(ScriptedResponse::sse(vec![
        tool_start("task_1", "task"),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": task_args}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        Chunk::new("data: [DONE]\n\n"),
    ]));
    server.push(read_a_call("read_1"));
    server.push(text_answer("a.txt says hello."));
    server.push(text_answer("Your file says hello."));
    let lines = run_client(&server, &["--prompt", "what does a.txt say?"]).await;
    assert_eq!(stop_reason(&lines), json!("end_turn"));

    let updates: Vec<&Value> = lines
        .iter()
        .filter(|l| l["kind"] == "update")
        .map(|l| &l["update"])
        .collect();
    // The child's read shows as a card of its own, marked with the task call.
    let child = updates
        .iter()
        .find(|u| u["toolCallId"] == "task_1/read_1")
        .expect("the child's card");
    assert_eq!(
        child["_meta"]["subagent"],
        json!({"parentToolCallId": "task_1"})
    );
    // The task card lists the child's step while it runs, and ends completed with its report.
    assert!(
        updates.iter().any(|u| u["toolCallId"] == "task_1"
            && u["content"][0]["content"]["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("↳ "))),
        "{updates:#?}"
    );
    let last_task = updates
        .iter()
        .rev()
        .find(|u| u["toolCallId"] == "task_1")
        .unwrap();
    assert_eq!(last_task["status"], json!("completed"));
    assert!(
        last_task["content"]
            .to_string()
            .contains("a.txt says hello."),
        "{last_task}"
    );
    // The child's text is its report, never the editor's agent message.
    let said: String = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(said, "Your file says hello.");
}

#[tokio::test]
async fn the_official_client_is_asked_about_a_subagents_write_under_the_tasks_label() {
    require_client();
    let server = MockServer::start().await;
    // Parent (a `general` task), child (a write, then its report), parent (the answer).
    server.push(tool_call(
        "task_1",
        "task",
        &json!({"description": "Write the notes", "prompt": "Write b.txt.",
                "subagent_type": "general"}),
    ));
    server.push(tool_call(
        "w_1",
        "write_file",
        &json!({"file_path": "b.txt", "content": "new\n"}),
    ));
    server.push(text_answer("Wrote b.txt."));
    server.push(text_answer("The subagent wrote b.txt."));
    let project = Project::new(&fast_retries());
    let lines = project
        .run(&server, &["--prompt", "write b.txt"], false)
        .await;
    assert_eq!(stop_reason(&lines), json!("end_turn"));

    let asked: Vec<(Value, Value)> = lines
        .iter()
        .filter(|l| l["kind"] == "permission")
        .map(|l| {
            (
                l["toolCall"]["toolCallId"].clone(),
                l["toolCall"]["title"].clone(),
            )
        })
        .collect();
    let [(id, title)] = asked.as_slice() else {
        panic!("one permission request expected: {asked:?}")
    };
    assert_eq!(id, &json!("task_1/w_1"));
    let title = title.as_str().unwrap_or_default();
    assert!(title.starts_with("Write the notes: "), "{title}");
    assert_eq!(
        std::fs::read_to_string(project.dir.path().join("b.txt")).unwrap(),
        "new\n"
    );
}
