//! Headless mode against hostile or misconfigured servers, through the real binary: echoed
//! secrets never reach stdout, stderr, the log or the recording; a web page is reported at
//! once; a silent stream fails naming its setting.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::{Sandbox, json_lines, kind, run, stderr, stdout};
use corvid_testkit::{MockServer, ScriptedResponse};
use pretty_assertions::assert_eq;
use serde_json::json;

const KEY: &str = "sk-main-echoed-4242424242";
const FAST_KEY: &str = "sk-fast-echoed-1313131313";

/// Every file under `dir`, read as text.
fn all_text_under(dir: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            text.push_str(&all_text_under(&path));
        } else {
            text.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap()));
        }
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_in_error_bodies_are_redacted() {
    let server = MockServer::start().await;
    let echo = format!("Incorrect API key provided: {KEY} (fast: {FAST_KEY})");
    // A retried 500 as plain text, then a final 401 in JSON, each echoing both keys.
    server.push(ScriptedResponse::error(500, echo.clone()));
    server.push(ScriptedResponse::json(
        401,
        json!({"error": {"message": echo, "type": "invalid_request_error"}}),
    ));
    let sb = Sandbox::new();
    sb.user_settings(
        r#"{"fastModel": {"name": "fast-model", "apiKeyEnv": "CORVID_FAST_KEY"},
            "retry": {"maxAttempts": 3, "initialDelayMs": 1, "maxDelayMs": 1}}"#,
    );
    let mut cmd = sb.against(
        &server,
        KEY,
        &["-p", "hi", "--output-format", "stream-json"],
    );
    cmd.env("OPENAI_MODEL", "mock-model")
        .env("CORVID_FAST_KEY", FAST_KEY)
        .env("CORVID_LOG", "debug");
    let out = run(cmd).await;
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));

    let lines = json_lines(&out);
    let kinds: Vec<String> = lines.iter().map(kind).collect();
    assert_eq!(
        kinds,
        ["system/init", "system/retry", "result"].map(String::from)
    );
    let result = lines.last().unwrap();
    assert_eq!(result["is_error"], true);
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .contains("Incorrect API key provided: <redacted> (fast: <redacted>)"),
        "{result}"
    );
    let everything = format!(
        "{}\n{}\n{}",
        stdout(&out),
        stderr(&out),
        all_text_under(sb.home.path())
    );
    for secret in [KEY, FAST_KEY] {
        assert!(
            !everything.contains(secret),
            "{secret} leaked:\n{everything}"
        );
    }
    // The debug log really ran (so its silence about the key means something).
    assert!(
        stderr(&out).contains("model request failed"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_html_page_is_reported_at_once_as_a_misconfigured_base_url() {
    let server = MockServer::start().await;
    server.push(
        ScriptedResponse::sse_body("<!doctype html><html><body>Router login</body></html>")
            .header("content-type", "text/html"),
    );
    let sb = Sandbox::new();
    let mut cmd = sb.against(&server, KEY, &["-p", "hi"]);
    cmd.env("OPENAI_MODEL", "mock-model");
    let out = run(cmd).await;
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("bad_response error: ")
            && err.contains("answered HTTP 200 with content type text/html and a body starting `<!doctype html><html><body>Router login</body></html>`")
            && err.contains("model.baseUrl probably points at a web page"),
        "{err}"
    );
    assert!(!err.contains("retrying"), "{err}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_stream_fails_naming_the_idle_timeout_setting() {
    let server = MockServer::start().await;
    server.push(ScriptedResponse::sse(Vec::new()).hang());
    let sb = Sandbox::new();
    sb.user_settings(r#"{"model": {"streamIdleTimeoutMs": 200}, "retry": {"maxAttempts": 1}}"#);
    let mut cmd = sb.against(&server, KEY, &["-p", "hi", "--output-format", "json"]);
    cmd.env("OPENAI_MODEL", "mock-model");
    let out = run(cmd).await;
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    let result = &json_lines(&out)[0];
    let error = result["error"].as_str().unwrap();
    assert!(
        error.starts_with("network error: the provider at ")
            && error.contains("sent nothing for 200 ms (model.streamIdleTimeoutMs)"),
        "{result}"
    );
}
