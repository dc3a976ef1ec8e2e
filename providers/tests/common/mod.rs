//! Fixture loading shared by the provider tests.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use corvid_protocol::Usage;
use corvid_providers::WireProtocol;
use serde_json::Value;

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
