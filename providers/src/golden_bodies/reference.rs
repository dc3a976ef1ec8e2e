//! The body builders of commit a7548ae, which built a `serde_json::Value` tree: the reference
//! the serializing builders are checked against on random histories. Kept verbatim but for
//! their names and the owned copy of the paired history they took.

use corvid_protocol::{ImageData, Message, ModelRequest, Part, Role, ToolResult};
use serde_json::{Map, Value, json};

use crate::history::{Turn, paired};
use crate::openai_chat::request::{Delivery, MaxTokensField};

/// The paired history as the old builders took it: owned messages.
fn owned(turns: Vec<Turn<'_>>) -> Vec<Message> {
    turns
        .into_iter()
        .map(|t| Message {
            role: t.role,
            parts: t
                .parts
                .into_iter()
                .map(std::borrow::Cow::into_owned)
                .collect(),
        })
        .collect()
}

/// Builds the JSON body of `POST /chat/completions`.
pub fn openai_body(request: &ModelRequest, delivery: Delivery, max_field: MaxTokensField) -> Value {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    for message in owned(paired(&request.messages)) {
        push_message(&message, &mut messages);
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters.to_value(),
                }})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(max) = request.max_output_tokens {
        let key = match max_field {
            MaxTokensField::MaxTokens => "max_tokens",
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
        };
        body.insert(key.into(), json!(max));
    }
    if let Some(temperature) = request.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    match delivery {
        Delivery::Stream => {
            body.insert("stream".into(), json!(true));
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        Delivery::Whole => {
            body.insert("stream".into(), json!(false));
        }
    }
    Value::Object(body)
}

fn push_message(message: &Message, out: &mut Vec<Value>) {
    let text: Vec<&str> = message
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::Text { text } if !text.is_empty() => Some(text.as_str()),
            _ => None,
        })
        .collect();
    match message.role {
        Role::Assistant => {
            let calls: Vec<Value> = message
                .parts
                .iter()
                .filter_map(|p| match p {
                    Part::ToolCall(c) => Some(json!({
                        "id": c.call_id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": arguments_text(&c.args)},
                    })),
                    _ => None,
                })
                .collect();
            if text.is_empty() && calls.is_empty() {
                return; // only reasoning: Chat Completions has no place to send it back
            }
            let mut m = Map::new();
            m.insert("role".into(), json!("assistant"));
            m.insert(
                "content".into(),
                if text.is_empty() {
                    Value::Null
                } else {
                    json!(text.concat())
                },
            );
            if !calls.is_empty() {
                m.insert("tool_calls".into(), Value::Array(calls));
            }
            out.push(Value::Object(m));
        }
        Role::User => {
            // Tool results must directly follow the assistant message that made the calls, and
            // a tool message takes only text: the images of the batch's results follow in one
            // user message, each group introduced by the call it belongs to.
            let mut content = Vec::new();
            for part in &message.parts {
                if let Part::ToolResult(r) = part {
                    out.push(
                        json!({"role": "tool", "tool_call_id": r.call_id, "content": tool_text(r)}),
                    );
                    if !r.images.is_empty() {
                        let intro = format!(
                            "The images returned by tool call {} ({}):",
                            r.call_id, r.name
                        );
                        content.push(json!({"type": "text", "text": intro}));
                        content.extend(r.images.iter().map(image_part));
                    }
                }
            }
            let images: Vec<Value> = message
                .parts
                .iter()
                .filter_map(|p| match p {
                    Part::Image(image) => Some(image_part(image)),
                    _ => None,
                })
                .collect();
            if content.is_empty() && images.is_empty() {
                if !text.is_empty() {
                    out.push(json!({"role": "user", "content": text.join("\n\n")}));
                }
                return;
            }
            // Images need the array form of content; the text goes first, as typed.
            content.extend(text.iter().map(|t| json!({"type": "text", "text": t})));
            content.extend(images);
            out.push(json!({"role": "user", "content": content}));
        }
    }
}

/// A tool message's text; when the result has images, it says where they went.
fn tool_text(result: &ToolResult) -> String {
    match result.images.len() {
        0 => result.output.clone(),
        n => {
            let note = format!("[{n} image(s) returned: sent in the next user message]");
            if result.output.is_empty() {
                note
            } else {
                format!("{}\n{note}", result.output)
            }
        }
    }
}

fn image_part(image: &ImageData) -> Value {
    json!({
        "type": "image_url",
        "image_url": {"url": format!("data:{};base64,{}", image.media_type, image.data_base64)},
    })
}

/// Arguments go back exactly as the model wrote them: objects re-serialised, and text that
/// did not parse (kept as a JSON string, see `parse_args`) verbatim.
fn arguments_text(args: &Value) -> String {
    match args {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}

/// Builds the JSON body of `POST /v1/messages`.
pub fn anthropic_body(request: &ModelRequest, stream: bool) -> Value {
    let mut messages: Vec<(Role, Vec<Value>)> = Vec::with_capacity(request.messages.len());
    for message in owned(paired(&request.messages)) {
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
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters.to_value()}))
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
            Part::Thought { text, signature: Some(signature), .. } if message.role == Role::Assistant => {
                Some(json!({"type": "thinking", "thinking": text, "signature": signature}))
            }
            Part::Thought { .. } => None,
            // The golden histories hold no server-side search (its pairing is tested on its own).
            Part::Hosted(block) => Some(block.data.to_value()),
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

/// The Messages API requires a limit; this one fits every current model.
const DEFAULT_MAX_TOKENS: u32 = 8192;
