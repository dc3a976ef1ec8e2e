//! `ModelRequest` → Responses API request body.
//!
//! Like the other builders, a tree of borrowing structs serialized straight to bytes. The
//! request is stateless (`store: false`): every turn sends the whole conversation, earlier
//! reasoning items included (their encrypted content is what lets the model keep its chain
//! of thought across tool calls).

use std::borrow::Cow;

use corvid_protocol::{HostedStep, ImageData, JsonText, ModelRequest, Part, Role, ToolSchema};
use serde::Serialize;
use serde_json::value::RawValue;

use super::ResponseStorage;
use crate::history::{Turn, paired};
use crate::openai_chat::request::{Arguments, DataUrl};
use crate::reasoning::{Reasoning, ReasoningSummary};

/// Per-provider settings that go into every body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct BodyOptions {
    /// `prompt_cache_key`: the session id, so a session's requests share the cache.
    pub cache_key: Option<String>,
    pub reasoning: Reasoning,
    /// `model.store`: whether the server keeps responses (and so can be chained on).
    pub storage: ResponseStorage,
    /// The hosted `web_search` tool, offered beside client tools only.
    pub web_search: Option<HostedSearch>,
}

/// The hosted search a session offers, from the user's `webSearch` settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct HostedSearch {
    /// The domains its searches are limited to (none: any).
    pub allowed_domains: Vec<String>,
    /// `webSearch.maxPerSession`: searches already in the history count against it.
    pub max_per_session: u32,
}

/// A request that continues a stored response: only the items after it are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Continuation<'a> {
    /// The stored response the request continues.
    pub previous_response_id: &'a str,
    /// How many of the request's messages that response already holds (its own output
    /// included): what it covers is not sent again.
    pub covered: usize,
}

/// The JSON body of `POST /responses`, borrowing from its request.
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    instructions: &'a str,
    input: Vec<Item<'a>>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<ReasoningParams>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    stream: bool,
    store: bool,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    include: &'static [&'static str],
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    previous_response_id: Option<&'a str>,
}

#[derive(Serialize)]
struct ReasoningParams {
    #[serde(skip_serializing_if = "Option::is_none")]
    effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<&'static str>,
}

/// One entry of `tools`: a client function or the API's hosted search.
#[derive(Serialize)]
#[serde(untagged)]
enum Tool<'a> {
    Function(FunctionTool<'a>),
    Hosted(HostedTool<'a>),
}

/// A tool the API runs itself (`{"type": "web_search"}`).
#[derive(Serialize)]
struct HostedTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    filters: Option<SearchFilters<'a>>,
}

/// `filters` of the hosted search: `allowed_domains` (subdomains included).
#[derive(Serialize)]
struct SearchFilters<'a> {
    allowed_domains: &'a [String],
}

/// A flat function tool (the Responses form: no `function` wrapper).
#[derive(Serialize)]
struct FunctionTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: &'a RawValue,
    strict: bool,
}

impl<'a> From<&'a ToolSchema> for FunctionTool<'a> {
    fn from(tool: &'a ToolSchema) -> Self {
        Self {
            kind: "function",
            name: &tool.name,
            description: &tool.description,
            parameters: tool.parameters.raw(),
            strict: false,
        }
    }
}

/// One input item.
#[derive(Serialize)]
#[serde(untagged)]
enum Item<'a> {
    Message(MessageItem<'a>),
    Call(CallItem<'a>),
    Output(OutputItem<'a>),
    /// A reasoning item exactly as the server sent it (minus its id).
    Verbatim(&'a RawValue),
}

#[derive(Serialize)]
struct MessageItem<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    role: &'static str,
    content: Vec<Content<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Content<'a> {
    InputText { text: Cow<'a, str> },
    InputImage { image_url: DataUrl<'a> },
    OutputText { text: &'a str },
}

#[derive(Serialize)]
struct CallItem<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    call_id: &'a str,
    name: &'a str,
    arguments: Arguments<'a>,
}

#[derive(Serialize)]
struct OutputItem<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    call_id: &'a str,
    output: Cow<'a, str>,
}

/// The JSON body of `POST /responses` (always a stream), serialized: the whole conversation,
/// or with `continuation` only what the stored response does not hold yet.
pub(crate) fn build_body(
    request: &ModelRequest,
    options: &BodyOptions,
    continuation: Option<Continuation<'_>>,
) -> serde_json::Result<Vec<u8>> {
    let turns = paired(&request.messages);
    let skip = continuation.map_or(0, |c| turns_held(&request.messages, c.covered));
    let mut input = Vec::with_capacity(turns.len() + 1);
    for turn in turns.get(skip..).unwrap_or_default() {
        push_items(turn, &mut input);
    }
    let has_tools = !request.tools.is_empty();
    // Offered while the searches in the history are under the session's cap.
    let searching = options.web_search.as_ref().is_some_and(|search| {
        let used = request
            .messages
            .iter()
            .flat_map(|m| m.parts.iter())
            .filter(|p| {
                matches!(p, Part::Hosted(b) if b.provider == super::hosted_search::PROVIDER
                    && matches!(b.step, HostedStep::Call { .. }))
            })
            .count();
        u32::try_from(used).unwrap_or(u32::MAX) < search.max_per_session
    });
    let reasoning = options.reasoning.for_model(&request.model);
    let body = Body {
        model: &request.model,
        instructions: &request.system,
        input,
        tools: request
            .tools
            .iter()
            .map(|t| Tool::Function(FunctionTool::from(&**t)))
            // Offered only beside client tools: a request without tools (a summary, a
            // compaction) searches nothing.
            .chain(
                options
                    .web_search
                    .as_ref()
                    .filter(|_| has_tools && searching)
                    .map(|search| &search.allowed_domains[..])
                    .map(|domains| {
                        Tool::Hosted(HostedTool {
                            kind: "web_search",
                            filters: (!domains.is_empty()).then_some(SearchFilters {
                                allowed_domains: domains,
                            }),
                        })
                    }),
            )
            .collect(),
        tool_choice: has_tools.then_some("auto"),
        parallel_tool_calls: has_tools.then_some(true),
        reasoning: reasoning.map(|r| ReasoningParams {
            effort: r.effort.map(|e| e.as_str()),
            summary: r
                .summary
                .filter(|s| *s != ReasoningSummary::Off)
                .map(|s| s.as_str()),
        }),
        max_output_tokens: request.max_output_tokens,
        temperature: request.temperature,
        stream: true,
        store: options.storage == ResponseStorage::Stored,
        // The searched pages' URLs, for the search card.
        include: match (reasoning.is_some(), has_tools && searching) {
            (true, true) => &[
                "reasoning.encrypted_content",
                "web_search_call.action.sources",
            ],
            (true, false) => &["reasoning.encrypted_content"],
            (false, true) => &["web_search_call.action.sources"],
            (false, false) => &[],
        },
        prompt_cache_key: options.cache_key.as_deref(),
        previous_response_id: continuation.map(|c| c.previous_response_id),
    };
    serde_json::to_vec(&body)
}

/// How many of the paired turns of `messages` come from its first `covered` messages, which
/// end with the stored response's own output (an assistant message). Pairing those alone
/// answers that output's calls with placeholders, which belong to the rest: they are not
/// counted.
fn turns_held(messages: &[corvid_protocol::Message], covered: usize) -> usize {
    let mut held = paired(messages.get(..covered).unwrap_or(messages));
    if held.last().is_some_and(|t| t.role == Role::User) {
        held.pop();
    }
    held.len()
}

fn push_items<'a>(turn: &'a Turn<'_>, out: &mut Vec<Item<'a>>) {
    match turn.role {
        Role::Assistant => {
            let mut text: Vec<Content<'a>> = Vec::new();
            let flush = |text: &mut Vec<Content<'a>>, out: &mut Vec<Item<'a>>| {
                if !text.is_empty() {
                    out.push(Item::Message(MessageItem {
                        kind: "message",
                        role: "assistant",
                        content: std::mem::take(text),
                    }));
                }
            };
            for part in turn.parts.iter().map(|p| &**p) {
                match part {
                    Part::Text { text: t } if !t.is_empty() => {
                        text.push(Content::OutputText { text: t })
                    }
                    Part::Thought {
                        provider_data: Some(data),
                        ..
                    } if is_reasoning_item(data) => {
                        flush(&mut text, out);
                        out.push(Item::Verbatim(data.raw()));
                    }
                    // This API's own searches go back as they came; other APIs' stay home.
                    Part::Hosted(block)
                        if block.provider == super::hosted_search::PROVIDER
                            && matches!(block.step, HostedStep::Call { .. }) =>
                    {
                        flush(&mut text, out);
                        out.push(Item::Verbatim(block.data.raw()));
                    }
                    Part::ToolCall(call) => {
                        flush(&mut text, out);
                        out.push(Item::Call(CallItem {
                            kind: "function_call",
                            call_id: &call.call_id,
                            name: &call.name,
                            arguments: Arguments(&call.args),
                        }));
                    }
                    // Other providers' reasoning cannot be sent to this one.
                    _ => {}
                }
            }
            flush(&mut text, out);
        }
        Role::User => {
            // Outputs answer their calls first; images of results follow in one user
            // message, each group introduced by the call it belongs to, then the prompt.
            let mut content = Vec::new();
            for part in turn.parts.iter().map(|p| &**p) {
                if let Part::ToolResult(r) = part {
                    out.push(Item::Output(OutputItem {
                        kind: "function_call_output",
                        call_id: &r.call_id,
                        output: crate::openai_chat::request::tool_text(r),
                    }));
                    if !r.images.is_empty() {
                        let intro = format!(
                            "The images returned by tool call {} ({}):",
                            r.call_id, r.name
                        );
                        content.push(Content::InputText {
                            text: Cow::Owned(intro),
                        });
                        content.extend(r.images.iter().map(image));
                    }
                }
            }
            for part in turn.parts.iter().map(|p| &**p) {
                match part {
                    Part::Text { text } if !text.is_empty() => content.push(Content::InputText {
                        text: Cow::Borrowed(text),
                    }),
                    Part::Image(data) => content.push(image(data)),
                    _ => {}
                }
            }
            if !content.is_empty() {
                out.push(Item::Message(MessageItem {
                    kind: "message",
                    role: "user",
                    content,
                }));
            }
        }
    }
}

/// Whether `data` is a Responses reasoning item (not another API's opaque data, such as a
/// Gemini signature left in history by a session that switched providers).
fn is_reasoning_item(data: &JsonText) -> bool {
    #[derive(serde::Deserialize)]
    struct Kind<'a> {
        #[serde(borrow, rename = "type")]
        kind: Option<&'a str>,
    }
    serde_json::from_str::<Kind<'_>>(data.raw().get()).is_ok_and(|k| k.kind == Some("reasoning"))
}

fn image(data: &ImageData) -> Content<'_> {
    Content::InputImage {
        image_url: DataUrl(data),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reasoning::ReasoningEffort;
    use crate::test_history::{png, shot_calls, shot_result};
    use corvid_protocol::{JsonText, Message, ToolCall};
    use pretty_assertions::assert_eq;
    use serde_json::{Value, json};
    use std::sync::Arc;

    fn sent(request: &ModelRequest, options: &BodyOptions) -> Value {
        let bytes = build_body(request, options, None).unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    fn request(model: &str, messages: Vec<Message>) -> ModelRequest {
        ModelRequest {
            model: model.into(),
            system: "be brief".into(),
            messages: messages.into(),
            tools: vec![Arc::new(ToolSchema {
                name: "read_file".into(),
                description: "Reads a file".into(),
                parameters: json!({"type": "object"}).into(),
            })],
            max_output_tokens: None,
            temperature: None,
        }
    }

    fn reasoning_item() -> Value {
        json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": "Look first"}],
               "encrypted_content": "gAAAAABo-opaque=="})
    }

    #[test]
    fn a_tool_loop_replays_the_reasoning_item_verbatim_before_its_call_and_answers_it() {
        let assistant = Message {
            role: Role::Assistant,
            parts: vec![
                Part::Thought {
                    text: "Look first".into(),
                    signature: None,
                    provider_data: Some(JsonText::new(&reasoning_item())),
                },
                Part::ToolCall(ToolCall {
                    call_id: "call_1".into(),
                    name: "read_file".into(),
                    args: json!({"path": "a.txt"}),
                }),
            ],
        };
        let result = Message {
            role: Role::User,
            parts: vec![shot_result("call_1", "hello", Vec::new())],
        };
        let options = BodyOptions {
            cache_key: Some("session-1".into()),
            reasoning: Reasoning {
                effort: Some(ReasoningEffort::High),
                summary: None,
            },
            storage: ResponseStorage::Stateless,
            web_search: None,
        };
        let body = sent(
            &request(
                "gpt-5.1-codex",
                vec![Message::user_text("read a.txt"), assistant, result],
            ),
            &options,
        );
        assert_eq!(
            body,
            json!({
                "model": "gpt-5.1-codex",
                "instructions": "be brief",
                "input": [
                    {"type": "message", "role": "user",
                     "content": [{"type": "input_text", "text": "read a.txt"}]},
                    reasoning_item(),
                    {"type": "function_call", "call_id": "call_1", "name": "read_file",
                     "arguments": "{\"path\":\"a.txt\"}"},
                    {"type": "function_call_output", "call_id": "call_1", "output": "hello"},
                ],
                "tools": [{"type": "function", "name": "read_file", "description": "Reads a file",
                           "parameters": {"type": "object"}, "strict": false}],
                "tool_choice": "auto",
                "parallel_tool_calls": true,
                "reasoning": {"effort": "high", "summary": "auto"},
                "stream": true,
                "store": false,
                "include": ["reasoning.encrypted_content"],
                "prompt_cache_key": "session-1",
            })
        );
    }

    #[test]
    fn a_model_without_reasoning_gets_no_reasoning_fields_and_other_providers_thoughts_stay_home() {
        let assistant = Message {
            role: Role::Assistant,
            parts: vec![
                Part::Thought {
                    text: "anthropic thinking".into(),
                    signature: Some("sig".into()),
                    provider_data: None,
                },
                Part::Text { text: "Hi".into() },
            ],
        };
        let body = sent(
            &request("gpt-4.1", vec![Message::user_text("hi"), assistant]),
            &BodyOptions::default(),
        );
        assert_eq!(
            body["input"][1],
            json!({"type": "message", "role": "assistant",
                   "content": [{"type": "output_text", "text": "Hi"}]})
        );
        assert!(body.get("reasoning").is_none(), "{body}");
        assert!(body.get("include").is_none(), "{body}");
        assert!(body.get("prompt_cache_key").is_none(), "{body}");
    }

    #[test]
    fn tool_images_follow_the_outputs_in_one_user_message_and_prompt_images_are_input_images() {
        let results = Message {
            role: Role::User,
            parts: vec![
                shot_result("a", "one image", vec![png()]),
                Part::Text {
                    text: "and this?".into(),
                },
                Part::Image(png()),
            ],
        };
        let body = sent(
            &request("gpt-5", vec![shot_calls(&["a"]), results]),
            &BodyOptions::default(),
        );
        let image = json!({"type": "input_image", "image_url": "data:image/png;base64,iVBORw=="});
        assert_eq!(
            body["input"].as_array().unwrap()[1..],
            [
                json!({"type": "function_call_output", "call_id": "a",
                       "output": "one image\n[1 image(s) returned: sent in the next user message]"}),
                json!({"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "The images returned by tool call a (shot):"},
                    image,
                    {"type": "input_text", "text": "and this?"},
                    image,
                ]}),
            ]
        );
    }

    #[test]
    fn another_api_s_opaque_data_in_history_is_not_sent_as_a_reasoning_item() {
        let assistant = Message {
            role: Role::Assistant,
            parts: vec![
                Part::Thought {
                    text: String::new(),
                    signature: None,
                    provider_data: Some(JsonText::new(
                        &json!({"type": "gemini_signature", "on": "text", "thoughtSignature": "c2ln"}),
                    )),
                },
                Part::Text { text: "Hi".into() },
            ],
        };
        let body = sent(
            &request("gpt-5", vec![Message::user_text("hi"), assistant]),
            &BodyOptions::default(),
        );
        assert_eq!(body["input"].as_array().unwrap().len(), 2, "{body}");
        assert_eq!(body["input"][1]["type"], "message");
    }

    #[test]
    fn summary_off_asks_for_no_summary_but_keeps_the_encrypted_reasoning() {
        let options = BodyOptions {
            cache_key: None,
            reasoning: Reasoning {
                effort: Some(ReasoningEffort::Minimal),
                summary: Some(ReasoningSummary::Off),
            },
            storage: ResponseStorage::Stateless,
            web_search: None,
        };
        let body = sent(
            &request("o4-mini", vec![Message::user_text("hi")]),
            &options,
        );
        assert_eq!(body["reasoning"], json!({"effort": "minimal"}));
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    }
}
