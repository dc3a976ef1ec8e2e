//! `corvid debug replay-sse` end to end: the real binary on recorded bodies (SPEC §1.3).

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::process::{Command, Output};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn fixture(name: &str) -> String {
    format!("{}/../testdata/sse/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn replay(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_corvid"))
        .args(["debug", "replay-sse"])
        .args(args)
        .output()
        .expect("run corvid")
}

/// Runs the command, checks it succeeded, and parses every stdout line as JSON.
fn lines(args: &[&str]) -> Vec<Value> {
    let out = replay(args);
    assert_eq!(
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned()
        ),
        (Some(0), String::new())
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_name_arriving_after_the_id_prepares_at_the_event_that_completes_it() {
    let got = lines(&[
        "--protocol",
        "openai-chat",
        &fixture("generic-openai-compat/name_in_later_chunk_than_id.sse"),
    ]);
    assert_eq!(
        got,
        vec![
            json!({"at": 1, "type": "tool_preparing", "call_id": "call_123", "tool_name": "bash"}),
            json!({"at": 3, "type": "tool_call", "call_id": "call_123", "name": "bash", "args": {"command": "ls -la"}}),
            json!({"at": 3, "type": "finished", "reason": "tool_calls"}),
        ]
    );
}

#[test]
fn an_anthropic_stream_with_an_empty_input_yields_an_empty_object() {
    let got = lines(&[
        "--protocol",
        "anthropic-messages",
        &fixture("anthropic/empty_input_tool.sse"),
    ]);
    let usage = |at: u64, output: u64| {
        json!({"at": at, "type": "usage", "input_tokens": 3154, "output_tokens": output,
               "total_tokens": 3154 + output, "cached_input_tokens": 0, "reasoning_tokens": 0})
    };
    let id = "toolu_01Pi8emvHyK6qoLUVjcnmDCr";
    assert_eq!(
        got,
        vec![
            usage(0, 3),
            json!({"at": 3, "type": "text", "text": "I'll call the hello_world tool."}),
            json!({"at": 5, "type": "tool_preparing", "call_id": id, "tool_name": "hello_world"}),
            usage(8, 39),
            json!({"at": 9, "type": "tool_call", "call_id": id, "name": "hello_world", "args": {}}),
            json!({"at": 9, "type": "finished", "reason": "tool_calls"}),
        ]
    );
}

#[test]
fn a_body_cut_mid_event_ends_with_a_truncation_error_at_null() {
    let got = lines(&[
        "--protocol",
        "openai-chat",
        &fixture("errors/connection_closed_before_done.sse"),
    ]);
    assert_eq!(
        got,
        vec![
            json!({"at": 0, "type": "tool_preparing", "call_id": "call_7kE4IjtnwXcGbX6hDM7xFu8T", "tool_name": "weather"}),
            json!({"at": null, "type": "error", "kind": "stream_truncated", "retryable": true,
                   "message": "the connection closed in the middle of an event, before the response finished"}),
        ]
    );
}

#[test]
fn an_error_status_classifies_the_body_as_an_http_error() {
    let got = lines(&[
        "--protocol",
        "anthropic-messages",
        "--status",
        "529",
        &fixture("errors/anthropic_529_overloaded.sse"),
    ]);
    assert_eq!(
        got,
        vec![
            json!({"at": null, "type": "error", "kind": "overloaded", "retryable": true, "message": "Overloaded"})
        ]
    );
}

#[test]
fn an_unreadable_file_exits_2() {
    let out = replay(&["--protocol", "openai-chat", "/nonexistent/body.sse"]);
    assert_eq!((out.status.code(), out.stdout.is_empty()), (Some(2), true));
}

#[test]
fn a_responses_stream_prepares_at_the_added_item_and_keeps_the_reasoning_item() {
    let got = lines(&[
        "--protocol",
        "openai-responses",
        &fixture("openai-responses/parallel_function_calls.sse"),
    ]);
    let types: Vec<(u64, &str)> = got
        .iter()
        .map(|l| (l["at"].as_u64().unwrap(), l["type"].as_str().unwrap()))
        .collect();
    assert_eq!(
        types,
        vec![
            (4, "thought"),
            (7, "thought"),
            (8, "thought"),
            (11, "thought_data"),
            (12, "tool_preparing"),
            (17, "tool_preparing"),
            (22, "usage"),
            (22, "tool_call"),
            (22, "tool_call"),
            (22, "finished"),
        ]
    );
    assert_eq!(got[3]["data"]["type"], "reasoning");
    assert!(got[3]["data"].get("id").is_none());
    assert_eq!(
        got[8],
        json!({"at": 22, "type": "tool_call", "call_id": "call_B2", "name": "grep",
               "args": {"pattern": "fn main", "path": "src"}})
    );
}

#[test]
fn a_responses_rate_limit_failure_is_a_retryable_error_at_its_event() {
    let got = lines(&[
        "--protocol",
        "openai-responses",
        &fixture("openai-responses/failed_rate_limit.sse"),
    ]);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["at"], 2);
    assert_eq!(got[0]["kind"], "rate_limited");
    assert_eq!(got[0]["retryable"], true);
}

#[test]
fn a_gemini_stream_prepares_each_call_at_its_chunk_and_releases_them_at_stop() {
    let got = lines(&[
        "--protocol",
        "gemini",
        &fixture("gemini-api/parallel_calls.sse"),
    ]);
    let types: Vec<(u64, &str)> = got
        .iter()
        .map(|l| (l["at"].as_u64().unwrap(), l["type"].as_str().unwrap()))
        .collect();
    assert_eq!(
        types,
        vec![
            (0, "text"),
            (0, "thought_data"),
            (0, "usage"),
            (1, "tool_preparing"),
            (1, "thought_data"),
            (1, "tool_preparing"),
            (1, "usage"),
            (2, "tool_preparing"),
            (2, "usage"),
            (2, "tool_call"),
            (2, "tool_call"),
            (2, "tool_call"),
            (2, "finished"),
        ]
    );
    assert_eq!(got[4]["data"]["thoughtSignature"], "CkQB0e2KbzQ=");
    assert_eq!(got[12]["reason"], "tool_calls");
}

#[test]
fn an_anthropic_server_search_replays_as_hosted_blocks_and_no_tool_call() {
    let got = lines(&[
        "--protocol",
        "anthropic-messages",
        &fixture("anthropic/server_web_search.sse"),
    ]);
    let types: Vec<&str> = got.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert!(!types.contains(&"tool_call"), "{got:#?}");
    assert!(!types.contains(&"tool_preparing"), "{got:#?}");
    let hosted: Vec<&Value> = got.iter().filter(|l| l["type"] == "hosted").collect();
    assert_eq!(hosted.len(), 2, "{got:#?}");
    assert_eq!(
        (
            hosted[0]["at"].clone(),
            hosted[0]["step"].clone(),
            hosted[0]["title"].clone()
        ),
        (
            json!(8),
            json!("call"),
            json!("Search \"tokio latest release\"")
        )
    );
    assert_eq!(
        hosted[0]["data"],
        json!({"type": "server_tool_use", "id": "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE",
               "name": "web_search", "input": {"query": "tokio latest release"}})
    );
    assert_eq!(
        (
            hosted[1]["at"].clone(),
            hosted[1]["step"].clone(),
            hosted[1]["is_error"].clone()
        ),
        (json!(9), json!("result"), json!(false))
    );
    assert_eq!(
        hosted[1]["data"]["content"][1]["url"],
        "https://crates.io/crates/tokio"
    );
    assert_eq!(got.last().unwrap()["reason"], "stop");
}
