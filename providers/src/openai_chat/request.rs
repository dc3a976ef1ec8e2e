//! `ModelRequest` → Chat Completions request body.
//!
//! The body is a tree of borrowing structs serialized straight to bytes: no text of the
//! history, no schema and no image is copied before it lands in the body, and the field order
//! is the one the API has always been sent (a provider's prompt cache keys on the bytes).

use std::borrow::Cow;
use std::fmt::{self, Display};

use corvid_protocol::{ImageData, ModelRequest, Part, Role, ToolResult, ToolSchema};
use serde::{Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::history::{Turn, paired};
use crate::reasoning::ReasoningEffort;

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

/// The JSON body of `POST /chat/completions`, borrowing from its request.
#[derive(Serialize)]
pub(crate) struct Body<'a> {
    model: &'a str,
    messages: Vec<OutMessage<'a>>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tools: Vec<FunctionTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    /// `model.reasoningEffort`, for the reasoning models that take it.
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct FunctionTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function<'a>,
}

#[derive(Serialize)]
struct Function<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a RawValue,
}

impl<'a> From<&'a ToolSchema> for FunctionTool<'a> {
    fn from(tool: &'a ToolSchema) -> Self {
        Self {
            kind: "function",
            function: Function {
                name: &tool.name,
                description: &tool.description,
                parameters: tool.parameters.raw(),
            },
        }
    }
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
enum OutMessage<'a> {
    System {
        content: &'a str,
    },
    Assistant {
        /// `null` when the message only calls tools.
        content: Option<Joined<'a>>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<OutCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: Cow<'a, str>,
    },
    User {
        content: UserContent<'a>,
    },
}

#[derive(Serialize)]
struct OutCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: CallFunction<'a>,
}

#[derive(Serialize)]
struct CallFunction<'a> {
    name: &'a str,
    arguments: Arguments<'a>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum UserContent<'a> {
    Text(Joined<'a>),
    Parts(Vec<ContentPart<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentPart<'a> {
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: ImageUrl<'a> },
}

#[derive(Serialize)]
struct ImageUrl<'a> {
    url: DataUrl<'a>,
}

/// The JSON body of `POST /chat/completions`, serialized.
pub(crate) fn build_body(
    request: &ModelRequest,
    delivery: Delivery,
    max_field: MaxTokensField,
    effort: Option<ReasoningEffort>,
) -> serde_json::Result<Vec<u8>> {
    let turns = paired(&request.messages);
    serde_json::to_vec(&body(request, &turns, delivery, max_field, effort))
}

fn body<'a>(
    request: &'a ModelRequest,
    turns: &'a [Turn<'_>],
    delivery: Delivery,
    max_field: MaxTokensField,
    effort: Option<ReasoningEffort>,
) -> Body<'a> {
    let mut messages = Vec::with_capacity(turns.len() + 1);
    if !request.system.is_empty() {
        messages.push(OutMessage::System {
            content: &request.system,
        });
    }
    for turn in turns {
        push_message(turn, &mut messages);
    }
    let limit = |field| request.max_output_tokens.filter(|_| max_field == field);
    let stream = delivery == Delivery::Stream;
    Body {
        model: &request.model,
        messages,
        tools: request
            .tools
            .iter()
            .map(|t| FunctionTool::from(&**t))
            .collect(),
        max_tokens: limit(MaxTokensField::MaxTokens),
        max_completion_tokens: limit(MaxTokensField::MaxCompletionTokens),
        temperature: request.temperature,
        reasoning_effort: effort.map(ReasoningEffort::as_str),
        stream,
        stream_options: stream.then_some(StreamOptions {
            include_usage: true,
        }),
    }
}

fn push_message<'a>(turn: &'a Turn<'_>, out: &mut Vec<OutMessage<'a>>) {
    let parts = || turn.parts.iter().map(|p| &**p);
    let text: Vec<&'a str> = parts()
        .filter_map(|p| match p {
            Part::Text { text } if !text.is_empty() => Some(text.as_str()),
            _ => None,
        })
        .collect();
    match turn.role {
        Role::Assistant => {
            let calls: Vec<OutCall<'a>> = parts()
                .filter_map(|p| match p {
                    Part::ToolCall(c) => Some(OutCall {
                        id: &c.call_id,
                        kind: "function",
                        function: CallFunction {
                            name: &c.name,
                            arguments: Arguments(&c.args),
                        },
                    }),
                    _ => None,
                })
                .collect();
            if text.is_empty() && calls.is_empty() {
                return; // only reasoning: Chat Completions has no place to send it back
            }
            out.push(OutMessage::Assistant {
                content: (!text.is_empty()).then_some(Joined(text, "")),
                tool_calls: calls,
            });
        }
        Role::User => {
            // Tool results must directly follow the assistant message that made the calls, and
            // a tool message takes only text: the images of the batch's results follow in one
            // user message, each group introduced by the call it belongs to.
            let mut content = Vec::new();
            for part in parts() {
                if let Part::ToolResult(r) = part {
                    out.push(OutMessage::Tool {
                        tool_call_id: &r.call_id,
                        content: tool_text(r),
                    });
                    if !r.images.is_empty() {
                        let intro = format!(
                            "The images returned by tool call {} ({}):",
                            r.call_id, r.name
                        );
                        content.push(ContentPart::Text {
                            text: Cow::Owned(intro),
                        });
                        content.extend(r.images.iter().map(image_part));
                    }
                }
            }
            let images = parts().filter_map(|p| match p {
                Part::Image(image) => Some(image_part(image)),
                _ => None,
            });
            if content.is_empty() && !parts().any(|p| matches!(p, Part::Image(_))) {
                if !text.is_empty() {
                    out.push(OutMessage::User {
                        content: UserContent::Text(Joined(text, "\n\n")),
                    });
                }
                return;
            }
            // Images need the array form of content; the text goes first, as typed.
            content.extend(text.into_iter().map(|t| ContentPart::Text {
                text: Cow::Borrowed(t),
            }));
            content.extend(images);
            out.push(OutMessage::User {
                content: UserContent::Parts(content),
            });
        }
    }
}

/// A tool message's text; when the result has images, it says where they went.
pub(crate) fn tool_text(result: &ToolResult) -> Cow<'_, str> {
    match result.images.len() {
        0 => Cow::Borrowed(&result.output),
        n => {
            let note = format!("[{n} image(s) returned: sent in the next user message]");
            Cow::Owned(if result.output.is_empty() {
                note
            } else {
                format!("{}\n{note}", result.output)
            })
        }
    }
}

fn image_part(image: &ImageData) -> ContentPart<'_> {
    ContentPart::ImageUrl {
        image_url: ImageUrl {
            url: DataUrl(image),
        },
    }
}

/// Texts joined by a separator, written into the body without being joined first.
struct Joined<'a>(Vec<&'a str>, &'static str);

impl Display for Joined<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, text) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(self.1)?;
            }
            f.write_str(text)?;
        }
        Ok(())
    }
}

impl Serialize for Joined<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// An image as a `data:` URL, written without copying the base64 first.
pub(crate) struct DataUrl<'a>(pub(crate) &'a ImageData);

impl Display for DataUrl<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "data:{};base64,{}",
            self.0.media_type, self.0.data_base64
        )
    }
}

impl Serialize for DataUrl<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Arguments go back exactly as the model wrote them: objects re-serialised, and text that
/// did not parse (kept as a JSON string, see `parse_args`) verbatim.
pub(crate) struct Arguments<'a>(pub(crate) &'a Value);

impl Serialize for Arguments<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::String(raw) => serializer.serialize_str(raw),
            // `Value`'s `Display` is its compact JSON text.
            other => serializer.collect_str(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::{png, shot_calls, shot_result};
    use corvid_protocol::Message;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    /// The body sent for `request`, parsed back.
    fn sent(request: &ModelRequest) -> Value {
        let bytes = build_body(request, Delivery::Whole, MaxTokensField::MaxTokens, None).unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

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
        let body = sent(&request(vec![message]));
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
        let body = sent(&request(vec![calls, results]));
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
    fn the_reasoning_effort_setting_is_sent_as_reasoning_effort_and_only_when_set() {
        let req = request(vec![Message::user_text("hi")]);
        let with = build_body(
            &req,
            Delivery::Stream,
            MaxTokensField::MaxCompletionTokens,
            Some(ReasoningEffort::Low),
        )
        .unwrap();
        let with: Value = serde_json::from_slice(&with).unwrap();
        assert_eq!(with["reasoning_effort"], "low");
        assert!(sent(&req).get("reasoning_effort").is_none());
    }

    #[test]
    fn a_text_only_user_message_keeps_the_string_content() {
        let body = sent(&request(vec![Message::user_text("hi")]));
        assert_eq!(body["messages"], json!([{"role": "user", "content": "hi"}]));
    }
}
