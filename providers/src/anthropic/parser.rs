//! Messages API events → stream events (SPEC §2.3).

use std::collections::HashSet;

use corvid_protocol::{ErrorInfo, ErrorKind, FinishReason, StreamEvent, ToolCall, Usage};
use serde::Deserialize;
use serde_json::Value;

use super::server_search;
use crate::error::classify_stream_error;
use crate::sse::{BodyEnd, SseEvent};
use crate::wire::{Emitted, NonJsonLine, Str, WireParser, lenient_u64, parse_args, truncated};

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    /// Rare fields are boxed: every event is built and moved, so its size is paid per event.
    message: Option<Box<MessageStart>>,
    #[serde(borrow, default)]
    content_block: Option<Box<Block<'a>>>,
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
    #[serde(default)]
    usage: Option<Box<RawUsage>>,
}

#[derive(Deserialize)]
struct MessageStart {
    #[serde(default)]
    usage: Option<RawUsage>,
}

/// A content block, as opened by `content_block_start` or listed in a whole message.
#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow, default)]
    id: Option<Str<'a>>,
    #[serde(borrow, default)]
    name: Option<Str<'a>>,
    #[serde(default)]
    input: Option<Value>,
    #[serde(borrow, default)]
    text: Option<Str<'a>>,
    #[serde(borrow, default)]
    thinking: Option<Str<'a>>,
    #[serde(borrow, default)]
    signature: Option<Str<'a>>,
    /// A server tool result's call id and content (`web_search_tool_result`).
    #[serde(borrow, default)]
    tool_use_id: Option<Str<'a>>,
    #[serde(default)]
    content: Option<Value>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Str<'a>>,
    /// The one payload a delta carries, under the name its `type` gives it. One field instead
    /// of four keeps the per-event struct small (it is built and moved for every event).
    #[serde(
        borrow,
        default,
        alias = "text",
        alias = "partial_json",
        alias = "thinking",
        alias = "signature"
    )]
    payload: Option<Str<'a>>,
    #[serde(borrow, default)]
    stop_reason: Option<Str<'a>>,
}

#[derive(Debug, Deserialize, Default, Clone, Copy)]
struct RawUsage {
    #[serde(default, deserialize_with = "lenient_u64")]
    input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient_u64")]
    output_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient_u64")]
    cache_read_input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient_u64")]
    cache_creation_input_tokens: Option<u64>,
}

impl RawUsage {
    /// Later (cumulative) values supersede earlier ones field by field.
    fn merge(&mut self, newer: &RawUsage) {
        self.input_tokens = newer.input_tokens.or(self.input_tokens);
        self.output_tokens = newer.output_tokens.or(self.output_tokens);
        self.cache_read_input_tokens = newer
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
        self.cache_creation_input_tokens = newer
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
    }

    /// Anthropic's `input_tokens` excludes cached tokens; corvid's counts the whole prompt.
    fn normalise(&self) -> Usage {
        let cached = self.cache_read_input_tokens.unwrap_or(0);
        // Counts come from the server: a hostile one must not overflow them (fuzzing found it).
        let input = self
            .input_tokens
            .unwrap_or(0)
            .saturating_add(cached)
            .saturating_add(self.cache_creation_input_tokens.unwrap_or(0));
        let output = self.output_tokens.unwrap_or(0);
        Usage {
            input_tokens: input,
            output_tokens: output,
            total_tokens: input.saturating_add(output),
            cached_input_tokens: cached,
            reasoning_tokens: 0,
        }
    }
}

/// An open `tool_use` block.
#[derive(Debug)]
struct OpenTool {
    index: usize,
    id: String,
    name: String,
    json: String,
    /// The `input` given at `content_block_start` (Kimi-compatible servers put it all there).
    start_input: Option<Value>,
    /// A `server_tool_use` block: the API runs it; it closes into a hosted block, not a call.
    hosted: bool,
}

/// Assembles one Messages response.
#[derive(Debug, Default)]
pub struct AnthropicParser {
    open_tools: Vec<OpenTool>,
    calls: Vec<ToolCall>,
    announced_ids: HashSet<String>,
    usage: RawUsage,
    stop_reason: Option<String>,
    /// Whether any data event parsed; a stream of only other lines is no answer.
    decoded_any: bool,
    non_json: NonJsonLine,
}

impl WireParser for AnthropicParser {
    fn on_event(&mut self, event: &SseEvent<'_>, out: &mut Vec<Emitted>) -> bool {
        let at = Some(event.index);
        if event.event == "error" {
            return self.fail(event, out);
        }
        let value: Event<'_> = match serde_json::from_str(event.data) {
            Ok(value) => value,
            Err(e) => {
                tracing::warn!(at = event.index, error = %e, "skipping a data event that is not a JSON event");
                self.non_json.note(event.index, event.data);
                return false;
            }
        };
        self.decoded_any = true;
        match value.kind.as_str() {
            "message_start" => {
                if let Some(usage) = value.message.and_then(|m| m.usage) {
                    self.add_usage(&usage, at, out);
                }
            }
            "content_block_start" => {
                if let Some(block) = value.content_block {
                    self.start_block(value.index.unwrap_or(0), *block, at, out);
                }
            }
            "content_block_delta" => {
                if let Some(delta) = value.delta {
                    self.apply_delta(value.index.unwrap_or(0), delta, at, out);
                }
            }
            "content_block_stop" => self.stop_block(value.index.unwrap_or(0), at, out),
            "message_delta" => {
                if let Some(reason) = value.delta.and_then(|d| d.stop_reason) {
                    self.stop_reason = Some(reason.0.into_owned());
                }
                if let Some(usage) = value.usage {
                    self.add_usage(&usage, at, out);
                }
            }
            "message_stop" => {
                self.finish(at, out);
                return true;
            }
            "error" => return self.fail(event, out),
            _ => {} // `ping` and types added later
        }
        false
    }

    fn on_end(&mut self, end: BodyEnd, out: &mut Vec<Emitted>) {
        if let Some(error) = self.non_json.error().filter(|_| !self.decoded_any) {
            out.push(Emitted::err(None, error));
            return;
        }
        let message = match end {
            BodyEnd::MidEvent => {
                "the connection closed in the middle of an event, before message_stop"
            }
            BodyEnd::Clean => "the response ended before message_stop",
        };
        out.push(Emitted::err(None, truncated(message)));
    }
}

impl AnthropicParser {
    /// Ends the stream with the error an `error` event carries.
    fn fail(&mut self, event: &SseEvent<'_>, out: &mut Vec<Emitted>) -> bool {
        // Reparsed as a plain value: error payloads are rare and their shape varies.
        let payload = serde_json::from_str(event.data)
            .unwrap_or_else(|_| Value::String(event.data.to_owned()));
        out.push(Emitted::err(
            Some(event.index),
            classify_stream_error(&payload),
        ));
        true
    }

    fn add_usage(&mut self, usage: &RawUsage, at: Option<usize>, out: &mut Vec<Emitted>) {
        self.usage.merge(usage);
        out.push(Emitted::ok(at, StreamEvent::Usage(self.usage.normalise())));
    }

    fn start_block(
        &mut self,
        index: usize,
        block: Block<'_>,
        at: Option<usize>,
        out: &mut Vec<Emitted>,
    ) {
        match block.kind.as_str() {
            "text" => push_text(block.text, at, out, |text| StreamEvent::Text { text }),
            "thinking" => {
                push_text(block.thinking, at, out, |text| StreamEvent::Thought {
                    text,
                });
                push_text(block.signature, at, out, |signature| {
                    StreamEvent::ThoughtSignature { signature }
                });
            }
            "tool_use" | "server_tool_use" => {
                let hosted = block.kind.as_str() == "server_tool_use";
                let id = block.id.map(|s| s.0.into_owned()).unwrap_or_default();
                let name = block.name.map(|s| s.0.into_owned()).unwrap_or_default();
                if !hosted
                    && !id.is_empty()
                    && !name.is_empty()
                    && self.announced_ids.insert(id.clone())
                {
                    let event = StreamEvent::ToolPreparing {
                        call_id: id.clone(),
                        tool_name: name.clone(),
                    };
                    out.push(Emitted::ok(at, event));
                }
                self.open_tools.push(OpenTool {
                    index,
                    id,
                    name,
                    json: String::new(),
                    start_input: block.input,
                    hosted,
                });
            }
            // A server tool's result (`web_search_tool_result`) arrives whole at its start.
            kind if kind.ends_with("_tool_result") && kind != "tool_result" => {
                let id = block
                    .tool_use_id
                    .map(|s| s.0.into_owned())
                    .unwrap_or_default();
                let content = block.content.unwrap_or(Value::Null);
                let hosted = server_search::result_block(kind, id, content);
                out.push(Emitted::ok(at, StreamEvent::Hosted(hosted)));
            }
            _ => {}
        }
    }

    fn apply_delta(
        &mut self,
        index: usize,
        delta: Delta<'_>,
        at: Option<usize>,
        out: &mut Vec<Emitted>,
    ) {
        match delta.kind.as_ref().map(Str::as_str) {
            Some("text_delta") => {
                push_text(delta.payload, at, out, |text| StreamEvent::Text { text })
            }
            Some("thinking_delta") => {
                push_text(delta.payload, at, out, |text| StreamEvent::Thought { text })
            }
            Some("signature_delta") => push_text(delta.payload, at, out, |signature| {
                StreamEvent::ThoughtSignature { signature }
            }),
            Some("input_json_delta") => {
                if let (Some(tool), Some(part)) = (
                    self.open_tools.iter_mut().rfind(|t| t.index == index),
                    delta.payload,
                ) {
                    tool.json.push_str(part.as_str());
                }
            }
            _ => {}
        }
    }

    fn stop_block(&mut self, index: usize, at: Option<usize>, out: &mut Vec<Emitted>) {
        if let Some(pos) = self.open_tools.iter().rposition(|t| t.index == index) {
            let tool = self.open_tools.remove(pos);
            if tool.hosted {
                // Shown as soon as it is complete: the API runs it, nothing waits for the end.
                let (id, name) = (tool.id.clone(), tool.name.clone());
                let hosted = server_search::call_block(id, name, close_tool(tool).args);
                out.push(Emitted::ok(at, StreamEvent::Hosted(hosted)));
            } else {
                self.calls.push(close_tool(tool));
            }
        }
    }

    /// Releases the complete calls, the usage of a whole message, and the finish reason.
    fn finish(&mut self, at: Option<usize>, out: &mut Vec<Emitted>) {
        // A block never closed before message_stop still ends with the message.
        // (A server tool's block never closed ran on the API's side: nothing to call.)
        for tool in std::mem::take(&mut self.open_tools) {
            if !tool.hosted {
                self.calls.push(close_tool(tool));
            }
        }
        let calls = std::mem::take(&mut self.calls);
        let reason = normalise_stop(self.stop_reason.as_deref(), !calls.is_empty());
        for call in calls {
            out.push(Emitted::ok(at, StreamEvent::ToolCall(call)));
        }
        out.push(Emitted::ok(at, StreamEvent::Finished { reason }));
    }
}

fn close_tool(tool: OpenTool) -> ToolCall {
    let args = if tool.json.trim().is_empty() {
        match tool.start_input {
            Some(input @ Value::Object(_)) => input,
            _ => Value::Object(Default::default()),
        }
    } else {
        parse_args(&tool.json)
    };
    ToolCall {
        call_id: tool.id,
        name: tool.name,
        args,
    }
}

fn push_text(
    text: Option<Str<'_>>,
    at: Option<usize>,
    out: &mut Vec<Emitted>,
    make: impl FnOnce(String) -> StreamEvent,
) {
    if let Some(text) = text.filter(|t| !t.as_str().is_empty()) {
        out.push(Emitted::ok(at, make(text.0.into_owned())));
    }
}

fn normalise_stop(raw: Option<&str>, has_calls: bool) -> FinishReason {
    match raw {
        Some("max_tokens") | Some("model_context_window_exceeded") => FinishReason::MaxTokens,
        Some("refusal") => FinishReason::Refusal,
        _ if has_calls => FinishReason::ToolCalls,
        None | Some("end_turn") | Some("stop_sequence") => FinishReason::Stop,
        Some("tool_use") => FinishReason::ToolCalls,
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}

#[derive(Deserialize)]
struct WholeMessage<'a> {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(borrow, default)]
    content: Vec<Block<'a>>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<RawUsage>,
}

/// Converts a whole (non-streaming) Messages response through the same assembly as the stream.
pub(crate) fn decode_whole(body: &[u8]) -> Vec<Emitted> {
    let message: WholeMessage<'_> = match serde_json::from_slice(body) {
        Ok(message) => message,
        Err(e) => {
            let message = format!("the provider's response is not a Messages object: {e}");
            return vec![Emitted::err(
                None,
                ErrorInfo::new(ErrorKind::Server, message),
            )];
        }
    };
    let mut out = Vec::new();
    if message.kind.as_deref() == Some("error") || message.error.is_some() {
        let payload = serde_json::from_slice(body).unwrap_or(Value::Null);
        out.push(Emitted::err(None, classify_stream_error(&payload)));
        return out;
    }
    let mut parser = AnthropicParser::default();
    for (index, block) in message.content.into_iter().enumerate() {
        parser.start_block(index, block, None, &mut out);
        parser.stop_block(index, None, &mut out);
    }
    parser.stop_reason = message.stop_reason;
    if let Some(usage) = message.usage {
        parser.add_usage(&usage, None, &mut out);
    }
    parser.finish(None, &mut out);
    out
}
