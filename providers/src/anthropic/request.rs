//! `ModelRequest` → Messages API request body.
//!
//! The body is a tree of borrowing structs serialized straight to bytes: no text of the
//! history, no schema and no image is copied before it lands in the body, and the field order
//! is the one the API has always been sent (the prompt cache keys on the bytes).

use std::borrow::Cow;

use corvid_protocol::{ImageData, ModelRequest, Part, Role, ToolSchema};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::server_search::{self, ServerTool, ServerWebSearch};
use crate::history::{Turn, paired};

/// The Messages API requires a limit; this one fits every current model.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The JSON body of `POST /v1/messages`, borrowing from its request.
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<[Block<'a>; 1]>,
    messages: Vec<OutMessage<'a>>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tools: Vec<AnyTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    stream: bool,
}

/// A client tool corvid runs, or the API's own search.
#[derive(Serialize)]
#[serde(untagged)]
enum AnyTool<'a> {
    Client(OutTool<'a>),
    Server(ServerTool),
}

#[derive(Serialize)]
struct OutTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a RawValue,
}

impl<'a> From<&'a ToolSchema> for OutTool<'a> {
    fn from(tool: &'a ToolSchema) -> Self {
        Self {
            name: &tool.name,
            description: &tool.description,
            input_schema: tool.parameters.raw(),
        }
    }
}

#[derive(Serialize)]
struct OutMessage<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

/// One content block; `cache_control`, when set, is its last field.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Cow<'a, Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: ResultContent<'a>,
        #[serde(skip_serializing_if = "is_false")]
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Image {
        source: Source<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// A server tool's block (`server_tool_use`, `web_search_tool_result`) as the API sent it.
    #[serde(untagged)]
    Hosted(&'a RawValue),
}

impl Block<'_> {
    /// Puts a cache breakpoint on this block; `false` for a block that cannot carry one.
    fn mark(&mut self) -> bool {
        match self {
            Self::Thinking { .. } | Self::Hosted(_) => false,
            Self::Text { cache_control, .. }
            | Self::ToolUse { cache_control, .. }
            | Self::ToolResult { cache_control, .. }
            | Self::Image { cache_control, .. } => {
                *cache_control = Some(EPHEMERAL);
                true
            }
        }
    }
}

fn is_false(value: &bool) -> bool {
    !value
}

#[derive(Serialize)]
#[serde(untagged)]
enum ResultContent<'a> {
    Text(&'a str),
    Blocks(Vec<Block<'a>>),
}

#[derive(Serialize)]
struct Source<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: &'a str,
}

/// The JSON body of `POST /v1/messages`, serialized.
/// With `search`, the API's own web search is offered beside the client tools.
pub(crate) fn build_body(
    request: &ModelRequest,
    stream: bool,
    search: Option<ServerWebSearch>,
) -> serde_json::Result<Vec<u8>> {
    let turns = paired(&request.messages);
    let server = search.and_then(|s| s.tool(&turns, !request.tools.is_empty()));
    serde_json::to_vec(&body(request, &turns, stream, server))
}

fn body<'a>(
    request: &'a ModelRequest,
    turns: &'a [Turn<'_>],
    stream: bool,
    server: Option<ServerTool>,
) -> Body<'a> {
    let mut messages: Vec<(Role, Vec<Block<'a>>)> = Vec::with_capacity(turns.len());
    for turn in turns {
        let blocks = blocks(turn);
        if blocks.is_empty() {
            continue;
        }
        match messages.last_mut() {
            // Dropping an empty message can leave two of one role next to each other.
            Some((role, existing)) if *role == turn.role => existing.extend(blocks),
            _ => messages.push((turn.role, blocks)),
        }
    }
    let mut messages: Vec<OutMessage<'a>> = messages
        .into_iter()
        .map(|(role, mut blocks)| {
            // tool_result blocks must open a user message.
            blocks.sort_by_key(|b| !matches!(b, Block::ToolResult { .. }));
            let role = match role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            OutMessage {
                role,
                content: blocks,
            }
        })
        .collect();
    mark_cache_breakpoints(&mut messages);
    Body {
        model: &request.model,
        max_tokens: request.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        // The tools and the system prompt are the same every turn: one breakpoint caches both.
        system: (!request.system.is_empty()).then(|| {
            [Block::Text {
                text: &request.system,
                cache_control: Some(EPHEMERAL),
            }]
        }),
        messages,
        tools: request
            .tools
            .iter()
            .map(|t| AnyTool::Client(OutTool::from(&**t)))
            .chain(server.map(AnyTool::Server))
            .collect(),
        temperature: request.temperature,
        stream,
    }
}

/// A cache breakpoint: the prefix up to the block carrying it is cached for a few minutes.
const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

#[derive(Serialize)]
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
fn mark_cache_breakpoints(messages: &mut [OutMessage<'_>]) {
    for message in messages.iter_mut().rev().take(CACHED_MESSAGES) {
        for block in message.content.iter_mut().rev() {
            if block.mark() {
                break;
            }
        }
    }
}

fn blocks<'a>(turn: &'a Turn<'_>) -> Vec<Block<'a>> {
    let hosted = server_search::complete_pairs(turn);
    turn.parts
        .iter()
        .filter_map(|part| match &**part {
            // The API rejects empty text blocks.
            Part::Text { text } if text.is_empty() => None,
            Part::Text { text } => Some(text_block(text)),
            // Only signed thinking can be sent back; an unsigned one would be rejected.
            Part::Thought {
                text,
                signature: Some(signature),
                ..
            } if turn.role == Role::Assistant => Some(Block::Thinking {
                thinking: text,
                signature,
            }),
            Part::Thought { .. } => None,
            Part::ToolCall(call) => Some(Block::ToolUse {
                id: &call.call_id,
                name: &call.name,
                // Arguments that never parsed into an object cannot be a tool_use input.
                input: if call.args.is_object() {
                    Cow::Borrowed(&call.args)
                } else {
                    Cow::Owned(Value::Object(Map::new()))
                },
                cache_control: None,
            }),
            Part::ToolResult(result) => Some(Block::ToolResult {
                tool_use_id: &result.call_id,
                content: tool_result_content(&result.output, &result.images),
                is_error: result.is_error,
                cache_control: None,
            }),
            Part::Image(image) => Some(image_block(image)),
            Part::Hosted(block) => hosted
                .contains(block.call_id.as_str())
                .then(|| Block::Hosted(block.data.raw())),
        })
        .collect()
}

fn text_block(text: &str) -> Block<'_> {
    Block::Text {
        text,
        cache_control: None,
    }
}

/// A tool result's content: its text as a string, or, when the tool returned images, a list
/// of a text block (the API rejects empty ones) and the image blocks.
fn tool_result_content<'a>(output: &'a str, images: &'a [ImageData]) -> ResultContent<'a> {
    if images.is_empty() {
        return ResultContent::Text(output);
    }
    let text = (!output.is_empty()).then(|| text_block(output));
    ResultContent::Blocks(
        text.into_iter()
            .chain(images.iter().map(image_block))
            .collect(),
    )
}

fn image_block(image: &ImageData) -> Block<'_> {
    Block::Image {
        source: Source {
            kind: "base64",
            media_type: &image.media_type,
            data: &image.data_base64,
        },
        cache_control: None,
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
    fn sent(request: &ModelRequest, stream: bool) -> Value {
        serde_json::from_slice(&build_body(request, stream, None).unwrap()).unwrap()
    }

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
            sent(&request, false)["messages"],
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
            sent(&request, false)["messages"][1],
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
                            provider_data: None,
                        },
                    ],
                },
            ]
            .into(),
            tools: Vec::new(),
            max_output_tokens: None,
            temperature: None,
        };
        let body = sent(&request, true);
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
