//! Headless mode on the Gemini API over loopback HTTP: a tool call executed and its
//! `functionResponse` sent back with the call's signature, and a malformed function call
//! retried once with a nudge (SPEC §2.4).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Sandbox, assert_success, json_lines, run, stderr};
use corvid_testkit::{MockServer, ScriptedResponse, fixtures, sse_event};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const KEY: &str = "AIza-test-headless-gemini";
const SIGNATURE: &str = "CiQB0e2Kb3Vx9m2pH1nVqk6yZt0QpC5mJYxR8m8Vn4Q0B8o2Yx0KYQHR7Ypp";

/// `corvid ARGS` with only a Gemini key (the provider is inferred from it), retrying at once.
fn against(sb: &Sandbox, server: &MockServer, args: &[&str]) -> tokio::process::Command {
    sb.user_settings(r#"{ "retry": { "maxAttempts": 3, "initialDelayMs": 1, "maxDelayMs": 2 } }"#);
    let mut cmd = sb.corvid(args);
    cmd.env("GEMINI_API_KEY", KEY)
        .env("GEMINI_BASE_URL", server.url())
        .env("GEMINI_MODEL", "gemini-2.5-pro");
    cmd
}

/// One `GenerateContentResponse` chunk of the model's `parts`, finished with `finish`.
fn chunk(parts: Value, finish: Option<&str>) -> corvid_testkit::Chunk {
    let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
    if let Some(finish) = finish {
        candidate["finishReason"] = json!(finish);
    }
    sse_event(
        &json!({"candidates": [candidate],
                "usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": 10,
                                  "thoughtsTokenCount": 5, "totalTokenCount": 65},
                "modelVersion": "gemini-2.5-pro"})
        .to_string(),
    )
}

fn replay(server: &MockServer, name: &str) {
    let fixture = fixtures::load(&format!("gemini-api/{name}"));
    server.push(ScriptedResponse::sse(fixtures::split_into_events(
        &fixture.body,
    )));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_runs_and_its_function_response_goes_back_with_the_call_s_signature() {
    let server = MockServer::start().await;
    server.push(ScriptedResponse::sse(vec![
        chunk(
            json!([{"text": "**Reading** main.rs first.", "thought": true}]),
            None,
        ),
        chunk(
            json!([{"functionCall": {"name": "read_file", "args": {"file_path": "main.rs"}},
                    "thoughtSignature": SIGNATURE}]),
            Some("STOP"),
        ),
    ]));
    replay(&server, "text_only");
    let sb = Sandbox::new();
    let out = run(against(
        &sb,
        &server,
        &[
            "-p",
            "what is in main.rs?",
            "--output-format",
            "stream-json",
        ],
    ))
    .await;
    assert_success(&out);
    let msgs = json_lines(&out);
    assert_eq!(
        msgs.last().unwrap()["result"],
        "Hello there! How can I help?"
    );
    let tool_use = msgs
        .iter()
        .flat_map(|m| {
            m["message"]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .find(|b| b["type"] == "tool_use")
        .expect("a tool_use block");
    assert_eq!(tool_use["name"], "read_file");
    assert!(
        tool_use["id"].as_str().unwrap().starts_with("gemini_"),
        "{tool_use}"
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].path,
        "/models/gemini-2.5-pro:streamGenerateContent"
    );
    assert_eq!(requests[0].header("x-goog-api-key"), Some(KEY));
    let contents = requests[1].body["contents"].as_array().unwrap().clone();
    assert_eq!(contents.len(), 3, "{contents:?}");
    assert_eq!(
        contents[1],
        json!({"role": "model", "parts": [
            {"functionCall": {"name": "read_file", "args": {"file_path": "main.rs"}},
             "thoughtSignature": SIGNATURE}]})
    );
    let response = &contents[2]["parts"][0]["functionResponse"];
    assert_eq!(response["name"], "read_file");
    assert!(
        response["response"]["output"]
            .as_str()
            .unwrap()
            .contains("fn main() {}"),
        "{response}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_function_call_is_asked_again_once_with_a_nudge_and_the_task_goes_on() {
    let server = MockServer::start().await;
    replay(&server, "malformed_function_call");
    replay(&server, "text_only");
    let sb = Sandbox::new();
    let out = run(against(&sb, &server, &["-p", "read config.toml"])).await;
    assert_success(&out);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let last_user = |body: &Value| {
        let contents = body["contents"].as_array().unwrap();
        contents.last().unwrap()["parts"].clone()
    };
    assert_eq!(
        last_user(&requests[0].body),
        json!([{"text": "read config.toml"}])
    );
    let nudged = last_user(&requests[1].body);
    assert_eq!(nudged[0], json!({"text": "read config.toml"}));
    assert!(
        nudged[1]["text"]
            .as_str()
            .unwrap()
            .contains("malformed function call"),
        "{nudged}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_malformed_call_fails_the_task_with_a_clear_error_after_two_requests() {
    let server = MockServer::start().await;
    for _ in 0..3 {
        replay(&server, "malformed_function_call");
    }
    let sb = Sandbox::new();
    let out = run(against(&sb, &server, &["-p", "read config.toml"])).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("malformed function call again") && err.contains("switch models"),
        "{err}"
    );
    assert_eq!(
        server.requests().len(),
        2,
        "one retry, not the retry policy's three"
    );
}
