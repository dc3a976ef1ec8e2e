//! Expected frames and small fixtures shared by the in-process tests.

use std::path::Path;

use corvid_protocol::FinishReason;
use serde_json::{Value, json};

use super::{Step, call, finish, preparing, usage};

/// A temporary project holding `a.txt` (`hello`).
pub fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
    dir
}

/// `rel` inside `dir`, as the absolute path string frames carry.
pub fn abs(dir: &Path, rel: &str) -> String {
    dir.join(rel).display().to_string()
}

/// The preparing card of SPEC §6.
pub fn preparing_frame(id: &str, tool: &str, title: &str, kind: &str) -> Value {
    json!({
        "sessionUpdate": "tool_call",
        "toolCallId": id,
        "status": "pending",
        "title": title,
        "kind": kind,
        "content": [],
        "locations": [],
        "rawInput": {},
        "_meta": {"toolName": tool, "provenance": "builtin", "phase": "preparing"},
    })
}

/// The discarded update of SPEC §6, its title saying what happened to the card `shown`.
pub fn discarded_frame(id: &str, tool: &str, title: &str) -> Value {
    json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": id,
        "status": "failed",
        "title": title,
        "content": [],
        "_meta": {
            "toolName": tool,
            "provenance": "builtin",
            "phase": "preparing",
            "preparationDiscarded": true,
        },
    })
}

/// The `in_progress` update of `read_file a.txt`.
pub fn read_a_in_progress(dir: &Path, id: &str) -> Value {
    json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": id,
        "status": "in_progress",
        "title": "Read a.txt",
        "kind": "read",
        "locations": [{"path": abs(dir, "a.txt")}],
        "rawInput": {"file_path": "a.txt"},
        "_meta": {"toolName": "read_file", "provenance": "builtin"},
    })
}

/// An `agent_message_chunk` of text.
pub fn message(text: &str) -> Value {
    json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})
}

/// A model turn calling `read_file a.txt` with id `id`.
pub fn read_a_script(id: &str) -> Vec<Step> {
    vec![
        preparing(id, "read_file"),
        call(id, "read_file", json!({"file_path": "a.txt"})),
        usage(10, 5),
        finish(FinishReason::ToolCalls),
    ]
}

/// The `write_file b.txt` call (content `new\n`) with id `id`.
pub fn write_b(id: &str) -> Step {
    call(
        id,
        "write_file",
        json!({"file_path": "b.txt", "content": "new\n"}),
    )
}

/// A model turn streaming, then calling `write_file b.txt` with id `id`.
pub fn write_b_script(id: &str) -> Vec<Step> {
    vec![
        preparing(id, "write_file"),
        write_b(id),
        finish(FinishReason::ToolCalls),
    ]
}

/// The `tool_call` a replay sends for a `read_file` of `file` (relative to `dir`).
pub fn replayed_read(dir: &Path, id: &str, file: &str) -> Value {
    json!({
        "sessionUpdate": "tool_call",
        "toolCallId": id,
        "status": "in_progress",
        "title": format!("Read {file}"),
        "kind": "read",
        "content": [],
        "locations": [{"path": abs(dir, file)}],
        "rawInput": {"file_path": file},
        "_meta": {"toolName": "read_file", "provenance": "builtin"},
    })
}

/// The `tool_call_update` a replay sends for a `read_file` that ended in `status` with `output`.
pub fn replayed_read_result(id: &str, status: &str, output: impl Into<Value>) -> Value {
    let output = output.into();
    json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": id,
        "status": status,
        "content": [{"type": "content", "content": {"type": "text", "text": output}}],
        "rawOutput": {"output": output},
        "_meta": {"toolName": "read_file", "provenance": "builtin"},
    })
}

/// The names `available_commands_update` lists for every session.
pub fn commands() -> Vec<String> {
    vec![
        "stats".into(),
        "clear".into(),
        "tasks".into(),
        "compress".into(),
        "undo".into(),
        "rewind".into(),
        "branch".into(),
        "model".into(),
    ]
}
