//! Headless mode against the built-in demo model: every output format, offline (SPEC §10).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;

use common::{Sandbox, assert_success, block_kinds, json_lines, kind, run, stderr, stdout};
use pretty_assertions::assert_eq;
use serde_json::Value;

#[tokio::test]
async fn text_output_prints_only_the_final_answer_on_stdout() {
    let sb = Sandbox::new();
    let out = sb.look_around(&[]).await;
    let text = stdout(&out);
    assert!(text.starts_with("## What I found\n"), "{text}");
    assert!(text.contains("`README.md`, `main.rs`"), "{text}");
    assert!(
        text.contains("`README.md` begins with: _Sample project_"),
        "{text}"
    );
    assert!(
        !text.contains("I'll start by looking around"),
        "only the last turn: {text}"
    );
    // `ls -la` only reads inside the workspace, so the default mode runs it without asking
    // (headless would otherwise refuse it for want of an approval).
    let err = stderr(&out);
    assert!(err.contains("● Ran ls -la"), "{err}");
    assert!(!err.contains("refused"), "{err}");
}

#[tokio::test]
async fn json_output_is_one_result_object_with_the_documented_fields() {
    let sb = Sandbox::new();
    let out = sb.look_around(&["--output-format", "json"]).await;
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1, "{}", stdout(&out));
    let result = &lines[0];
    let keys: BTreeSet<&str> = result
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let expected: BTreeSet<&str> = [
        "type",
        "subtype",
        "result",
        "session_id",
        "stop_reason",
        "num_turns",
        "duration_ms",
        "usage",
        "usage_by_prompt",
        "tool_use_summaries",
        "is_error",
        "context",
    ]
    .into_iter()
    .collect();
    assert_eq!(keys, expected);
    assert_eq!(result["type"], "result");
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["stop_reason"], "end_turn");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["num_turns"], 4);
    assert!(
        result["result"]
            .as_str()
            .unwrap()
            .starts_with("## What I found")
    );
    assert!(result["usage"]["total_tokens"].as_u64().unwrap() > 0);
    assert!(
        result["usage_by_prompt"]["main"]["output_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(
        uuid_like(result["session_id"].as_str().unwrap()),
        true,
        "{}",
        result["session_id"]
    );
}

#[tokio::test]
async fn stream_json_pairs_every_tool_use_with_its_result_and_ends_with_the_result() {
    let sb = Sandbox::new();
    let out = sb
        .look_around(&["-y", "--output-format", "stream-json"])
        .await;
    let msgs = json_lines(&out);
    assert_eq!(kind(&msgs[0]), "system/init");
    assert_eq!(msgs[0]["model"], "corvid-demo");
    assert_eq!(msgs[0]["permission_mode"], "yolo");
    assert_eq!(kind(msgs.last().unwrap()), "result");
    let session = msgs[0]["session_id"].clone();
    for m in &msgs {
        assert_eq!(m["session_id"], session, "{m}");
    }

    // Message kinds without summaries (their arrival time is free); the calls of one batch
    // run concurrently, so a batch's uses and results collapse into one `tools` entry.
    let mut shape: Vec<String> = Vec::new();
    for m in &msgs {
        let k = match kind(m).as_str() {
            "assistant" | "user" if block_kinds(m) != ["text"] => "tools".to_owned(),
            "assistant" => "assistant:text".to_owned(),
            "tool_use_summary" => continue,
            other => other.to_owned(),
        };
        if k != "tools" || shape.last().map(String::as_str) != Some("tools") {
            shape.push(k);
        }
    }
    assert_eq!(
        shape,
        vec![
            "system/init",
            "assistant:text",
            "tools",
            "assistant:text",
            "plan",
            "assistant:text",
            "tools",
            "assistant:text",
            "result",
        ]
    );
    // Every result comes after its use.
    for (i, m) in msgs.iter().enumerate() {
        for b in m["message"]["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_result" {
                let used_at = msgs
                    .iter()
                    .position(|u| u["message"]["content"][0]["id"] == b["tool_use_id"])
                    .expect("a tool_use for every tool_result");
                assert!(used_at < i);
            }
        }
    }

    let uses: Vec<&Value> = blocks(&msgs, "tool_use");
    let results: Vec<&Value> = blocks(&msgs, "tool_result");
    let use_ids: Vec<&str> = uses.iter().map(|b| b["id"].as_str().unwrap()).collect();
    let mut result_ids: Vec<&str> = results
        .iter()
        .map(|b| b["tool_use_id"].as_str().unwrap())
        .collect();
    let mut sorted_use_ids = use_ids.clone();
    sorted_use_ids.sort_unstable();
    result_ids.sort_unstable();
    assert_eq!(sorted_use_ids, result_ids);
    // The first batch's two reads run concurrently, in either order.
    let mut names: Vec<&str> = uses.iter().map(|b| b["name"].as_str().unwrap()).collect();
    names[..2].sort_unstable();
    assert_eq!(
        names,
        vec!["list_directory", "read_file", "run_shell_command"]
    );
    assert!(
        results.iter().all(|r| r["is_error"] == false),
        "{results:?}"
    );

    // The shell batch is the last one, so its summary can never be stale: it must be there,
    // before the result, naming the shell call, and listed in the result too.
    let summaries: Vec<&Value> = msgs
        .iter()
        .filter(|m| kind(m) == "tool_use_summary")
        .collect();
    let shell_id = use_ids[2];
    let shell_summary = summaries
        .iter()
        .find(|s| s["preceding_tool_use_ids"] == serde_json::json!([shell_id]))
        .expect("a summary for the shell batch");
    assert_eq!(shell_summary["summary"], "Ran ls -la");
    let listed: Vec<Value> = summaries
        .iter()
        .map(|s| serde_json::json!({"summary": s["summary"], "preceding_tool_use_ids": s["preceding_tool_use_ids"]}))
        .collect();
    assert_eq!(
        msgs.last().unwrap()["tool_use_summaries"],
        Value::Array(listed)
    );
}

#[tokio::test]
async fn partial_messages_add_tool_preparing_before_each_tool_use_and_text_deltas() {
    let sb = Sandbox::new();
    let out = sb
        .look_around(&[
            "--output-format",
            "stream-json",
            "--include-partial-messages",
        ])
        .await;
    let msgs = json_lines(&out);
    let position = |pred: &dyn Fn(&Value) -> bool| msgs.iter().position(pred);
    for (i, m) in msgs.iter().enumerate() {
        if kind(m) != "assistant" || block_kinds(m) != ["tool_use"] {
            continue;
        }
        let block = &m["message"]["content"][0];
        let prep =
            position(&|p: &Value| kind(p) == "tool_preparing" && p["tool_use_id"] == block["id"])
                .unwrap_or_else(|| panic!("no tool_preparing for {block}"));
        assert!(prep < i);
        assert_eq!(msgs[prep]["name"], block["name"]);
    }
    let deltas: String = msgs
        .iter()
        .filter(|m| kind(m) == "text_delta")
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert!(
        deltas.starts_with("I'll start by looking around"),
        "{deltas}"
    );
    // The plan tool never shows as a card, so it is never prepared either (SPEC §5.3).
    assert!(
        !msgs
            .iter()
            .any(|m| kind(m) == "tool_preparing" && m["name"] == "todo_write")
    );
}

#[tokio::test]
async fn a_prompt_is_read_from_stdin_with_dash() {
    let sb = Sandbox::new();
    let mut cmd = sb.corvid(&["--demo", "-p", "-", "--output-format", "json"]);
    cmd.stdin(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"look around from stdin\n").await.unwrap();
    }
    let out = child.wait_with_output().await.unwrap();
    assert_success(&out);
    assert_eq!(json_lines(&out)[0]["stop_reason"], "end_turn");
}

#[tokio::test]
async fn the_demo_works_with_no_keys_and_an_unreachable_network() {
    let sb = Sandbox::new();
    let mut cmd = sb.corvid(&["--demo", "-p", "look around"]);
    // Any attempt to reach a model server would fail loudly.
    cmd.env("OPENAI_BASE_URL", "http://127.0.0.1:9")
        .env("HTTPS_PROXY", "http://127.0.0.1:9")
        .env("HTTP_PROXY", "http://127.0.0.1:9");
    let out = run(cmd).await;
    assert_success(&out);
    assert!(stdout(&out).contains("What I found"));
}

#[tokio::test]
async fn provider_demo_is_the_same_as_the_demo_flag() {
    let sb = Sandbox::new();
    let out = run(sb.corvid(&["--provider", "demo", "-p", "hi", "--output-format", "json"])).await;
    assert_success(&out);
    assert_eq!(json_lines(&out)[0]["is_error"], false);
}

fn blocks<'a>(msgs: &'a [Value], block_type: &str) -> Vec<&'a Value> {
    msgs.iter()
        .filter_map(|m| m["message"]["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == block_type)
        .collect()
}

fn uuid_like(s: &str) -> bool {
    s.len() == 36 && s.chars().filter(|c| *c == '-').count() == 4
}
