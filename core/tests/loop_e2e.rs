//! End to end: the agent loop through the real OpenAI Chat provider against the testkit's
//! loopback server (never a stubbed client), with real or recording tools.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::fake_tools::{ExecLog, FakeTool};
use common::invariants::check_invariants;
use common::openai_sse::*;
use common::{
    assert_lifecycle, cancel_when, collect_task, lifecycle, prompt, read_until, run_task,
    test_config, with_fallback,
};
use corvid_core::agent::{AgentConfig, spawn_agent};
use corvid_protocol::{CoreEvent, Op, StopReason};
use corvid_providers::{OpenAiChatProvider, ProviderConfig};
use corvid_testkit::{MockServer, ScriptedResponse};
use corvid_tools::{LocalFs, Tool, builtin_tools};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn provider(server: &MockServer) -> Arc<OpenAiChatProvider> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = ProviderConfig {
        base_url: server.url(),
        ..ProviderConfig::default()
    };
    Arc::new(OpenAiChatProvider::new(&config).unwrap())
}

fn fake_config(server: &MockServer, tools: Vec<Arc<dyn Tool>>) -> AgentConfig {
    let mut config = test_config(provider(server), tools);
    config.retry.initial_delay = Duration::from_millis(10);
    config.retry.max_delay = Duration::from_millis(50);
    config
}

/// The real built-in tools on the real file system, rooted at `cwd`.
fn builtin_config(server: &MockServer, cwd: &Path) -> AgentConfig {
    let mut config = test_config(provider(server), vec![]);
    config.tools = builtin_tools();
    config.fs = Arc::new(LocalFs);
    config.cwd = cwd.to_path_buf();
    config
}

/// The recording `read` tool most scenarios here call.
fn reader(log: &ExecLog) -> Arc<dyn Tool> {
    FakeTool::reader("read", 1, log)
}

fn answer(t: &str) -> ScriptedResponse {
    ScriptedResponse::sse(vec![text(t), finish("stop"), usage(10, 2), done()])
}

#[tokio::test]
async fn end_to_end_a_two_turn_tool_task_pairs_each_result_with_its_call_id() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    std::fs::write(dir.path().join("b.txt"), "beta\n").unwrap();
    let server = MockServer::start().await;
    server.push(ScriptedResponse::sse(vec![
        text("Reading both."),
        call_start(0, "call_a", "read_file"),
        call_args(0, "{\"file_path\":"),
        call_args(0, "\"a.txt\"}"),
        call_start(1, "call_b", "read_file"),
        call_args(1, "{\"file_path\":\"b.txt\"}"),
        finish("tool_calls"),
        usage(100, 20),
        done(),
    ]));
    server.push(answer("alpha and beta"));
    let mut handle = spawn_agent(builtin_config(&server, dir.path()));
    let events = run_task(&mut handle, "read a and b").await;
    check_invariants(&events, &["todo_write"]).unwrap();
    // The two reads run concurrently, so they may finish in either order; everything else
    // keeps its exact place.
    let mut seen = lifecycle(&events);
    seen[6..8].sort();
    assert_eq!(
        seen,
        [
            "task_started",
            "turn 1 main-model",
            "preparing call_a",
            "preparing call_b",
            "started call_a prepared=true",
            "started call_b prepared=true",
            "finished call_a Completed",
            "finished call_b Completed",
            "batch call_a,call_b",
            "turn 2 main-model",
            "task_finished EndTurn",
        ],
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    let calls: Vec<(Value, Value)> = messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
        .map(|c| (c["id"].clone(), c["function"]["arguments"].clone()))
        .collect();
    let call_args: Vec<(Value, Value)> = calls
        .into_iter()
        .map(|(id, args)| (id, serde_json::from_str(args.as_str().unwrap()).unwrap()))
        .collect();
    assert_eq!(
        call_args,
        vec![
            (json!("call_a"), json!({"file_path": "a.txt"})),
            (json!("call_b"), json!({"file_path": "b.txt"})),
        ]
    );
    let results: Vec<(Value, bool)> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            let content = m["content"].to_string();
            let expected = if m["tool_call_id"] == "call_a" {
                "alpha"
            } else {
                "beta"
            };
            (m["tool_call_id"].clone(), content.contains(expected))
        })
        .collect();
    assert_eq!(
        results,
        vec![(json!("call_a"), true), (json!("call_b"), true)]
    );
}

#[tokio::test]
async fn end_to_end_read_only_calls_overlap_and_mutating_calls_run_in_order() {
    let log = ExecLog::default();
    let server = MockServer::start().await;
    let mut chunks = Vec::new();
    for (i, (id, name)) in [
        ("r1", "read"),
        ("r2", "read"),
        ("w1", "write"),
        ("w2", "write"),
    ]
    .iter()
    .enumerate()
    {
        chunks.push(call_start(i as u32, id, name));
        chunks.push(call_args(i as u32, &json!({"tag": id}).to_string()));
    }
    chunks.extend([finish("tool_calls"), done()]);
    server.push(ScriptedResponse::sse(chunks));
    server.push(answer("done"));
    let mut handle = spawn_agent(fake_config(
        &server,
        vec![
            FakeTool::reader("read", 150, &log),
            FakeTool::writer("write", 20, &log),
        ],
    ));
    let events = run_task(&mut handle, "go").await;
    check_invariants(&events, &[]).unwrap();
    let runs = log.all();
    let get = |tag: &str| runs.iter().find(|e| e.args["tag"] == tag).unwrap().clone();
    let (r1, r2, w1, w2) = (get("r1"), get("r2"), get("w1"), get("w2"));
    assert!(
        r1.started < r2.ended && r2.started < r1.ended,
        "the reads overlap"
    );
    assert!(
        w1.started >= r1.ended.max(r2.ended),
        "writes wait for earlier reads"
    );
    assert!(w2.started >= w1.ended, "writes run in order");
}

#[tokio::test]
async fn end_to_end_a_cut_mid_arguments_discards_the_card_and_runs_only_the_retry() {
    let log = ExecLog::default();
    let server = MockServer::start().await;
    server.push(
        ScriptedResponse::sse(vec![
            call_start(0, "call_cut", "read"),
            call_args(0, "{\"tag\": \"cu"),
        ])
        .cut(),
    );
    server.push(ScriptedResponse::sse(vec![
        call_start(0, "call_ok", "read"),
        call_args(0, "{\"tag\": \"call_ok\"}"),
        finish("tool_calls"),
        done(),
    ]));
    server.push(answer("done"));
    let mut handle = spawn_agent(fake_config(&server, vec![reader(&log)]));
    let events = run_task(&mut handle, "go").await;
    check_invariants(&events, &[]).unwrap();
    assert_lifecycle(
        &events,
        &[
            "task_started",
            "turn 1 main-model",
            "preparing call_cut",
            "discarded call_cut Retry",
            "retried attempt 1 (stream_truncated)",
            "preparing call_ok",
            "started call_ok prepared=true",
            "finished call_ok Completed",
            "batch call_ok",
            "turn 2 main-model",
            "task_finished EndTurn",
        ],
    );
    assert_eq!(log.tags(), vec!["call_ok"]);
}

#[tokio::test]
async fn end_to_end_a_cut_after_complete_arguments_still_discards_and_never_runs() {
    let log = ExecLog::default();
    let server = MockServer::start().await;
    // Arguments are complete, but the body ends before finish_reason: a truncated stream.
    server.push(
        ScriptedResponse::sse(vec![
            call_start(0, "call_x", "read"),
            call_args(0, "{\"tag\": \"call_x\"}"),
        ])
        .cut(),
    );
    server.push(answer("never mind"));
    let mut handle = spawn_agent(fake_config(&server, vec![reader(&log)]));
    let events = run_task(&mut handle, "go").await;
    check_invariants(&events, &[]).unwrap();
    assert_lifecycle(
        &events,
        &[
            "task_started",
            "turn 1 main-model",
            "preparing call_x",
            "discarded call_x Retry",
            "retried attempt 1 (stream_truncated)",
            "task_finished EndTurn",
        ],
    );
    assert!(log.all().is_empty());
}

#[tokio::test]
async fn end_to_end_persistent_429_falls_back_and_without_fallback_fails_clearly() {
    let server = MockServer::start().await;
    for _ in 0..3 {
        server.push(
            ScriptedResponse::error(
                429,
                r#"{"error":{"message":"Rate limit reached","type":"rate_limit_exceeded"}}"#,
            )
            .header("retry-after", "0"),
        );
    }
    server.push(answer("from the fallback"));
    let mut handle = spawn_agent(with_fallback(fake_config(&server, vec![])));
    let events = run_task(&mut handle, "go").await;
    check_invariants(&events, &[]).unwrap();
    assert_lifecycle(
        &events,
        &[
            "task_started",
            "turn 1 main-model",
            "retried attempt 1 (rate_limited)",
            "retried attempt 2 (rate_limited)",
            "fell back main-model -> fallback-model",
            "task_finished EndTurn",
        ],
    );
    let models: Vec<Value> = server
        .requests()
        .iter()
        .map(|r| r.body["model"].clone())
        .collect();
    assert_eq!(
        models,
        vec![
            json!("main-model"),
            json!("main-model"),
            json!("main-model"),
            json!("fallback-model")
        ]
    );

    let server = MockServer::start().await;
    for _ in 0..3 {
        server.push(
            ScriptedResponse::error(529, r#"{"error":{"message":"Overloaded"}}"#)
                .header("retry-after", "0"),
        );
    }
    let mut handle = spawn_agent(fake_config(&server, vec![]));
    let events = run_task(&mut handle, "go").await;
    match events.last() {
        Some(CoreEvent::TaskFinished {
            stop_reason: StopReason::Error,
            error: Some(error),
            ..
        }) => {
            assert!(error.to_string().starts_with("overloaded error"), "{error}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn end_to_end_cancel_while_arguments_stream_discards_the_card() {
    let log = ExecLog::default();
    let server = MockServer::start().await;
    server.push(
        ScriptedResponse::sse(vec![call_start(0, "call_h", "read"), call_args(0, "{\"ta")]).hang(),
    );
    let mut handle = spawn_agent(fake_config(&server, vec![reader(&log)]));
    prompt(&handle, "go");
    let events = cancel_when(&mut handle, |e| {
        matches!(e, CoreEvent::ToolPreparing { .. })
    })
    .await;
    check_invariants(&events, &[]).unwrap();
    assert_lifecycle(
        &events,
        &[
            "task_started",
            "turn 1 main-model",
            "preparing call_h",
            "discarded call_h Cancelled",
            "task_finished Cancelled",
        ],
    );
    assert!(log.all().is_empty());
}

#[cfg(unix)]
#[tokio::test]
async fn end_to_end_cancel_while_a_shell_command_runs_kills_its_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start().await;
    let command = "sleep 300 & echo $! > child.pid; wait";
    server.push(ScriptedResponse::sse(vec![
        call_start(0, "call_sh", "run_shell_command"),
        call_args(0, &json!({"command": command}).to_string()),
        finish("tool_calls"),
        done(),
    ]));
    let mut handle = spawn_agent(builtin_config(&server, dir.path()));
    prompt(&handle, "sleep");
    let mut events = read_until(&mut handle, |e| matches!(e, CoreEvent::ToolStarted { .. })).await;
    let pid_file = dir.path().join("child.pid");
    let pid = loop {
        if let Ok(text) = std::fs::read_to_string(&pid_file)
            && let Ok(pid) = text.trim().parse::<u32>()
        {
            break pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    handle.submit(Op::Cancel).unwrap();
    events.extend(collect_task(&mut handle).await);
    check_invariants(&events, &["todo_write"]).unwrap();
    assert_lifecycle(
        &events,
        &[
            "task_started",
            "turn 1 main-model",
            "preparing call_sh",
            "started call_sh prepared=true",
            "finished call_sh Failed",
            "batch call_sh",
            "task_finished Cancelled",
        ],
    );
    // The background child of the shell is gone too (killed with the process group).
    let gone = async {
        loop {
            let status = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if status.is_empty() || status.split_whitespace().nth(2) == Some("Z") {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), gone)
        .await
        .expect("the shell's child survived the cancel");
}

#[tokio::test]
async fn end_to_end_ids_reused_across_turns_are_renamed_for_card_call_and_result() {
    let log = ExecLog::default();
    let server = MockServer::start().await;
    for tag in ["first", "second"] {
        server.push(ScriptedResponse::sse(vec![
            call_start(0, "call_1", "read"),
            call_args(0, &json!({ "tag": tag }).to_string()),
            finish("tool_calls"),
            done(),
        ]));
    }
    server.push(answer("done"));
    let mut handle = spawn_agent(fake_config(&server, vec![reader(&log)]));
    let events = run_task(&mut handle, "go").await;
    check_invariants(&events, &[]).unwrap();
    assert_lifecycle(
        &events,
        &[
            "task_started",
            "turn 1 main-model",
            "preparing call_1",
            "started call_1 prepared=true",
            "finished call_1 Completed",
            "batch call_1",
            "turn 2 main-model",
            "preparing call_1__dup_2",
            "started call_1__dup_2 prepared=true",
            "finished call_1__dup_2 Completed",
            "batch call_1__dup_2",
            "turn 3 main-model",
            "task_finished EndTurn",
        ],
    );
    let messages = server.requests()[2].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    let ids: Vec<Value> = messages
        .iter()
        .flat_map(|m| {
            let mut ids: Vec<Value> = m["tool_calls"]
                .as_array()
                .map(|calls| calls.iter().map(|c| c["id"].clone()).collect())
                .unwrap_or_default();
            if m["role"] == "tool" {
                ids.push(m["tool_call_id"].clone());
            }
            ids
        })
        .collect();
    assert_eq!(
        ids,
        vec![
            json!("call_1"),
            json!("call_1"),
            json!("call_1__dup_2"),
            json!("call_1__dup_2")
        ]
    );
}
