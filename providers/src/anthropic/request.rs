//! `ModelRequest` → Messages API request body.

use corvid_protocol::{ImageData, Message, ModelRequest, Part, Role};
use serde_json::{Map, Value, json};

use crate::history::paired;

/// The Messages API requires a limit; this one fits every current model.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// Builds the JSON body of `POST /v1/messages`.
pub(crate) fn build_body(request: &ModelRequest, stream: bool) -> Value {
    let mut messages: Vec<(Role, Vec<Value>)> = Vec::with_capacity(request.messages.len());
    for message in paired(&request.messages) {
        let blocks = blocks(&message);
        if blocks.is_empty() {
            continue;
        }
        match messages.last_mut() {
            // Dropping an empty message can leave two of one role next to each other.
            Some((role, existing)) if *role == message.role => existing.extend(blocks),
            _ => messages.push((message.role, blocks)),
        }
    }
    let mut messages: Vec<Value> = messages
        .into_iter()
        .map(|(role, mut blocks)| {
            // tool_result blocks must open a user message.
            blocks.sort_by_key(|b| b["type"] != "tool_result");
            let role = match role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            json!({"role": role, "content": blocks})
        })
        .collect();
    mark_cache_breakpoints(&mut messages);
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert(
        "max_tokens".into(),
        json!(request.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
    );
    if !request.system.is_empty() {
        // The tools and the system prompt are the same every turn: one breakpoint caches both.
        body.insert(
            "system".into(),
            json!([{"type": "text", "text": request.system, "cache_control": EPHEMERAL}]),
        );
    }
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(temperature) = request.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    body.insert("stream".into(), json!(stream));
    Value::Object(body)
}

/// A cache breakpoint: the prefix up to the block carrying it is cached for a few minutes.
const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

#[derive(serde::Serialize)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

/// How many of the last messages get a breakpoint: the newest, so the next turn reads this
/// one's prefix from the cache, and the one before, whose prefix this turn reads (a turn may
/// add more blocks than the API looks back over from a single breakpoint).
const CACHED_MESSAGES: usize = 2;

/// Puts a breakpoint on the last block of each of the last messages that can carry one
/// (thinking blocks cannot). With the system prompt's, that makes three of the four allowed.
fn mark_cache_breakpoints(messages: &mut [Value]) {
    for message in messages.iter_mut().rev().take(CACHED_MESSAGES) {
        let Some(blocks) = message["content"].as_array_mut() else {
            continue;
        };
        if let Some(block) = blocks
            .iter_mut()
            .rev()
            .find(|b| b["type"] != "thinking" && b["type"] != "redacted_thinking")
        {
            block["cache_control"] = json!(EPHEMERAL);
        }
    }
}

fn blocks(message: &Message) -> Vec<Value> {
    message
        .parts
        .iter()
        .filter_map(|part| match part {
            // The API rejects empty text blocks.
            Part::Text { text } if text.is_empty() => None,
            Part::Text { text } => Some(json!({"type": "text", "text": text})),
            // Only signed thinking can be sent back; an unsigned one would be rejected.
            Part::Thought { text, signature: Some(signature) } if message.role == Role::Assistant => {
                Some(json!({"type": "thinking", "thinking": text, "signature": signature}))
            }
            Part::Thought { .. } => None,
            Part::ToolCall(call) => {
                // Arguments that never parsed into an object cannot be a tool_use input.
                let input = if call.args.is_object() { call.args.clone() } else { json!({}) };
                Some(json!({"type": "tool_use", "id": call.call_id, "name": call.name, "input": input}))
            }
            Part::ToolResult(result) => {
                let mut block = json!({
                    "type": "tool_result", "tool_use_id": result.call_id,
                    "content": tool_result_content(&result.output, &result.images),
                });
                if result.is_error {
                    block["is_error"] = json!(true);
                }
                Some(block)
            }
            Part::Image(image) => Some(image_block(image)),
        })
        .collect()
}

/// A tool result's content: its text as a string, or, when the tool returned images, a list
/// of a text block (the API rejects empty ones) and the image blocks.
fn tool_result_content(output: &str, images: &[ImageData]) -> Value {
    if images.is_empty() {
        return json!(output);
    }
    let text = (!output.is_empty()).then(|| json!({"type": "text", "text": output}));
    Value::Array(
        text.into_iter()
            .chain(images.iter().map(image_block))
            .collect(),
    )
}

fn image_block(image: &ImageData) -> Value {
    json!({
        "type": "image",
        "source": {"type": "base64", "media_type": image.media_type, "data": image.data_base64},
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::{png, shot_calls, shot_result};
    use pretty_assertions::assert_eq;

    #[test]
    fn an_image_is_a_base64_image_block_after_the_text() {
        let request = ModelRequest {
            model: "claude-sonnet-4-5".into(),
            system: String::new(),
            messages: vec![Message {
                role: Role::User,
                parts: vec![
                    Part::Text {
                        text: "what is this?".into(),
                    },
                    Part::Image(ImageData {
                        media_type: "image/jpeg".into(),
                        data_base64: "/9j/4A==".into(),
                    }),
                ],
            }]
            .into(),
            tools: Vec::new(),
            max_output_tokens: None,
            temperature: None,
        };
        assert_eq!(
            build_body(&request, false)["messages"],
            json!([{"role": "user", "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4A=="},
                 "cache_control": {"type": "ephemeral"}},
            ]}])
        );
    }

    #[test]
    fn a_tool_results_images_follow_its_text_inside_the_tool_result_block() {
        let request = ModelRequest {
            model: "claude-sonnet-4-5".into(),
            system: String::new(),
            messages: vec![
                shot_calls(&["a", "b"]),
                Message {
                    role: Role::User,
                    parts: vec![
                        shot_result("a", "a tiny image", vec![png()]),
                        shot_result("b", "", vec![png()]),
                    ],
                },
            ]
            .into(),
            tools: Vec::new(),
            max_output_tokens: None,
            temperature: None,
        };
        let image = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="}});
        assert_eq!(
            build_body(&request, false)["messages"][1],
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": [
                    {"type": "text", "text": "a tiny image"}, image,
                ]},
                {"type": "tool_result", "tool_use_id": "b", "content": [image],
                 "cache_control": {"type": "ephemeral"}},
            ]})
        );
    }

    #[test]
    fn breakpoints_go_on_the_last_cacheable_block_of_the_last_two_messages_only() {
        let text = |role, t: &str| Message {
            role,
            parts: vec![Part::Text { text: t.into() }],
        };
        let request = ModelRequest {
            model: "claude-sonnet-4-5".into(),
            system: "sys".into(),
            messages: vec![
                text(Role::User, "one"),
                text(Role::Assistant, "two"),
                text(Role::User, "three"),
                Message {
                    role: Role::Assistant,
                    parts: vec![
                        Part::Text {
                            text: "four".into(),
                        },
                        Part::Thought {
                            text: "hm".into(),
                            signature: Some("sig".into()),
                        },
                    ],
                },
            ]
            .into(),
            tools: Vec::new(),
            max_output_tokens: None,
            temperature: None,
        };
        let body = build_body(&request, true);
        let marked: Vec<String> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["content"].as_array().unwrap().clone())
            .filter(|b| !b["cache_control"].is_null())
            .map(|b| b["text"].as_str().unwrap_or("").to_owned())
            .collect();
        assert_eq!(marked, vec!["three", "four"]);
        assert_eq!(
            body["system"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
    }
}
