//! Headless mode on the OpenAI Responses API over loopback HTTP: a tool loop that carries the
//! reasoning item into the next request, a cut stream discarded and retried, and each
//! terminal/error event the API ends a stream with (SPEC §2.4).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Sandbox, assert_success, json_lines, kind, run, stdout};
use corvid_testkit::{Chunk, MockServer, ScriptedResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const KEY: &str = "sk-test-responses-4242";
const ENCRYPTED: &str = "gAAAAABpMh3k-opaque-reasoning==";

/// `corvid ARGS` on the Responses API at `server` (chosen by `OPENAI_API`, same key and URL
/// variables as Chat Completions), retrying at once.
fn against(sb: &Sandbox, server: &MockServer, args: &[&str]) -> tokio::process::Command {
    sb.user_settings(r#"{ "retry": { "maxAttempts": 3, "initialDelayMs": 1, "maxDelayMs": 2 } }"#);
    let mut cmd = sb.against(server, KEY, args);
    cmd.env("OPENAI_API", "responses")
        .env("OPENAI_MODEL", "gpt-5.1-codex");
    cmd
}

/// Events with their `event:` line and increasing sequence numbers, as the API sends them.
struct Events {
    seq: u64,
    chunks: Vec<Chunk>,
}

impl Events {
    fn new() -> Self {
        let mut events = Self {
            seq: 0,
            chunks: Vec::new(),
        };
        let created =
            json!({"id": "resp_1", "object": "response", "status": "in_progress", "output": []});
        events.push("response.created", json!({"response": created}));
        events
    }

    fn push(&mut self, kind: &str, fields: Value) -> &mut Self {
        let mut data = json!({"type": kind, "sequence_number": self.seq});
        data.as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        self.seq += 1;
        self.chunks
            .push(Chunk::new(format!("event: {kind}\ndata: {data}\n\n")));
        self
    }

    fn reasoning(&mut self, summary: &str) -> &mut Self {
        let id = "rs_1";
        self.push(
            "response.output_item.added",
            json!({"output_index": 0,
            "item": {"id": id, "type": "reasoning", "summary": []}}),
        );
        self.push(
            "response.reasoning_summary_text.delta",
            json!({"item_id": id,
            "output_index": 0, "summary_index": 0, "delta": summary}),
        );
        self.push(
            "response.output_item.done",
            json!({"output_index": 0, "item": {"id": id,
            "type": "reasoning", "encrypted_content": ENCRYPTED,
            "summary": [{"type": "summary_text", "text": summary}]}}),
        )
    }

    fn call_start(&mut self, call_id: &str, name: &str, first_args: &str) -> &mut Self {
        self.push(
            "response.output_item.added",
            json!({"output_index": 1, "item": {
            "id": "fc_1", "type": "function_call", "status": "in_progress", "arguments": "",
            "call_id": call_id, "name": name}}),
        );
        self.push(
            "response.function_call_arguments.delta",
            json!({"item_id": "fc_1", "output_index": 1, "delta": first_args}),
        )
    }

    fn call_end(&mut self, call_id: &str, name: &str, args: &str) -> &mut Self {
        self.push(
            "response.function_call_arguments.done",
            json!({"item_id": "fc_1", "output_index": 1, "arguments": args}),
        );
        self.push(
            "response.output_item.done",
            json!({"output_index": 1, "item": {
            "id": "fc_1", "type": "function_call", "status": "completed", "arguments": args,
            "call_id": call_id, "name": name}}),
        )
    }

    fn text(&mut self, text: &str) -> &mut Self {
        self.push("response.output_item.added", json!({"output_index": 0, "item": {
            "id": "msg_1", "type": "message", "status": "in_progress", "content": [], "role": "assistant"}}));
        self.push(
            "response.output_text.delta",
            json!({"item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": text}),
        )
    }

    fn end(&mut self, kind: &str, response: Value) -> ScriptedResponse {
        self.push(kind, json!({"response": response}));
        ScriptedResponse::sse(std::mem::take(&mut self.chunks))
    }

    fn completed(&mut self) -> ScriptedResponse {
        self.end(
            "response.completed",
            json!({"id": "resp_1", "status": "completed",
            "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 64},
                      "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 12},
                      "total_tokens": 120}}),
        )
    }
}

fn text_answer(text: &str) -> ScriptedResponse {
    Events::new().text(text).completed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_loop_sends_the_reasoning_item_back_before_its_call_on_the_next_request() {
    let server = MockServer::start().await;
    server.push(
        Events::new()
            .reasoning("**Listing** the folder first.")
            .call_start("call_ls", "list_directory", "{\"path\":")
            .call_end("call_ls", "list_directory", "{\"path\":\".\"}")
            .completed(),
    );
    server.push(text_answer("There is a README.md."));
    let sb = Sandbox::new();
    let out = run(against(
        &sb,
        &server,
        &["-p", "what is here?", "--output-format", "stream-json"],
    ))
    .await;
    assert_success(&out);
    let msgs = json_lines(&out);
    let result = msgs.last().unwrap();
    assert_eq!(result["result"], "There is a README.md.");
    assert_eq!(
        result["usage_by_prompt"]["main"]["cached_input_tokens"],
        json!(128)
    );
    assert_eq!(
        result["usage_by_prompt"]["main"]["reasoning_tokens"],
        json!(24)
    );
    let session_id = msgs[0]["session_id"].as_str().unwrap().to_owned();

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].path, "/responses");
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let body = &requests[1].body;
    assert_eq!(body["prompt_cache_key"], json!(session_id));
    assert_eq!(body["store"], false);
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    let input = body["input"].as_array().unwrap();
    let kinds: Vec<&str> = input.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "message",
            "reasoning",
            "function_call",
            "function_call_output"
        ]
    );
    assert_eq!(
        input[1],
        json!({"type": "reasoning", "encrypted_content": ENCRYPTED,
               "summary": [{"type": "summary_text", "text": "**Listing** the folder first."}]})
    );
    assert_eq!(
        input[2],
        json!({"type": "function_call", "call_id": "call_ls", "name": "list_directory",
               "arguments": "{\"path\":\".\"}"})
    );
    assert_eq!(input[3]["call_id"], "call_ls");
    assert!(input[3]["output"].as_str().unwrap().contains("README.md"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_prepared_by_a_cut_stream_is_discarded_and_the_request_retried() {
    let server = MockServer::start().await;
    let mut cut = Events::new();
    cut.reasoning("thinking")
        .call_start("call_cut", "list_directory", "{\"pa");
    server.push(ScriptedResponse::sse(std::mem::take(&mut cut.chunks)).cut());
    server.push(text_answer("Nothing to list."));
    let sb = Sandbox::new();
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
    assert!(msgs.iter().any(|m| kind(m) == "system/retry"));
    assert_eq!(msgs.last().unwrap()["result"], "Nothing to list.");
    // The retry sends what the first attempt did: nothing of the cut answer.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body["input"], requests[1].body["input"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_out_of_output_tokens_ends_the_task_without_a_retry() {
    let server = MockServer::start().await;
    server.push(Events::new().text("Partial").end(
        "response.incomplete",
        json!({"id": "resp_1", "status": "incomplete",
               "incomplete_details": {"reason": "max_output_tokens"}}),
    ));
    let sb = Sandbox::new();
    let out = run(against(
        &sb,
        &server,
        &["-p", "hi", "--output-format", "stream-json"],
    ))
    .await;
    let msgs = json_lines(&out);
    assert!(!msgs.iter().any(|m| kind(m) == "system/retry"), "{msgs:?}");
    assert_eq!(server.requests().len(), 1);
    let result = msgs.last().unwrap();
    assert_eq!(kind(result), "result");
    assert!(
        result.to_string().contains("max_tokens") || result.to_string().contains("max tokens"),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retryable_failures_are_retried_and_an_exhausted_quota_is_not() {
    for (end, retried) in [
        (
            json!({"type": "response.failed", "response": {"id": "r", "status": "failed",
                   "error": {"code": "rate_limit_exceeded",
                             "message": "Rate limit reached. Please try again in 5ms."}}}),
            true,
        ),
        (
            json!({"type": "response.failed", "response": {"id": "r", "status": "failed",
                   "error": {"code": "server_is_overloaded", "message": "overloaded"}}}),
            true,
        ),
        (
            json!({"type": "error", "code": "server_error", "message": "The server had an error"}),
            true,
        ),
        (
            json!({"type": "error", "error": {"type": "server_error", "code": "server_error",
                   "message": "proxied failure"}}),
            true,
        ),
        (
            json!({"type": "response.failed", "response": {"id": "r", "status": "failed",
                   "error": {"code": "insufficient_quota",
                             "message": "You exceeded your current quota"}}}),
            false,
        ),
    ] {
        let server = MockServer::start().await;
        let mut failing = Events::new();
        let kind_name = end["type"].as_str().unwrap().to_owned();
        let mut fields = end.clone();
        fields.as_object_mut().unwrap().remove("type");
        failing.push(&kind_name, fields);
        server.push(ScriptedResponse::sse(std::mem::take(&mut failing.chunks)));
        server.push(text_answer("Recovered."));
        let sb = Sandbox::new();
        let out = run(against(&sb, &server, &["-p", "hi"])).await;
        if retried {
            assert_success(&out);
            assert_eq!(
                (end.clone(), stdout(&out)),
                (end, "Recovered.\n".to_owned())
            );
            assert_eq!(server.requests().len(), 2);
        } else {
            assert_ne!(out.status.code(), Some(0), "{end}");
            assert_eq!(server.requests().len(), 1, "{end}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_model_store_the_second_request_continues_the_first_response_with_only_the_output() {
    let server = MockServer::start().await;
    server.push(
        Events::new()
            .reasoning("**Listing** the folder first.")
            .call_start("call_ls", "list_directory", "{\"path\":")
            .call_end("call_ls", "list_directory", "{\"path\":\".\"}")
            .completed(),
    );
    server.push(text_answer("There is a README.md."));
    let sb = Sandbox::new();
    let mut cmd = against(&sb, &server, &["-p", "what is here?"]);
    sb.user_settings(
        r#"{ "model": { "store": true },
             "retry": { "maxAttempts": 3, "initialDelayMs": 1, "maxDelayMs": 2 } }"#,
    );
    cmd.env("OPENAI_API", "responses");
    let out = run(cmd).await;
    assert_success(&out);
    assert_eq!(stdout(&out).trim(), "There is a README.md.");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body["store"], true);
    let body = &requests[1].body;
    assert_eq!(body["store"], true);
    assert_eq!(body["previous_response_id"], "resp_1");
    let input = body["input"].as_array().unwrap();
    assert_eq!(input.len(), 1, "{input:?}");
    assert_eq!(input[0]["type"], "function_call_output");
    assert_eq!(input[0]["call_id"], "call_ls");
}
