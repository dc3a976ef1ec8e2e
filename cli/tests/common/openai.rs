//! Scripted answers of the loopback mock OpenAI-compatible provider, in the shape real
//! servers stream them.

use corvid_testkit::{Chunk, MockServer, ScriptedResponse, sse_event};
use serde_json::{Value, json};
use tokio::process::Command;

use super::Sandbox;

impl Sandbox {
    /// `corvid ARGS` with `server` as its OpenAI-compatible provider, authenticated with `key`.
    pub fn against(&self, server: &MockServer, key: &str, args: &[&str]) -> Command {
        let mut cmd = self.corvid(args);
        cmd.env("OPENAI_API_KEY", key)
            .env("OPENAI_BASE_URL", server.url());
        cmd
    }
}

/// One `chat.completion.chunk` event carrying `delta`, ending the choice with `finish` if set.
pub fn chunk(delta: Value, finish: Option<&str>) -> Chunk {
    sse_event(
        &json!({
            "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "mock-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })
        .to_string(),
    )
}

/// The usage chunk a server sends last when asked for `include_usage`: 10 in, 5 out.
pub fn usage_chunk() -> Chunk {
    sse_event(
        &json!({
            "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "mock-model",
            "choices": [],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        })
        .to_string(),
    )
}

/// A whole turn: `delta`, then the `finish` reason, the usage and `[DONE]`.
pub fn turn(delta: Value, finish: &str) -> Vec<Chunk> {
    vec![
        chunk(delta, None),
        chunk(json!({}), Some(finish)),
        usage_chunk(),
        sse_event("[DONE]"),
    ]
}

/// A turn answering `text` and stopping.
pub fn text_turn(text: &str) -> ScriptedResponse {
    ScriptedResponse::sse(turn(json!({"role": "assistant", "content": text}), "stop"))
}

/// The fast model's non-streamed answer `label` (7 in, 3 out) to a tool-use summary request.
pub fn label_answer(label: &str) -> ScriptedResponse {
    ScriptedResponse::json(
        200,
        json!({
            "id": "c", "object": "chat.completion", "created": 1, "model": "mock-fast",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": label}}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
        }),
    )
}
