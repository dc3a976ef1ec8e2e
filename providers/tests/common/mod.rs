//! Fixture loading shared by the provider tests.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use corvid_protocol::{StreamItem, Usage};
use corvid_providers::{ApiKey, EventStream, ProviderConfig, WireProtocol, decode_body};
use corvid_testkit::{MockServer, ScriptedResponse, fixtures};
use futures::StreamExt;
use serde_json::Value;

/// A safety net so a buffering bug fails the test instead of hanging it (not a timing check).
pub const LIMIT: Duration = Duration::from_secs(10);

/// A config aimed at the mock server; installs the TLS provider reqwest needs before any client is built.
pub fn config(
    server: &MockServer,
    key: &str,
    extra_headers: Vec<(String, String)>,
) -> ProviderConfig {
    let _ = rustls::crypto::ring::default_provider().install_default();
    ProviderConfig {
        base_url: server.url(),
        api_key: ApiKey::new(key),
        extra_headers,
        ..ProviderConfig::default()
    }
}

/// The next item of a provider stream, failing the test if the stream stalls.
pub async fn next(stream: &mut EventStream) -> Option<StreamItem> {
    tokio::time::timeout(LIMIT, stream.next())
        .await
        .expect("stream stalled")
}

/// Every item of a provider stream until it ends.
pub async fn drain(mut stream: EventStream) -> Vec<StreamItem> {
    let mut items = Vec::new();
    while let Some(item) = next(&mut stream).await {
        items.push(item);
    }
    items
}

/// A mock server that sends a recorded body back one SSE event per chunk, as a real server does.
pub async fn replaying_events(body: &[u8]) -> MockServer {
    let server = MockServer::start().await;
    server.push(ScriptedResponse::sse(fixtures::split_into_events(body)));
    server
}

/// What the offline decoder yields for a whole body: a provider over HTTP must yield the same.
pub fn decoded(protocol: WireProtocol, body: &[u8]) -> Vec<StreamItem> {
    decode_body(protocol, body)
        .into_iter()
        .map(|e| e.item)
        .collect()
}

/// One recorded body with its sidecar.
#[derive(Debug)]
pub struct Fixture {
    pub name: String,
    pub body: Vec<u8>,
    pub expected: Value,
}

impl Fixture {
    pub fn protocol(&self) -> Option<WireProtocol> {
        match self.expected["protocol"].as_str() {
            Some("openai-chat") => Some(WireProtocol::OpenAiChat),
            Some("anthropic-messages") => Some(WireProtocol::AnthropicMessages),
            Some("openai-responses") => Some(WireProtocol::OpenAiResponses),
            Some("gemini") => Some(WireProtocol::Gemini),
            _ => None,
        }
    }

    /// The sidecar's usage in corvid's normalised shape (absent fields default as ours do).
    pub fn expected_usage(&self) -> Option<Usage> {
        let u = self.expected.get("usage").filter(|u| !u.is_null())?;
        let n = |k: &str| u.get(k).and_then(Value::as_u64);
        let input = n("input_tokens").unwrap_or(0);
        let output = n("output_tokens").unwrap_or(0);
        Some(Usage {
            input_tokens: input,
            output_tokens: output,
            total_tokens: n("total_tokens").unwrap_or(input + output),
            cached_input_tokens: n("cached_input_tokens")
                .or(n("cache_read_input_tokens"))
                .unwrap_or(0),
            reasoning_tokens: n("reasoning_tokens").unwrap_or(0),
        })
    }
}

pub fn fixture_dir() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/sse")).to_path_buf()
}

/// Every `*.sse` fixture, sorted by path.
pub fn all_fixtures() -> Vec<Fixture> {
    let mut paths = Vec::new();
    for dir in std::fs::read_dir(fixture_dir()).expect("fixture dir") {
        let dir = dir.expect("entry").path();
        if !dir.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&dir).expect("fixture subdir") {
            let file = file.expect("entry").path();
            if file.extension().is_some_and(|e| e == "sse") {
                paths.push(file);
            }
        }
    }
    paths.sort();
    paths.into_iter().map(|p| load(&p)).collect()
}

pub fn fixture(name: &str) -> Fixture {
    load(&fixture_dir().join(name))
}

fn load(path: &Path) -> Fixture {
    let sidecar = path.with_extension("expected.json");
    let name = path
        .strip_prefix(fixture_dir())
        .expect("under fixture dir")
        .to_string_lossy()
        .into_owned();
    Fixture {
        name,
        body: std::fs::read(path).expect("fixture body"),
        expected: serde_json::from_slice(&std::fs::read(&sidecar).expect("sidecar"))
            .expect("sidecar json"),
    }
}
