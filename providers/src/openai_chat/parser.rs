//! Chat Completions chunks → stream events, tolerant of what real servers send (SPEC §2.2 and
//! the fixture README's rules).

use std::collections::HashSet;

use corvid_protocol::{ErrorInfo, ErrorKind, FinishReason, StreamEvent, ToolCall, Usage};
use serde::Deserialize;
use serde_json::Value;

use crate::error::classify_stream_error;
use crate::sse::{BodyEnd, SseEvent};
use crate::wire::{Emitted, NonJsonLine, Str, WireParser, lenient_u64, parse_args, truncated};

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow, default)]
    pub choices: Option<Vec<Choice<'a>>>,
    #[serde(default)]
    /// Rare fields are boxed: every chunk is built and moved, so its size is paid per event.
    pub usage: Option<Box<RawUsage>>,
    #[serde(default)]
    pub x_groq: Option<Box<XGroq>>,
    #[serde(default)]
    pub error: Option<Box<Value>>,
}

#[derive(Deserialize)]
struct XGroq {
    #[serde(default)]
    usage: Option<Box<RawUsage>>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default, deserialize_with = "lenient_u64")]
    index: Option<u64>,
    /// Streaming chunks carry a `delta`; a non-streaming response carries the whole `message`.
    #[serde(borrow, default, alias = "message")]
    delta: Option<Delta<'a>>,
    #[serde(borrow, default)]
    finish_reason: Option<Str<'a>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow, default)]
    content: Option<Str<'a>>,
    #[serde(borrow, default)]
    refusal: Option<Str<'a>>,
    #[serde(borrow, default)]
    reasoning_content: Option<Str<'a>>,
    /// OpenRouter's and newer vLLM's name for `reasoning_content`.
    #[serde(borrow, default)]
    reasoning: Option<Str<'a>>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<ToolCallDelta<'a>>>,
}

#[derive(Deserialize)]
struct ToolCallDelta<'a> {
    #[serde(default, deserialize_with = "lenient_u64")]
    index: Option<u64>,
    #[serde(borrow, default)]
    id: Option<Str<'a>>,
    #[serde(borrow, default)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(borrow, default)]
    name: Option<Str<'a>>,
    #[serde(borrow, default)]
    arguments: Option<Str<'a>>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
struct RawUsage {
    #[serde(default, deserialize_with = "lenient_u64")]
    prompt_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient_u64")]
    completion_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient_u64")]
    total_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
    /// DeepSeek's name for cached prompt tokens.
    #[serde(default, deserialize_with = "lenient_u64")]
    prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
struct PromptDetails {
    #[serde(default, deserialize_with = "lenient_u64")]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
struct CompletionDetails {
    #[serde(default, deserialize_with = "lenient_u64")]
    reasoning_tokens: Option<u64>,
}

impl RawUsage {
    fn normalise(&self) -> Usage {
        let input = self.prompt_tokens.unwrap_or(0);
        let output = self.completion_tokens.unwrap_or(0);
        Usage {
            input_tokens: input,
            output_tokens: output,
            // A hostile server's counts must not overflow (fuzzing found it).
            total_tokens: self.total_tokens.unwrap_or(input.saturating_add(output)),
            cached_input_tokens: self
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .or(self.prompt_cache_hit_tokens)
                .unwrap_or(0),
            reasoning_tokens: self
                .completion_tokens_details
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
        }
    }
}

/// One tool call being assembled.
#[derive(Debug, Default)]
struct CallBuf {
    index: Option<u64>,
    id: String,
    name: String,
    args: String,
    announced: bool,
}

/// Assembles one Chat Completions response.
#[derive(Debug, Default)]
pub struct OpenAiChatParser {
    calls: Vec<CallBuf>,
    announced_ids: HashSet<String>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    /// Whether any data event parsed as a chunk; a stream of only other lines is no answer.
    decoded_any: bool,
    non_json: NonJsonLine,
}

impl WireParser for OpenAiChatParser {
    fn on_event(&mut self, event: &SseEvent<'_>, out: &mut Vec<Emitted>) -> bool {
        let at = Some(event.index);
        let data = event.data.trim();
        if data == "[DONE]" {
            match self.non_json.error().filter(|_| !self.decoded_any) {
                Some(error) => out.push(Emitted::err(at, error)),
                None => self.finish(at, out),
            }
            return true;
        }
        if event.event == "error" {
            // Some compatible servers name the event instead of sending an `error` object.
            let payload =
                serde_json::from_str(data).unwrap_or_else(|_| Value::String(data.to_owned()));
            out.push(Emitted::err(at, classify_stream_error(&payload)));
            return true;
        }
        let chunk: Chunk<'_> = match serde_json::from_str(data) {
            Ok(chunk) => chunk,
            Err(e) => {
                tracing::warn!(at = event.index, error = %e, "skipping a data event that is not a JSON chunk");
                self.non_json.note(event.index, data);
                return false;
            }
        };
        self.decoded_any = true;
        self.apply_chunk(chunk, at, out)
    }

    fn on_end(&mut self, end: BodyEnd, out: &mut Vec<Emitted>) {
        match (end, &self.finish_reason) {
            (BodyEnd::Clean, Some(_)) => self.finish(None, out),
            (BodyEnd::MidEvent, _) => out.push(Emitted::err(
                None,
                truncated(
                    "the connection closed in the middle of an event, before the response finished",
                ),
            )),
            (BodyEnd::Clean, None) => out.push(Emitted::err(
                None,
                self.non_json
                    .error()
                    .filter(|_| !self.decoded_any)
                    .unwrap_or_else(|| {
                        truncated("the response ended without a finish_reason or [DONE]")
                    }),
            )),
        }
    }
}

impl OpenAiChatParser {
    /// Applies one decoded chunk; returns `true` when it ended the stream with an error.
    fn apply_chunk(&mut self, chunk: Chunk<'_>, at: Option<usize>, out: &mut Vec<Emitted>) -> bool {
        if let Some(error) = chunk.error.as_ref().filter(|e| !e.is_null()) {
            out.push(Emitted::err(at, classify_stream_error(error)));
            return true;
        }
        for choice in chunk.choices.into_iter().flatten() {
            // Only the first choice is ours; corvid never asks for `n > 1`.
            if choice.index.unwrap_or(0) != 0 {
                continue;
            }
            if let Some(delta) = choice.delta {
                self.apply_delta(delta, at, out);
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason.0.into_owned());
            }
        }
        if let Some(raw) = chunk.usage.or(chunk.x_groq.and_then(|x| x.usage)) {
            let usage = raw.normalise();
            if self.usage != Some(usage) {
                self.usage = Some(usage);
                out.push(Emitted::ok(at, StreamEvent::Usage(usage)));
            }
        }
        if self.finish_reason.as_deref() == Some("error") {
            let message = "the provider ended the response with finish_reason \"error\"";
            out.push(Emitted::err(at, ErrorInfo::new(ErrorKind::Server, message)));
            return true;
        }
        false
    }

    fn apply_delta(&mut self, delta: Delta<'_>, at: Option<usize>, out: &mut Vec<Emitted>) {
        for thought in [delta.reasoning_content, delta.reasoning]
            .into_iter()
            .flatten()
        {
            if !thought.as_str().is_empty() {
                out.push(Emitted::ok(
                    at,
                    StreamEvent::Thought {
                        text: thought.0.into_owned(),
                    },
                ));
            }
        }
        for text in [delta.content, delta.refusal].into_iter().flatten() {
            if !text.as_str().is_empty() {
                out.push(Emitted::ok(
                    at,
                    StreamEvent::Text {
                        text: text.0.into_owned(),
                    },
                ));
            }
        }
        for call in delta.tool_calls.into_iter().flatten() {
            self.apply_tool_delta(call, at, out);
        }
    }

    fn apply_tool_delta(
        &mut self,
        delta: ToolCallDelta<'_>,
        at: Option<usize>,
        out: &mut Vec<Emitted>,
    ) {
        let id = delta.id.as_ref().map(Str::as_str).filter(|s| !s.is_empty());
        let (name, args) = match &delta.function {
            Some(f) => (
                f.name.as_ref().map(Str::as_str).filter(|s| !s.is_empty()),
                f.arguments
                    .as_ref()
                    .map(Str::as_str)
                    .filter(|s| !s.is_empty()),
            ),
            None => (None, None),
        };
        let Some(pos) = self.target(delta.index, id, name.is_some() || args.is_some()) else {
            return;
        };
        let call = &mut self.calls[pos];
        if let (true, Some(id)) = (call.id.is_empty(), id) {
            call.id = id.to_owned();
        }
        if let (true, Some(name)) = (call.name.is_empty(), name) {
            call.name = name.to_owned();
        }
        if let Some(args) = args {
            call.args.push_str(args);
        }
        if !call.announced && !call.id.is_empty() && !call.name.is_empty() {
            call.announced = true;
            if self.announced_ids.insert(call.id.clone()) {
                let event = StreamEvent::ToolPreparing {
                    call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                };
                out.push(Emitted::ok(at, event));
            }
        }
    }

    /// Which call a delta belongs to, opening a new one when the rules say so.
    fn target(&mut self, index: Option<u64>, id: Option<&str>, has_content: bool) -> Option<usize> {
        match index {
            Some(index) => {
                let existing = self.calls.iter().rposition(|c| c.index == Some(index));
                match existing {
                    // Ollama reuses index 0: a different id at a known index is a new call.
                    Some(pos)
                        if id.is_some_and(|id| {
                            !self.calls[pos].id.is_empty() && self.calls[pos].id != id
                        }) =>
                    {
                        Some(self.open(Some(index)))
                    }
                    Some(pos) => Some(pos),
                    None => Some(self.open(Some(index))),
                }
            }
            // No index (Gemini): a new id opens a call, anything else continues the latest one.
            None => match id {
                Some(id) => match self.calls.iter().rposition(|c| c.id == id) {
                    Some(pos) => Some(pos),
                    // A call opened by a name or arguments without an id takes the id.
                    None if self.calls.last().is_some_and(|c| c.id.is_empty()) => {
                        Some(self.calls.len() - 1)
                    }
                    None => Some(self.open(None)),
                },
                None if !has_content => None,
                None if self.calls.is_empty() => Some(self.open(None)),
                None => Some(self.calls.len() - 1),
            },
        }
    }

    fn open(&mut self, index: Option<u64>) -> usize {
        self.calls.push(CallBuf {
            index,
            ..CallBuf::default()
        });
        self.calls.len() - 1
    }

    /// Releases the complete calls and the finish reason.
    fn finish(&mut self, at: Option<usize>, out: &mut Vec<Emitted>) {
        let calls: Vec<ToolCall> = std::mem::take(&mut self.calls)
            .into_iter()
            .filter(|c| !(c.id.is_empty() && c.name.is_empty() && c.args.is_empty()))
            .map(|c| ToolCall {
                args: parse_args(&c.args),
                call_id: c.id,
                name: c.name,
            })
            .collect();
        let reason = normalise_finish(self.finish_reason.as_deref(), !calls.is_empty());
        for call in calls {
            out.push(Emitted::ok(at, StreamEvent::ToolCall(call)));
        }
        out.push(Emitted::ok(at, StreamEvent::Finished { reason }));
    }
}

/// `tool_calls` whenever calls were assembled, even if the server said `stop` (gpt-4o, Gemini).
fn normalise_finish(raw: Option<&str>, has_calls: bool) -> FinishReason {
    match raw {
        Some("length") => FinishReason::MaxTokens,
        Some("content_filter") => FinishReason::ContentFilter,
        _ if has_calls => FinishReason::ToolCalls,
        None | Some("stop") | Some("end_turn") => FinishReason::Stop,
        Some("tool_calls") | Some("function_call") => FinishReason::ToolCalls,
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}

/// Converts a whole (non-streaming) Chat Completions response through the same assembly as
/// the stream.
pub(crate) fn decode_whole(body: &[u8]) -> Vec<Emitted> {
    let chunk: Chunk<'_> = match serde_json::from_slice(body) {
        Ok(chunk) => chunk,
        Err(e) => {
            let message = format!("the provider's response is not a chat completion: {e}");
            return vec![Emitted::err(
                None,
                ErrorInfo::new(ErrorKind::Server, message),
            )];
        }
    };
    let mut parser = OpenAiChatParser::default();
    let mut out = Vec::new();
    if !parser.apply_chunk(chunk, None, &mut out) {
        parser.finish(None, &mut out);
    }
    out
}
