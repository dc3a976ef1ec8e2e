//! OpenAI Chat Completions SSE chunks for end-to-end tests against the testkit server.

use corvid_testkit::{Chunk, sse_event};
use serde_json::json;

fn chunk(delta: serde_json::Value, finish: Option<&str>) -> Chunk {
    sse_event(
        &json!({
            "id": "chatcmpl-test",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
        })
        .to_string(),
    )
}

/// Visible text.
pub fn text(t: &str) -> Chunk {
    chunk(json!({"content": t}), None)
}

/// The first delta of a call: id and name known (the preparing point).
pub fn call_start(index: u32, id: &str, name: &str) -> Chunk {
    chunk(
        json!({"tool_calls": [{"index": index, "id": id, "type": "function",
            "function": {"name": name, "arguments": ""}}]}),
        None,
    )
}

/// An argument fragment of the call at `index`.
pub fn call_args(index: u32, fragment: &str) -> Chunk {
    chunk(
        json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}),
        None,
    )
}

/// The finish chunk.
pub fn finish(reason: &str) -> Chunk {
    chunk(json!({}), Some(reason))
}

/// A usage-only chunk.
pub fn usage(prompt: u64, completion: u64) -> Chunk {
    sse_event(
        &json!({"id": "chatcmpl-test", "object": "chat.completion.chunk", "choices": [],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                "total_tokens": prompt + completion}})
        .to_string(),
    )
}

/// The end of the stream.
pub fn done() -> Chunk {
    Chunk::new("data: [DONE]\n\n")
}
