//! A `task` call end to end: the real binary, headless stream-json, a loopback model. The
//! child runs with a fresh history, its call shows tagged with the task's id, and its report
//! comes back to the parent as the task's result.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Sandbox, assert_success, chunk, json_lines, run, text_turn, usage_chunk};
use corvid_testkit::{MockServer, ScriptedResponse, sse_event};
use serde_json::{Value, json};

/// A turn that makes one call `id` of `name` with `args`.
fn call_turn(id: &str, name: &str, args: Value) -> ScriptedResponse {
    ScriptedResponse::sse(vec![
        chunk(
            json!({"tool_calls": [{"index": 0, "id": id, "type": "function",
                   "function": {"name": name, "arguments": args.to_string()}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        usage_chunk(),
        sse_event("[DONE]"),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_call_runs_a_child_whose_steps_are_tagged_and_whose_report_is_the_result() {
    let sb = Sandbox::new();
    std::fs::write(sb.project.path().join("notes.txt"), "the answer is 42\n").unwrap();
    let server = MockServer::start().await;
    // Parent, child, child, parent: one task, so the requests come in this order.
    server.push(call_turn(
        "task_1",
        "task",
        json!({"description": "Find the answer", "prompt": "Read notes.txt and report.",
               "subagent_type": "explore"}),
    ));
    server.push(call_turn(
        "read_1",
        "read_file",
        json!({"file_path": "notes.txt"}),
    ));
    server.push(text_turn("The notes say the answer is 42."));
    server.push(text_turn("Your notes say 42."));
    let mut cmd = sb.against(
        &server,
        "sk-test",
        &[
            "-p",
            "what do my notes say?",
            "--output-format",
            "stream-json",
        ],
    );
    cmd.env("OPENAI_MODEL", "mock-model");
    let out = run(cmd).await;
    assert_success(&out);
    let msgs = json_lines(&out);

    // The child's read is tagged with the task call; the parent's own messages are not.
    let child_use = msgs
        .iter()
        .find(|m| m["message"]["content"][0]["name"] == "read_file")
        .expect("the child's read_file call in the stream");
    assert_eq!(child_use["parent_tool_use_id"], "task_1");
    let task_use = msgs
        .iter()
        .find(|m| m["message"]["content"][0]["name"] == "task")
        .expect("the task call in the stream");
    assert!(
        task_use
            .get("parent_tool_use_id")
            .is_none_or(Value::is_null)
    );
    assert_eq!(msgs.last().unwrap()["result"], "Your notes say 42.");

    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    // The child starts fresh: its system prompt and only its prompt, no `task` tool.
    let child: Vec<&Value> = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .collect();
    assert_eq!(child.len(), 1, "{child:?}");
    assert!(
        child[0]["content"]
            .to_string()
            .contains("Read notes.txt and report.")
    );
    let child_tools: Vec<&str> = requests[1].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(!child_tools.contains(&"task"), "{child_tools:?}");
    assert!(
        !child_tools.contains(&"write_file"),
        "explore is read-only: {child_tools:?}"
    );
    // The parent's next request pairs the child's report with the task call.
    let result = requests[3].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "task_1")
        .expect("the task result in the parent's next request");
    assert!(
        result["content"].to_string().contains("answer is 42"),
        "{result}"
    );

    // The recording keeps the child's transcript apart, and `sessions show` displays it
    // under the task call.
    let id = msgs.last().unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let show = run(sb.corvid(&["sessions", "show", &id])).await;
    assert_success(&show);
    let shown = common::stdout(&show);
    assert!(
        shown.contains("  │ > Read notes.txt and report."),
        "{shown}"
    );
    assert!(
        shown.contains("  │ The notes say the answer is 42."),
        "{shown}"
    );
}
