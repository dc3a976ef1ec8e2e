//! `ModelRequest` → Chat Completions request body.

use corvid_protocol::{ImageData, Message, ModelRequest, Part, Role, ToolResult};
use serde_json::{Map, Value, json};

use crate::history::paired;

/// Which field carries the output-token limit: OpenAI's reasoning models reject `max_tokens`,
/// while many compatible servers only know `max_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxTokensField {
    MaxTokens,
    MaxCompletionTokens,
}

/// Whether the request asks for a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    Stream,
    Whole,
}

/// Builds the JSON body of `POST /chat/completions`.
pub(crate) fn build_body(
    request: &ModelRequest,
    delivery: Delivery,
    max_field: MaxTokensField,
) -> Value {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    for message in paired(&request.messages) {
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
                    "name": t.name, "description": t.description, "parameters": t.parameters,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::{png, shot_calls, shot_result};
    use pretty_assertions::assert_eq;

    fn request(messages: Vec<Message>) -> ModelRequest {
        ModelRequest {
            model: "gpt-4o".into(),
            system: String::new(),
            messages: messages.into(),
            tools: Vec::new(),
            max_output_tokens: None,
            temperature: None,
        }
    }

    #[test]
    fn an_image_is_an_image_url_part_after_the_text_of_the_user_message() {
        let message = Message {
            role: Role::User,
            parts: vec![
                Part::Text {
                    text: "what is this?".into(),
                },
                Part::Image(png()),
            ],
        };
        let body = build_body(
            &request(vec![message]),
            Delivery::Whole,
            MaxTokensField::MaxTokens,
        );
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
            ]}])
        );
    }

    #[test]
    fn a_batchs_tool_images_follow_its_tool_messages_in_one_user_message_naming_each_call() {
        let calls = shot_calls(&["a", "b", "c"]);
        let results = Message {
            role: Role::User,
            parts: vec![
                shot_result("a", "one image", vec![png()]),
                shot_result("b", "no image", Vec::new()),
                shot_result("c", "", vec![png(), png()]),
            ],
        };
        let body = build_body(
            &request(vec![calls, results]),
            Delivery::Whole,
            MaxTokensField::MaxTokens,
        );
        let image =
            json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}});
        assert_eq!(
            body["messages"].as_array().unwrap()[1..],
            [
                json!({"role": "tool", "tool_call_id": "a",
                       "content": "one image\n[1 image(s) returned: sent in the next user message]"}),
                json!({"role": "tool", "tool_call_id": "b", "content": "no image"}),
                json!({"role": "tool", "tool_call_id": "c",
                       "content": "[2 image(s) returned: sent in the next user message]"}),
                json!({"role": "user", "content": [
                    {"type": "text", "text": "The images returned by tool call a (shot):"},
                    image,
                    {"type": "text", "text": "The images returned by tool call c (shot):"},
                    image,
                    image,
                ]}),
            ]
        );
    }

    #[test]
    fn a_text_only_user_message_keeps_the_string_content() {
        let body = build_body(
            &request(vec![Message::user_text("hi")]),
            Delivery::Whole,
            MaxTokensField::MaxTokens,
        );
        assert_eq!(body["messages"], json!([{"role": "user", "content": "hi"}]));
    }
}
