//! Sessions over ACP (SPEC §9): every session is recorded, and `session/load` in a new
//! connection replays its transcript as frames before answering, then goes on with the full
//! history. In-process, over a duplex pipe, with a scripted model and a temporary store.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::Arc;

use agent_client_protocol::ErrorCode;
use common::*;
use corvid_core::session::{Record, SessionStore};
use corvid_protocol::{ApprovalMode, Message, Part, Role, ToolCall, ToolResult};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// What `read_file a.txt` returned to the model (and so what the recording holds).
const READ_A_OUTPUT: &str = "hello\n";

/// A client of a server that records its sessions under `home` and labels tool batches.
async fn recording_client(provider: Arc<ScriptedProvider>, home: &Path) -> TestClient {
    let factory = Arc::new(TestFactory {
        provider,
        summaries: true,
        mode: ApprovalMode::Default,
        store: Some(SessionStore::new(home)),
        home: Some(home.to_path_buf()),
        real: None,
    });
    TestClient::start(factory, fs_caps(false, false)).await
}

/// Records "read a" (one `read_file` call, its summary, then "Done.") in a first connection;
/// returns the session id once the summary arrived, so the recording is complete.
async fn record_read_task(home: &Path, dir: &Path) -> String {
    let provider = ScriptedProvider::new(vec![read_a_script("call_1"), answer("Done.")]);
    let mut client = recording_client(provider, home).await;
    let sid = client.new_session(dir).await;
    client.prompt(&sid, "read a").await.unwrap().unwrap();
    client.until_label().await;
    client.close().await;
    sid
}

/// The `session/update`s that replay [`record_read_task`].
fn replayed_read_task(dir: &Path) -> Vec<Value> {
    vec![
        json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "read a"}}),
        replayed_read(dir, "call_1", "a.txt"),
        replayed_read_result("call_1", "completed", READ_A_OUTPUT),
        message("Done."),
    ]
}

/// The label of the recorded `read a.txt` batch, as `labels()` lists it.
fn read_a_label() -> Vec<(String, Value)> {
    vec![(
        "call_1".into(),
        json!({"label": "Read a.txt", "toolCallIds": ["call_1"]}),
    )]
}

/// The history the model must receive with a prompt that follows the replay.
fn history_then(prompt: &str) -> Vec<Message> {
    vec![
        Message::user_text("read a"),
        Message {
            role: Role::Assistant,
            parts: vec![Part::ToolCall(ToolCall {
                call_id: "call_1".into(),
                name: "read_file".into(),
                args: json!({"file_path": "a.txt"}),
            })],
        },
        Message {
            role: Role::User,
            parts: vec![Part::ToolResult(ToolResult {
                call_id: "call_1".into(),
                name: "read_file".into(),
                output: READ_A_OUTPUT.into(),
                is_error: false,
                images: Vec::new(),
            })],
        },
        Message {
            role: Role::Assistant,
            parts: vec![Part::Text {
                text: "Done.".into(),
            }],
        },
        Message::user_text(prompt),
    ]
}

/// Index in the log of the first message satisfying `pred`.
fn position(client: &TestClient, pred: impl Fn(&Value) -> bool) -> usize {
    client.seen.iter().position(pred).unwrap()
}

#[tokio::test]
async fn a_loaded_session_replays_its_transcript_and_goes_on_with_the_full_history() {
    let home = tempfile::tempdir().unwrap();
    let dir = project();
    let sid = record_read_task(home.path(), dir.path()).await;

    let provider = ScriptedProvider::new(vec![answer("Again.")]);
    let mut client = recording_client(provider.clone(), home.path()).await;
    let response = client.load_released(&sid, dir.path()).await.unwrap();
    client.drain();

    assert_eq!(client.updates(), replayed_read_task(dir.path()));
    assert_eq!(client.labels(), read_a_label());
    // The label follows its batch, as it did live.
    assert!(
        position(&client, |m| m["params"]["update"]["status"] == "completed")
            < position(&client, |m| {
                !m["params"]["update"]["_meta"]["toolUseSummary"].is_null()
            })
    );
    assert_eq!(
        serde_json::to_value(&response).unwrap()["modes"]["currentModeId"],
        json!("default")
    );

    let replayed = client.seen.len();
    let answer = client.prompt(&sid, "and now?").await.unwrap().unwrap();
    client.drain();
    assert_eq!(
        answer.stop_reason,
        agent_client_protocol::v1::schema::StopReason::EndTurn
    );
    // A live prompt is not echoed back; only the answer streams. The command list follows the
    // load's answer through the crate and may still be on its way when the replay was drained.
    let after_replay: Vec<Value> = client.seen[replayed..]
        .iter()
        .filter(|m| m["params"]["update"]["sessionUpdate"] != "available_commands_update")
        .cloned()
        .collect();
    assert_eq!(
        after_replay,
        vec![
            json!({"method": "session/update", "params": {"sessionId": sid, "update": message("Again.")}})
        ]
    );
    assert_eq!(client.command_lists().len(), 1);
    assert_eq!(provider.requests()[0].messages, history_then("and now?"));
    let store = SessionStore::new(home.path());
    let reloaded = store.load(dir.path(), &sid).unwrap();
    assert_eq!(reloaded.history().len(), 6);
    assert_eq!(reloaded.warnings, Vec::<String>::new());
}

#[tokio::test]
async fn loading_an_unknown_session_is_an_error_naming_it() {
    let home = tempfile::tempdir().unwrap();
    let dir = project();
    let provider = ScriptedProvider::new(vec![]);
    let client = recording_client(provider, home.path()).await;
    let error = client
        .load_session("no-such-session", dir.path())
        .await
        .unwrap_err();
    assert_eq!(
        (error.code, error.message),
        (
            ErrorCode::RESOURCE_NOT_FOUND,
            format!(
                "cannot load session `no-such-session`: no session no-such-session for {}; \
                 `corvid sessions list` shows the recorded ones",
                dir.path().display()
            )
        )
    );
}

#[tokio::test]
async fn a_path_shaped_session_id_is_refused_without_opening_the_file() {
    let home = tempfile::tempdir().unwrap();
    let dir = project();
    // A file outside the store, named like a session file, with a secret on its first line.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(
        outside.path().join("secret.jsonl"),
        "{\"record\": \"hunter2-secret-line\"}\n",
    )
    .unwrap();
    let client = recording_client(ScriptedProvider::new(vec![]), home.path()).await;
    let absolute = outside.path().join("secret").display().to_string();
    let relative = format!("../../..{absolute}");
    for id in [absolute.as_str(), relative.as_str()] {
        let error = client.load_session(id, dir.path()).await.unwrap_err();
        assert_eq!(
            error.code,
            ErrorCode::INVALID_PARAMS,
            "{id}: {}",
            error.message
        );
        assert!(
            error.message.starts_with("cannot load session: ")
                && error.message.contains("is not a session id")
                && !error.message.contains("hunter2")
                && !error.message.contains("corrupt"),
            "{}",
            error.message
        );
    }
}

#[tokio::test]
async fn a_recording_torn_mid_line_loads_replays_and_resumes() {
    let home = tempfile::tempdir().unwrap();
    let dir = project();
    let sid = record_read_task(home.path(), dir.path()).await;
    // A crash while writing the next record leaves half a line at the end of the file.
    let store = SessionStore::new(home.path());
    let path = store.load(dir.path(), &sid).unwrap().path;
    let record = serde_json::to_string(&Record::Message {
        message: Message::user_text("this prompt never finished"),
    })
    .unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(&record.as_bytes()[..record.len() / 2]);
    std::fs::write(&path, bytes).unwrap();
    assert_eq!(store.load(dir.path(), &sid).unwrap().warnings.len(), 1);

    let provider = ScriptedProvider::new(vec![answer("Again.")]);
    let mut client = recording_client(provider.clone(), home.path()).await;
    client.load_released(&sid, dir.path()).await.unwrap();
    client.drain();
    assert_eq!(client.updates(), replayed_read_task(dir.path()));

    client.prompt(&sid, "and now?").await.unwrap().unwrap();
    assert_eq!(provider.requests()[0].messages, history_then("and now?"));
    // The torn tail was cut off before the new records were appended.
    let reloaded = store.load(dir.path(), &sid).unwrap();
    assert_eq!(
        (reloaded.history(), reloaded.warnings),
        (
            {
                let mut history = history_then("and now?");
                history.push(Message {
                    role: Role::Assistant,
                    parts: vec![Part::Text {
                        text: "Again.".into(),
                    }],
                });
                history
            },
            Vec::<String>::new()
        )
    );
}

#[tokio::test]
async fn loading_a_session_open_on_this_connection_replays_it_and_keeps_its_agent() {
    let home = tempfile::tempdir().unwrap();
    let dir = project();
    let provider = ScriptedProvider::new(vec![
        read_a_script("call_1"),
        answer("Done."),
        answer("Again."),
    ]);
    let mut client = recording_client(provider.clone(), home.path()).await;
    let sid = client.new_session(dir.path()).await;
    client.prompt(&sid, "read a").await.unwrap().unwrap();
    client.until_label().await;
    client
        .cx
        .send_request(
            agent_client_protocol::v1::schema::SetSessionModeRequest::new(sid.clone(), "auto-edit"),
        )
        .block_task()
        .await
        .unwrap();
    client.drain();
    let live = client.seen.len();

    // The editor's UI reconnected and asks for the session again.
    let response = client.load_session(&sid, dir.path()).await.unwrap();
    client.drain();
    client.seen.drain(..live);
    assert_eq!(client.updates(), replayed_read_task(dir.path()));
    assert_eq!(client.labels(), read_a_label());
    assert_eq!(client.command_lists(), vec![(sid.clone(), commands())]);
    assert_eq!(
        serde_json::to_value(&response).unwrap()["modes"]["currentModeId"],
        json!("auto-edit")
    );

    // The same agent goes on: its history is in memory, and one recording grows.
    client.prompt(&sid, "and now?").await.unwrap().unwrap();
    assert_eq!(provider.requests()[2].messages, history_then("and now?"));
    let store = SessionStore::new(home.path());
    assert_eq!(store.list(dir.path()).unwrap().len(), 1);
    assert_eq!(store.load(dir.path(), &sid).unwrap().history().len(), 6);
}

#[tokio::test]
async fn thoughts_plans_and_failed_calls_replay_as_they_ended() {
    let home = tempfile::tempdir().unwrap();
    let dir = project();
    let todos =
        json!({"todos": [{"id": "1", "content": "Read the notes", "status": "in_progress"}]});
    let provider = ScriptedProvider::new(vec![
        vec![
            Step::Event(corvid_protocol::StreamEvent::Thought {
                text: "notes first".into(),
            }),
            call("call_t", "todo_write", todos),
            call("call_r", "read_file", json!({"file_path": "notes.txt"})),
            finish(corvid_protocol::FinishReason::ToolCalls),
        ],
        answer("No notes."),
    ]);
    let mut client = recording_client(provider, home.path()).await;
    let sid = client.new_session(dir.path()).await;
    client.prompt(&sid, "plan").await.unwrap().unwrap();
    client.drain();
    let live_failure = client.cards().last().unwrap().clone();
    client.close().await;

    let provider = ScriptedProvider::new(vec![]);
    let mut client = recording_client(provider, home.path()).await;
    client.load_released(&sid, dir.path()).await.unwrap();
    client.drain();
    let error_text = live_failure["content"][0]["content"]["text"].clone();
    assert_eq!(
        client.updates(),
        vec![
            json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "plan"}}),
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "notes first"}}),
            json!({"sessionUpdate": "plan", "entries": [
                {"content": "Read the notes", "priority": "medium", "status": "in_progress"},
            ]}),
            replayed_read(dir.path(), "call_r", "notes.txt"),
            replayed_read_result("call_r", "failed", error_text),
            message("No notes."),
        ]
    );
    assert_eq!(live_failure["status"], json!("failed"));
    // Nothing succeeded, so there was no summary to replay.
    assert_eq!(client.labels(), vec![]);
}

#[tokio::test]
async fn a_session_that_cannot_be_recorded_still_runs() {
    // The store's root is a file, so no session folder can be created under it.
    let home = tempfile::tempdir().unwrap();
    let blocked = home.path().join("not-a-dir");
    std::fs::write(&blocked, "").unwrap();
    let dir = project();
    let provider = ScriptedProvider::new(vec![answer("Still fine.")]);
    let mut client = recording_client(provider, &blocked).await;
    let sid = client.new_session(dir.path()).await;
    client.prompt(&sid, "hi").await.unwrap().unwrap();
    client.drain();
    assert_eq!(client.updates(), vec![message("Still fine.")]);
}

#[tokio::test]
async fn a_mode_set_over_acp_is_restored_by_session_load_in_a_new_connection() {
    let home = tempfile::tempdir().unwrap();
    let dir = project();
    let first = recording_client(ScriptedProvider::new(vec![answer("Hi.")]), home.path()).await;
    let sid = first.new_session(dir.path()).await;
    first
        .cx
        .send_request(
            agent_client_protocol::v1::schema::SetSessionModeRequest::new(sid.clone(), "yolo"),
        )
        .block_task()
        .await
        .unwrap();
    first.prompt(&sid, "hi").await.unwrap().unwrap();
    first.close().await;

    let provider = ScriptedProvider::new(vec![write_b_script("call_w"), answer("Written.")]);
    let mut client = recording_client(provider, home.path()).await;
    let response = client.load_released(&sid, dir.path()).await.unwrap();
    assert_eq!(
        serde_json::to_value(&response).unwrap()["modes"]["currentModeId"],
        json!("yolo")
    );
    // And the agent decides in it: the write runs without asking.
    client.prompt(&sid, "write b").await.unwrap().unwrap();
    client.drain();
    assert_eq!(client.permission_requests().len(), 0);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("b.txt")).unwrap(),
        "new\n"
    );
}
