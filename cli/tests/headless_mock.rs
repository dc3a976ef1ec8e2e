//! Headless mode against the loopback mock provider: a real two-turn task, failures and
//! their exit codes, SIGINT (SPEC §1.1, §10).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{
    Sandbox, assert_success, block_kinds, chunk, json_lines, kind, label_answer, run, stderr,
    stdout, text_turn, turn, usage_chunk,
};
use corvid_testkit::{MockServer, ScriptedResponse, sse_event};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

const KEY: &str = "sk-test-secret-4242";

/// `corvid ARGS` talking to `server` as an OpenAI-compatible provider.
fn against(sb: &Sandbox, server: &MockServer, args: &[&str]) -> tokio::process::Command {
    let mut cmd = sb.against(server, KEY, args);
    cmd.env("OPENAI_MODEL", "mock-model");
    cmd
}

fn tool_turn() -> ScriptedResponse {
    ScriptedResponse::sse(vec![
        chunk(json!({"role": "assistant", "content": "Looking."}), None),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                   "function": {"name": "list_directory", "arguments": ""}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"path\":"}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "\".\"}"}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        usage_chunk(),
        sse_event("[DONE]"),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_turn_task_streams_json_and_sends_the_tool_result_back() {
    let server = MockServer::start().await;
    server.push(tool_turn());
    server.push(text_turn("All done: README.md and main.rs."));
    let sb = Sandbox::new();
    let out = run(against(
        &sb,
        &server,
        &["-p", "list the files", "--output-format", "stream-json"],
    ))
    .await;
    assert_success(&out);
    let msgs = json_lines(&out);
    let shape: Vec<String> = msgs
        .iter()
        .map(|m| match kind(m).as_str() {
            "assistant" | "user" => format!("{}:{}", kind(m), block_kinds(m).join("+")),
            other => other.to_owned(),
        })
        .collect();
    assert_eq!(
        shape,
        vec![
            "system/init",
            "assistant:text",
            "assistant:tool_use",
            "user:tool_result",
            "assistant:text",
            "result",
        ]
    );
    assert_eq!(
        msgs[2]["message"]["content"][0],
        json!({"type": "tool_use", "id": "call_1", "name": "list_directory", "input": {"path": "."}})
    );
    assert_eq!(msgs[3]["message"]["content"][0]["tool_use_id"], "call_1");
    let result = msgs.last().unwrap();
    assert_eq!(result["result"], "All done: README.md and main.rs.");
    assert_eq!(result["num_turns"], 2);
    assert_eq!(
        result["usage_by_prompt"]["main"],
        json!({"input_tokens": 20, "output_tokens": 10, "total_tokens": 30,
               "cached_input_tokens": 0, "reasoning_tokens": 0})
    );
    // The context fill of the last answer, in an unknown model's default window.
    assert_eq!(
        result["context"],
        json!({"used": 15, "window": 32_768, "percent": 0})
    );
    // No fast model configured: summaries are skipped silently.
    assert_eq!(result["tool_use_summaries"], json!([]));

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].path, "/chat/completions");
    assert_eq!(requests[0].body["model"], "mock-model");
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let tool_msg = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("the second request carries the tool result");
    assert_eq!(tool_msg["tool_call_id"], "call_1");
    assert!(tool_msg["content"].as_str().unwrap().contains("README.md"));
    // The key is never echoed.
    assert!(!stdout(&out).contains(KEY) && !stderr(&out).contains(KEY));
}

fn two_reads_turn() -> ScriptedResponse {
    ScriptedResponse::sse(turn(
        json!({"role": "assistant", "tool_calls": [
            {"index": 0, "id": "call_a", "type": "function",
             "function": {"name": "list_directory", "arguments": "{\"path\":\".\"}"}},
            {"index": 1, "id": "call_b", "type": "function",
             "function": {"name": "read_file", "arguments": "{\"file_path\":\"README.md\"}"}},
        ]}),
        "tool_calls",
    ))
}

/// A task whose tool batches the fast model labels, printed as stream-json.
const LOOK_WITH_LABELS: &[&str] = &[
    "-p",
    "look",
    "--output-format",
    "stream-json",
    "--fast-model",
    "mock-fast",
];

fn model_is(name: &'static str) -> impl Fn(&corvid_testkit::RecordedRequest) -> bool {
    move |r| r.body["model"] == name
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fast_models_label_reaches_stream_json_and_the_result_with_its_usage() {
    let server = MockServer::start().await;
    server.push_matching(model_is("mock-model"), two_reads_turn());
    server.push_matching(model_is("mock-model"), text_turn("Done."));
    server.push_matching(
        model_is("mock-fast"),
        label_answer("Label: Read the README"),
    );
    let sb = Sandbox::new();
    let out = run(against(&sb, &server, LOOK_WITH_LABELS)).await;
    assert_success(&out);
    let msgs = json_lines(&out);
    let summaries: Vec<&Value> = msgs
        .iter()
        .filter(|m| kind(m) == "tool_use_summary")
        .collect();
    assert_eq!(summaries.len(), 1, "{msgs:#?}");
    assert_eq!(summaries[0]["summary"], "Read the README");
    assert_eq!(
        summaries[0]["preceding_tool_use_ids"],
        json!(["call_a", "call_b"])
    );
    let result = msgs.last().unwrap();
    assert_eq!(kind(result), "result");
    assert_eq!(
        result["tool_use_summaries"],
        json!([{"summary": "Read the README", "preceding_tool_use_ids": ["call_a", "call_b"]}])
    );
    assert_eq!(
        result["usage_by_prompt"]["tool_use_summary_generation"],
        json!({"input_tokens": 7, "output_tokens": 3, "total_tokens": 10,
               "cached_input_tokens": 0, "reasoning_tokens": 0})
    );
    let fast = server
        .requests()
        .into_iter()
        .find(|r| r.body["model"] == "mock-fast")
        .unwrap();
    assert_eq!(fast.body["stream"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_output_against_a_real_provider_is_the_last_answer_only() {
    let server = MockServer::start().await;
    server.push(tool_turn());
    server.push(text_turn("Two files."));
    let sb = Sandbox::new();
    let out = run(against(&sb, &server, &["-p", "list"])).await;
    assert_success(&out);
    assert_eq!(stdout(&out), "Two files.\n");
    assert!(stderr(&out).contains("● List ."), "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_that_refuses_the_key_fails_the_task_with_exit_1() {
    let server = MockServer::start().await;
    server.push(ScriptedResponse::error(
        401,
        json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}})
            .to_string(),
    ));
    let sb = Sandbox::new();
    let out = run(against(
        &sb,
        &server,
        &["-p", "hi", "--output-format", "json"],
    ))
    .await;
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    let result = &json_lines(&out)[0];
    assert_eq!(result["is_error"], true);
    assert_eq!(result["subtype"], "error");
    assert_eq!(result["stop_reason"], "error");
    assert!(
        result["error"].as_str().unwrap().contains("auth"),
        "{result}"
    );
    assert!(
        stderr(&out).contains("Incorrect API key provided"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains(KEY));
}

#[tokio::test]
async fn no_provider_is_a_configuration_error_with_the_demo_hint() {
    let sb = Sandbox::new();
    let out = run(sb.corvid(&["-p", "hi"])).await;
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("ANTHROPIC_API_KEY or OPENAI_API_KEY"), "{err}");
    assert!(err.contains("corvid --demo"), "{err}");
    assert_eq!(stdout(&out), "");
}

#[tokio::test]
async fn a_malformed_settings_file_is_a_configuration_error_naming_line_and_column() {
    let sb = Sandbox::new();
    let path = sb.user_settings("{\n  \"model\": { \"name\": \"x\" }\n  \"ui\": {}\n}\n");
    let out = run(sb.corvid(&["--demo", "-p", "hi"])).await;
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("{}:3:3: invalid settings file", path.display())),
        "expected {}:3:3 in: {err}",
        path.display()
    );
}

#[tokio::test]
async fn an_unknown_settings_key_is_a_warning_on_stderr() {
    let sb = Sandbox::new();
    let path = sb.user_settings("{ \"ui\": { \"compactMod\": true } }");
    let out = run(sb.corvid(&["--demo", "-p", "hi"])).await;
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains(&format!(
            "corvid: warning: {}: unknown settings key `ui.compactMod` (ignored)",
            path.display()
        )),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn an_empty_prompt_is_a_usage_error() {
    let sb = Sandbox::new();
    let out = run(sb.corvid(&["--demo", "-p", "  "])).await;
    assert_eq!(out.status.code(), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_cancels_the_running_task_and_exits_130() {
    let server = MockServer::start().await;
    // The model starts answering, then goes silent.
    server.push(
        ScriptedResponse::sse(vec![chunk(
            json!({"role": "assistant", "content": "Thinking"}),
            None,
        )])
        .hang(),
    );
    let sb = Sandbox::new();
    let child = against(
        &sb,
        &server,
        &["-p", "hi", "--output-format", "stream-json"],
    )
    .spawn()
    .unwrap();
    server.wait_for_requests(1).await;
    let pid = child.id().unwrap().to_string();
    let kill = tokio::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .await
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().await.unwrap();
    assert_eq!(out.status.code(), Some(130), "stderr: {}", stderr(&out));
    let result = json_lines(&out).pop().unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["stop_reason"], "cancelled");
    assert_eq!(result["subtype"], "cancelled");
}

/// An attempt that starts answering, then loses its connection.
fn partial_then_cut() -> ScriptedResponse {
    ScriptedResponse::sse(vec![chunk(
        json!({"role": "assistant", "content": "Partial "}),
        None,
    )])
    .cut()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_attempt_is_announced_and_its_text_is_not_part_of_the_answer() {
    let server = MockServer::start().await;
    server.push(partial_then_cut());
    server.push(text_turn("Whole answer."));
    let sb = Sandbox::new();
    sb.user_settings(r#"{ "retry": { "initialDelayMs": 1, "maxDelayMs": 2 } }"#);

    let out = run(against(
        &sb,
        &server,
        &["-p", "hi", "--output-format", "stream-json"],
    ))
    .await;
    assert_success(&out);
    let msgs = json_lines(&out);
    let retry = msgs
        .iter()
        .find(|m| kind(m) == "system/retry")
        .expect("the retry is announced");
    assert_eq!(retry["attempt"], 1);
    assert_eq!(msgs.last().unwrap()["result"], "Whole answer.");

    server.push(partial_then_cut());
    server.push(text_turn("Whole answer."));
    let out = run(against(&sb, &server, &["-p", "hi"])).await;
    assert_success(&out);
    assert_eq!(stdout(&out), "Whole answer.\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_prepared_by_a_cut_attempt_is_discarded_and_never_used() {
    let server = MockServer::start().await;
    server.push(
        ScriptedResponse::sse(vec![
            chunk(
                json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_cut",
                       "type": "function", "function": {"name": "list_directory", "arguments": ""}}]}),
                None,
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"pa"}}]}),
                None,
            ),
        ])
        .cut(),
    );
    server.push(text_turn("Nothing to list."));
    let sb = Sandbox::new();
    sb.user_settings(r#"{ "retry": { "initialDelayMs": 1, "maxDelayMs": 2 } }"#);
    let out = run(against(
        &sb,
        &server,
        &[
            "-p",
            "hi",
            "--output-format",
            "stream-json",
            "--include-partial-messages",
        ],
    ))
    .await;
    assert_success(&out);
    let msgs = json_lines(&out);
    let lifecycle: Vec<(String, Value)> = msgs
        .iter()
        .filter(|m| {
            m["tool_use_id"] == "call_cut" || m["message"]["content"][0]["id"] == "call_cut"
        })
        .map(|m| (kind(m), m["reason"].clone()))
        .collect();
    assert_eq!(
        lifecycle,
        vec![
            ("tool_preparing".to_owned(), Value::Null),
            ("tool_preparing_discarded".to_owned(), json!("retry")),
        ]
    );
    assert_eq!(msgs.last().unwrap()["result"], "Nothing to list.");
}

/// A batch of two searches, announced with some text.
fn search_turn_chunks() -> Vec<corvid_testkit::Chunk> {
    turn(
        json!({"role": "assistant", "content": "Now searching.", "tool_calls": [
            {"index": 0, "id": "call_c", "type": "function",
             "function": {"name": "grep_search", "arguments": "{\"pattern\":\"fn main\"}"}},
            {"index": 1, "id": "call_d", "type": "function",
             "function": {"name": "glob", "arguments": "{\"pattern\":\"*.rs\"}"}},
        ]}),
        "tool_calls",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_batches_get_two_labels_in_order_in_stream_json_and_the_result() {
    let server = MockServer::start().await;
    // The second turn waits until the first label was printed, so that label is not stale.
    let first_label_asked = corvid_testkit::Gate::new();
    server.push_matching(model_is("mock-model"), two_reads_turn());
    server.push_matching(model_is("mock-model"), {
        let mut chunks =
            vec![chunk(json!({"role": "assistant", "content": ""}), None).gate(&first_label_asked)];
        chunks.extend(search_turn_chunks());
        ScriptedResponse::sse(chunks)
    });
    server.push_matching(model_is("mock-model"), text_turn("Both done."));
    server.push_matching(model_is("mock-fast"), label_answer("Read the README"));
    server.push_matching(
        model_is("mock-fast"),
        label_answer("**Searched for fn main**"),
    );
    let sb = Sandbox::new();
    let mut child = against(&sb, &server, LOOK_WITH_LABELS).spawn().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut msgs: Vec<Value> = Vec::new();
    // Stream-json prints as it happens: once the first label is out, release turn 2.
    while let Some(line) = lines.next_line().await.unwrap() {
        msgs.push(serde_json::from_str(&line).unwrap());
        if kind(msgs.last().unwrap()) == "tool_use_summary" {
            first_label_asked.open();
        }
    }
    let status = child.wait().await.unwrap();
    assert_eq!(status.code(), Some(0), "{msgs:#?}");
    for m in &msgs {
        eprintln!("{m}"); // the transcript, for `--nocapture`
    }
    let summaries: Vec<Value> = msgs
        .iter()
        .filter(|m| kind(m) == "tool_use_summary")
        .map(|m| json!([m["summary"], m["preceding_tool_use_ids"]]))
        .collect();
    assert_eq!(
        summaries,
        vec![
            json!(["Read the README", ["call_a", "call_b"]]),
            json!(["Searched for fn main", ["call_c", "call_d"]]),
        ]
    );
    let result = msgs.last().unwrap();
    assert_eq!(
        result["tool_use_summaries"].as_array().map(Vec::len),
        Some(2)
    );
    assert_eq!(
        result["usage_by_prompt"]["tool_use_summary_generation"]["total_tokens"],
        json!(20)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_closes_stdout_early_ends_corvid_quietly() {
    let server = MockServer::start().await;
    server.push(text_turn("Hello there."));
    let sb = Sandbox::new();
    let mut child = against(
        &sb,
        &server,
        &["-p", "hi", "--output-format", "stream-json"],
    )
    .spawn()
    .unwrap();
    // Like `corvid -p ... | head -0`: the reader is gone before the first line.
    drop(child.stdout.take());
    let out = child.wait_with_output().await.unwrap();
    assert_eq!(
        (out.status.code(), stderr(&out)),
        (Some(0), String::new()),
        "a closed pipe is the reader's choice, not an error"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_headless_cannot_ask_about_is_reported_as_refused_by_headless_mode() {
    let server = MockServer::start().await;
    server.push(ScriptedResponse::sse(turn(
        json!({"tool_calls": [{"index": 0, "id": "call_sh", "type": "function",
               "function": {"name": "run_shell_command",
                            "arguments": "{\"command\":\"touch made-by-shell\"}"}}]}),
        "tool_calls",
    )));
    server.push(text_turn("I could not run it."));
    let sb = Sandbox::new();
    let out = run(against(
        &sb,
        &server,
        &["-p", "touch a file", "--output-format", "stream-json"],
    ))
    .await;
    assert_success(&out);
    let refusal = "headless mode refused this call because it needs approval; rerun with \
                   --approval-mode yolo (or -y), or allow it with a tools.allow rule";
    let msgs = json_lines(&out);
    let denied = msgs
        .iter()
        .find(|m| kind(m) == "system/permission_denied")
        .expect("a permission_denied message");
    assert_eq!(
        (&denied["tool_use_id"], &denied["hint"]),
        (&json!("call_sh"), &json!(refusal))
    );
    let result = msgs
        .iter()
        .find(|m| block_kinds(m) == ["tool_result"])
        .expect("a tool result");
    assert_eq!(
        result["message"]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "call_sh", "content": refusal,
               "is_error": true})
    );
    let err = stderr(&out);
    assert!(err.contains(&format!(": {refusal}")), "{err}");
    assert!(!err.contains("The user rejected"), "{err}");
    assert!(
        !stdout(&out).contains("The user rejected"),
        "{}",
        stdout(&out)
    );
    assert!(!sb.project_dir().join("made-by-shell").exists());
    // The model is told the truth too, so its answer does not blame the user.
    let requests = server.requests();
    let tool_msg = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("the refusal is sent back as the call's result");
    let told = tool_msg["content"].as_str().unwrap();
    assert!(
        told.starts_with(
            "This `run_shell_command` call needs approval, and nobody can be asked in this \
             non-interactive (headless) run, so corvid refused it; it did not run. The user \
             did not reject it."
        ),
        "{told}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_output_to_a_pipe_keeps_the_models_text_as_sent() {
    let server = MockServer::start().await;
    server.push(text_turn("\u{1b}[1mbold\u{1b}[0m"));
    let sb = Sandbox::new();
    let out = run(against(&sb, &server, &["-p", "hi"])).await;
    assert_success(&out);
    // Not a terminal: nothing is stripped (a terminal gets `bold`, see terminal_text.rs).
    assert_eq!(stdout(&out), "\u{1b}[1mbold\u{1b}[0m\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_output_to_a_terminal_loses_the_models_escape_sequences() {
    use std::io::{Read, Write};
    let server = MockServer::start().await;
    server.push(text_turn(
        "\u{1b}]0;pwned\u{7}\u{1b}[2Jhello\u{1b}]52;c;ZXZpbA==\u{1b}\\ world\r!",
    ));
    let sb = Sandbox::new();
    let pty = nix::pty::openpty(None, None).unwrap();
    // A second slave end stays open here, so the output waits in the pty after corvid exits.
    let mut slave = std::fs::File::from(pty.slave.try_clone().unwrap());
    let mut cmd = against(&sb, &server, &["-p", "hi"]);
    cmd.stdout(std::process::Stdio::from(pty.slave));
    // `spawn`, not `output`, which would replace stdout with a pipe.
    let out = cmd.spawn().unwrap().wait_with_output().await.unwrap();
    assert_success(&out);
    // A marker written after corvid exited tells where its output ends.
    slave.write_all(b"<end>").unwrap();
    let mut master = std::fs::File::from(pty.master);
    let mut screen = Vec::new();
    while !screen.ends_with(b"<end>") {
        let mut buf = [0u8; 4096];
        let n = master.read(&mut buf).unwrap();
        assert!(n > 0, "the pty closed early: {screen:?}");
        screen.extend_from_slice(&buf[..n]);
    }
    assert_eq!(String::from_utf8_lossy(&screen), "hello world!\r\n<end>");
}
