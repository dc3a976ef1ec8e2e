//! `web_search` end to end (issue 31): the real binary, headless, with the model on a
//! loopback OpenAI-compatible mock and the user's `webSearch` pointing at a loopback SearXNG
//! mock answering its documented JSON shape. The call shows as `web_search` with the query,
//! and the model gets the wrapped results.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Sandbox, assert_success, chunk, json_lines, run, text_turn, usage_chunk};
use corvid_testkit::{MockServer, ScriptedResponse, sse_event};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn search_turn() -> ScriptedResponse {
    ScriptedResponse::sse(vec![
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_s", "type": "function",
                   "function": {"name": "web_search",
                                "arguments": "{\"query\":\"serde derive\",\"allowed_domains\":[\"serde.rs\"]}"}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        usage_chunk(),
        sse_event("[DONE]"),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_headless_search_reaches_the_users_service_and_the_model_gets_wrapped_results() {
    let model = MockServer::start().await;
    model.push(search_turn());
    model.push(text_turn("Serde derives with #[derive(Serialize)]."));
    let searx = MockServer::start().await;
    let fixture = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/web_search/searxng.json"
    ))
    .unwrap();
    // A GET: the mock answers it only through a matching response.
    searx.push_matching(
        |r| r.path == "/search",
        ScriptedResponse::json(200, serde_json::from_str(&fixture).unwrap()),
    );
    let sb = Sandbox::new();
    sb.user_settings(
        &json!({
            "tools": {"approvalMode": "yolo"},
            "webSearch": {"providers": [{"type": "searxng", "baseUrl": searx.url()}]}
        })
        .to_string(),
    );
    let mut cmd = sb.against(
        &model,
        "sk-test",
        &[
            "-p",
            "how do I derive serde?",
            "--output-format",
            "stream-json",
        ],
    );
    cmd.env("OPENAI_MODEL", "mock-model");
    let out = run(cmd).await;
    assert_success(&out);
    let msgs = json_lines(&out);
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
    assert_eq!(tool_use["name"], "web_search");
    assert_eq!(tool_use["input"]["query"], "serde derive");

    // The model was offered the tool, and its second request carries the wrapped results.
    let requests = model.requests();
    let offered: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(offered.contains(&"web_search"), "{offered:?}");
    let result: &Value = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    let content = result["content"].as_str().unwrap();
    assert!(
        content.starts_with("<untrusted-web-content source=\"searxng web search\">"),
        "{content}"
    );
    assert!(
        content.contains("https://serde.rs/derive.html"),
        "{content}"
    );
    // allowed_domains kept serde.rs only.
    assert!(!content.contains("github.com"), "{content}");

    let searched = searx.lookups();
    assert_eq!(searched.len(), 1);
    assert_eq!(searched[0].path, "/search");
}
