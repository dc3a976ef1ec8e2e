//! Histories the request-body tests of both providers build: `shot` calls that return images.

use corvid_protocol::{ImageData, Message, Part, Role, ToolCall, ToolResult};
use serde_json::json;

/// A tiny PNG as a tool or prompt carries it.
pub fn png() -> ImageData {
    ImageData {
        media_type: "image/png".into(),
        data_base64: "iVBORw==".into(),
    }
}

/// The assistant message calling `shot` once per id.
pub fn shot_calls(ids: &[&str]) -> Message {
    Message {
        role: Role::Assistant,
        parts: ids
            .iter()
            .map(|id| {
                Part::ToolCall(ToolCall {
                    call_id: (*id).into(),
                    name: "shot".into(),
                    args: json!({}),
                })
            })
            .collect(),
    }
}

/// A successful `shot` result with this text and these images.
pub fn shot_result(id: &str, output: &str, images: Vec<ImageData>) -> Part {
    Part::ToolResult(ToolResult {
        call_id: id.into(),
        name: "shot".into(),
        output: output.into(),
        is_error: false,
        images,
    })
}
