//! The mock server over real HTTP, driven by reqwest.

use std::time::{Duration, Instant};

use corvid_testkit::{Chunk, Gate, MockServer, ScriptedResponse, fixtures, sse_event};
use pretty_assertions::assert_eq;
use serde_json::json;

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

async fn post(server: &MockServer, path: &str, body: serde_json::Value) -> reqwest::Response {
    client()
        .post(format!("{}{path}", server.url()))
        .header("authorization", "Bearer test-key")
        .json(&body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("request failed: {e}"))
}

#[tokio::test]
async fn sse_chunks_arrive_in_order_and_the_request_is_recorded() {
    let server = MockServer::start().await;
    server.push(ScriptedResponse::sse(vec![
        sse_event(r#"{"a":1}"#),
        sse_event("[DONE]"),
    ]));

    let resp = post(&server, "/chat/completions", json!({"stream": true})).await;

    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    assert_eq!(
        resp.text().await.unwrap(),
        "data: {\"a\":1}\n\ndata: [DONE]\n\n"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].path, "/chat/completions");
    assert_eq!(requests[0].body, json!({"stream": true}));
    assert_eq!(requests[0].raw_body, br#"{"stream":true}"#.to_vec());
    assert_eq!(requests[0].header("Authorization"), Some("Bearer test-key"));
}

#[tokio::test]
async fn a_gate_holds_back_the_rest_of_the_body_until_opened() {
    let server = MockServer::start().await;
    let gate = Gate::new();
    server.push(ScriptedResponse::sse(vec![
        sse_event("first"),
        sse_event("second").gate(&gate),
        sse_event("third"),
    ]));

    let mut resp = post(&server, "/", json!({})).await;
    gate.wait_reached().await;
    assert_eq!(resp.chunk().await.unwrap().unwrap(), "data: first\n\n");
    let held = tokio::time::timeout(Duration::from_millis(100), resp.chunk()).await;
    assert!(
        held.is_err(),
        "the gated chunk arrived before the gate opened"
    );

    gate.open();
    assert_eq!(
        resp.text().await.unwrap(),
        "data: second\n\ndata: third\n\n"
    );
}

#[tokio::test]
async fn a_delayed_chunk_is_sent_after_its_delay() {
    let server = MockServer::start().await;
    server.push(ScriptedResponse::sse(vec![
        Chunk::new("a"),
        Chunk::new("b").after(Duration::from_millis(50)),
    ]));

    let started = Instant::now();
    let resp = post(&server, "/", json!({})).await;
    assert_eq!(resp.text().await.unwrap(), "ab");
    assert!(started.elapsed() >= Duration::from_millis(50));
}

#[tokio::test]
async fn a_cut_response_fails_the_body_after_its_chunks() {
    let server = MockServer::start().await;
    server.push(ScriptedResponse::sse(vec![sse_event("partial")]).cut());

    let mut resp = post(&server, "/", json!({})).await;
    assert_eq!(resp.chunk().await.unwrap().unwrap(), "data: partial\n\n");
    assert!(
        resp.chunk().await.is_err(),
        "a cut body must end in an error"
    );
}

#[tokio::test]
async fn a_hanging_response_keeps_the_body_open() {
    let server = MockServer::start().await;
    server.push(ScriptedResponse::sse(vec![sse_event("only")]).hang());

    let mut resp = post(&server, "/", json!({})).await;
    assert_eq!(resp.chunk().await.unwrap().unwrap(), "data: only\n\n");
    let next = tokio::time::timeout(Duration::from_millis(100), resp.chunk()).await;
    assert!(next.is_err(), "a hanging body must not end");
}

#[tokio::test]
async fn error_and_json_responses_carry_status_headers_and_body() {
    let server = MockServer::start().await;
    server.push(
        ScriptedResponse::error(429, r#"{"error":{"message":"slow down"}}"#)
            .header("retry-after", "2")
            .header("x-request-id", "req_1"),
    );
    server.push(ScriptedResponse::json(200, json!({"ok": true})));
    server.push(ScriptedResponse::error(503, "upstream down"));

    let resp = post(&server, "/", json!({})).await;
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "2");
    assert_eq!(resp.headers()["x-request-id"], "req_1");
    assert_eq!(resp.headers()["content-type"], "application/json");
    assert_eq!(
        resp.text().await.unwrap(),
        r#"{"error":{"message":"slow down"}}"#
    );

    let resp = post(&server, "/", json!({})).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.json::<serde_json::Value>().await.unwrap(),
        json!({"ok": true})
    );

    let resp = post(&server, "/", json!({})).await;
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.headers()["content-type"], "text/plain; charset=utf-8");
    assert_eq!(resp.text().await.unwrap(), "upstream down");
}

#[tokio::test]
async fn a_request_without_a_queued_response_gets_a_500_naming_the_problem() {
    let server = MockServer::start().await;

    let resp = post(&server, "/v1/messages", json!({})).await;

    assert_eq!(resp.status(), 500);
    assert_eq!(
        resp.text().await.unwrap(),
        "corvid-testkit: no scripted response queued that matches request #1 POST /v1/messages"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_matching_response_is_served_only_to_requests_it_matches() {
    let server = MockServer::start().await;
    server.push_matching(
        |r| r.body["stream"] != json!(true),
        ScriptedResponse::json(200, json!({"summary": "read a file"})),
    );
    server.push(ScriptedResponse::sse_body("data: main-1\n\n"));
    server.push(ScriptedResponse::sse_body("data: main-2\n\n"));

    let first = post(&server, "/", json!({"stream": true})).await;
    assert_eq!(first.text().await.unwrap(), "data: main-1\n\n");
    let summary = post(&server, "/", json!({"stream": false})).await;
    assert_eq!(
        summary.json::<serde_json::Value>().await.unwrap(),
        json!({"summary": "read a file"})
    );
    let second = post(&server, "/", json!({"stream": true})).await;
    assert_eq!(second.text().await.unwrap(), "data: main-2\n\n");
}

#[tokio::test]
async fn wait_for_requests_resolves_once_enough_requests_arrived() {
    let server = MockServer::start().await;
    server.push(ScriptedResponse::sse_body("data: x\n\n"));
    server.push(ScriptedResponse::sse_body("data: y\n\n"));
    let url = server.url();

    let sender = tokio::spawn(async move {
        for n in 0..2 {
            client()
                .post(format!("{url}/n/{n}"))
                .body("not json")
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
        }
    });
    let requests = server.wait_for_requests(2).await;
    sender.await.unwrap();

    let paths: Vec<&str> = requests.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, vec!["/n/0", "/n/1"]);
    assert_eq!(requests[0].body, serde_json::Value::Null);
    assert_eq!(requests[0].raw_body, b"not json".to_vec());
}

#[tokio::test]
async fn a_fixture_split_into_events_is_replayed_byte_for_byte() {
    let fixture = fixtures::load("openai/parallel_tool_calls");
    let server = MockServer::start().await;
    server.push(ScriptedResponse::sse(fixtures::split_into_events(
        &fixture.body,
    )));

    let resp = post(&server, "/chat/completions", json!({})).await;

    assert_eq!(resp.bytes().await.unwrap().to_vec(), fixture.body);
}
