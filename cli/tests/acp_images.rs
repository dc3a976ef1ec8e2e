//! End to end: the official ACP TypeScript client (`tests/acp/images.mjs`, on
//! `@agentclientprotocol/sdk` 2.4.0) sends an image prompt to the real `corvid --acp` binary,
//! and the image reaches the testkit's loopback mock provider in that provider's own format
//! (OpenAI Chat: an `image_url` data URL; Anthropic: a base64 `image` block). A model without
//! image support answers the prompt with an error instead of dropping the image.
//!
//! Needs `node` and `cd tests/acp && npm ci` (`bash tests/run.sh` installs both); without them
//! the tests fail, naming what is missing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Stdio;

use common::{client_dir, require_client};
use corvid_testkit::{Chunk, MockServer, ScriptedResponse, sse_event};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

/// Which provider the binary talks to, and the model it asks for.
enum Provider {
    OpenAi(&'static str),
    Anthropic(&'static str),
}

/// Runs the image client against `corvid --acp` whose provider is `server`.
async fn run(server: &MockServer, provider: Provider) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(client_dir().join("images.mjs"))
        .args(["--cwd", dir.path().to_str().unwrap()])
        .args(["--text", "What is in this picture?"])
        .args(["--image", "image/png", PNG])
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_corvid"))
        .arg("--acp")
        .current_dir(dir.path())
        .env("CORVID_HOME", home.path())
        .env("CORVID_EMIT_TOOL_USE_SUMMARIES", "0")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_MODEL")
        .env_remove("ANTHROPIC_MODEL")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    match provider {
        Provider::OpenAi(model) => cmd
            .env("OPENAI_BASE_URL", server.url())
            .env("OPENAI_API_KEY", "sk-test")
            .env("OPENAI_MODEL", model),
        Provider::Anthropic(model) => cmd
            .env("ANTHROPIC_BASE_URL", server.url())
            .env("ANTHROPIC_API_KEY", "sk-ant-test")
            .env("ANTHROPIC_MODEL", model),
    };
    let output = cmd.output().await.unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l}: {e}")))
        .collect()
}

fn find<'a>(lines: &'a [Value], kind: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} line in {lines:#?}"))
}

fn openai_answer(text: &str) -> ScriptedResponse {
    let chunk = |delta: Value, finish: Option<&str>| {
        sse_event(
            &json!({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            .to_string(),
        )
    };
    ScriptedResponse::sse(vec![
        chunk(json!({"role": "assistant", "content": text}), None),
        chunk(json!({}), Some("stop")),
        Chunk::new("data: [DONE]\n\n"),
    ])
}

fn anthropic_answer(text: &str) -> ScriptedResponse {
    let event = |name: &str, data: Value| Chunk::new(format!("event: {name}\ndata: {data}\n\n"));
    ScriptedResponse::sse(vec![
        event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                "role": "assistant", "model": "m", "content": [], "stop_reason": null,
                "usage": {"input_tokens": 5, "output_tokens": 1}}}),
        ),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
        ),
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": text}}),
        ),
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 3}}),
        ),
        event("message_stop", json!({"type": "message_stop"})),
    ])
}

/// The last message of the one request the mock provider received.
fn last_message(server: &MockServer) -> Value {
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "{requests:#?}");
    requests[0].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone()
}

#[tokio::test]
async fn an_image_prompt_reaches_an_openai_model_as_an_image_url_part() {
    require_client();
    let server = MockServer::start().await;
    server.push(openai_answer("A red pixel."));
    let lines = run(&server, Provider::OpenAi("gpt-4o")).await;
    assert_eq!(
        find(&lines, "initialize")["response"]["agentCapabilities"]["promptCapabilities"]["image"],
        json!(true)
    );
    assert_eq!(
        find(&lines, "response")["response"]["stopReason"],
        json!("end_turn")
    );
    assert_eq!(
        last_message(&server),
        json!({"role": "user", "content": [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}},
        ]})
    );
}

#[tokio::test]
async fn an_image_prompt_reaches_an_anthropic_model_as_a_base64_image_block() {
    require_client();
    let server = MockServer::start().await;
    server.push(anthropic_answer("A red pixel."));
    let lines = run(&server, Provider::Anthropic("claude-sonnet-4-5")).await;
    assert_eq!(
        find(&lines, "initialize")["response"]["agentCapabilities"]["promptCapabilities"]["image"],
        json!(true)
    );
    assert_eq!(
        find(&lines, "response")["response"]["stopReason"],
        json!("end_turn")
    );
    assert_eq!(
        last_message(&server),
        json!({"role": "user", "content": [
            {"type": "text", "text": "What is in this picture?"},
            // The last block carries the prompt cache's breakpoint.
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG},
             "cache_control": {"type": "ephemeral"}},
        ]})
    );
}

#[tokio::test]
async fn an_image_prompt_to_a_text_only_model_is_an_error_and_nothing_is_sent() {
    require_client();
    let server = MockServer::start().await;
    let lines = run(&server, Provider::OpenAi("deepseek-chat")).await;
    assert_eq!(
        find(&lines, "initialize")["response"]["agentCapabilities"]["promptCapabilities"]
            .get("image")
            .cloned()
            .unwrap_or(json!(false)),
        json!(false)
    );
    let error = find(&lines, "error")["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        error.contains("model deepseek-chat does not accept images"),
        "{error}"
    );
    assert!(server.requests().is_empty());
}
