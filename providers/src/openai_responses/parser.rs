//! Responses API stream events → stream events (SPEC §2.4).
//!
//! Every data event is one JSON object dispatched on its `type` (the `event:` line may be
//! missing). Tool identity is known at `response.output_item.added`, before any argument
//! byte; calls are released only at `response.completed`. There is no `[DONE]`.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use corvid_protocol::{ErrorInfo, ErrorKind, FinishReason, StreamEvent, ToolCall};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::events::{Event, Item, Response, replayable_reasoning};
use crate::error::{classify_stream_error, retry_delay_in_message};
use crate::sse::{BodyEnd, SseEvent};
use crate::wire::{Emitted, NonJsonLine, Str, WireParser, ended_before, parse_args};

/// One function call being assembled, keyed by its item id.
#[derive(Debug, Default)]
struct CallBuf {
    item_id: String,
    output_index: Option<u64>,
    call_id: String,
    name: String,
    args: String,
}

/// Assembles one Responses API stream.
#[derive(Debug, Default)]
pub struct OpenAiResponsesParser {
    last_sequence: Option<u64>,
    calls: Vec<CallBuf>,
    announced: HashSet<String>,
    /// Message items whose text arrived as deltas (their `output_item.done` adds nothing).
    streamed_text: HashSet<String>,
    decoded_any: bool,
    non_json: NonJsonLine,
    /// Where the id of a completed response is noted (`model.store: true` chains on it).
    response_id: Option<ResponseIdSlot>,
}

/// The id of the response a stream completed, shared between its decoder and the provider
/// that chains the next request on it.
#[derive(Debug, Clone, Default)]
pub(crate) struct ResponseIdSlot(Arc<Mutex<Option<String>>>);

impl ResponseIdSlot {
    /// The id noted, if the response completed with one.
    pub(crate) fn take(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    fn note(&self, id: String) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(id);
    }
}

impl WireParser for OpenAiResponsesParser {
    fn on_event(&mut self, event: &SseEvent<'_>, out: &mut Vec<Emitted>) -> bool {
        let at = Some(event.index);
        let data = event.data.trim();
        let parsed: Event<'_> = match serde_json::from_str(data) {
            Ok(parsed) => parsed,
            Err(_) if event.event == "error" => {
                let payload = Value::String(data.to_owned());
                out.push(Emitted::err(at, classify_stream_error(&payload)));
                return true;
            }
            Err(e) => {
                tracing::warn!(at = event.index, error = %e, "skipping a data event that is not a JSON event");
                self.non_json.note(event.index, data);
                return false;
            }
        };
        self.decoded_any = true;
        if let Some(seq) = parsed.sequence_number {
            if let Some(last) = self.last_sequence.filter(|last| seq <= *last) {
                let message = format!(
                    "the provider's stream went backwards: sequence_number {seq} came after \
                     {last}; the response cannot be trusted"
                );
                out.push(Emitted::err(
                    at,
                    ErrorInfo::new(ErrorKind::BadResponse, message),
                ));
                return true;
            }
            self.last_sequence = Some(seq);
        }
        let kind = match &parsed.kind {
            Some(kind) => kind.0.clone(),
            None if event.event == "error" => "error".into(),
            None => event.event.into(),
        };
        self.apply(&kind, parsed, at, out)
    }

    fn on_end(&mut self, end: BodyEnd, out: &mut Vec<Emitted>) {
        let error = ended_before(end, &self.non_json, self.decoded_any, "response.completed");
        out.push(Emitted::err(None, error));
    }
}

impl OpenAiResponsesParser {
    /// A parser that notes the id of the response it completes in `slot`.
    pub(crate) fn noting_response_id(slot: ResponseIdSlot) -> Self {
        Self {
            response_id: Some(slot),
            ..Self::default()
        }
    }

    /// Applies one event; returns `true` once it ended the stream.
    fn apply(
        &mut self,
        kind: &str,
        event: Event<'_>,
        at: Option<usize>,
        out: &mut Vec<Emitted>,
    ) -> bool {
        let text = |event: &Event<'_>| {
            event
                .delta
                .as_ref()
                .map(|d| d.0.clone().into_owned())
                .filter(|d| !d.is_empty())
        };
        match kind {
            "response.output_item.added" => {
                if let Some(item) = event.item {
                    self.item_added(item, event.output_index, at, out);
                }
            }
            "response.function_call_arguments.delta" => {
                if let Some(delta) = &event.delta
                    && let Some(call) = self.call_for(&event)
                {
                    call.args.push_str(delta.as_str());
                }
            }
            "response.function_call_arguments.done" => {
                if let Some(args) = &event.arguments
                    && let Some(call) = self.call_for(&event)
                {
                    call.args = args.0.clone().into_owned();
                }
            }
            "response.output_item.done" => {
                if let Some(item) = event.item {
                    self.item_done(item, event.output_index, at, out);
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                if let Some(text) = text(&event) {
                    if let Some(id) = &event.item_id {
                        self.streamed_text.insert(id.as_str().to_owned());
                    }
                    out.push(Emitted::ok(at, StreamEvent::Text { text }));
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let Some(text) = text(&event) {
                    out.push(Emitted::ok(at, StreamEvent::Thought { text }));
                }
            }
            // Summary parts of one reasoning item read as paragraphs.
            "response.reasoning_summary_part.added" if event.summary_index.unwrap_or(0) > 0 => {
                let text = "\n\n".to_owned();
                out.push(Emitted::ok(at, StreamEvent::Thought { text }));
            }
            "response.completed" => {
                let response = read_response(event.response);
                self.push_usage(&response, at, out);
                if let (Some(slot), Some(id)) = (
                    &self.response_id,
                    response.as_ref().and_then(|r| r.id.clone()),
                ) {
                    slot.note(id);
                }
                let calls = std::mem::take(&mut self.calls);
                let reason = if calls.is_empty() {
                    FinishReason::Stop
                } else {
                    FinishReason::ToolCalls
                };
                for call in calls {
                    let call = ToolCall {
                        args: parse_args(&call.args),
                        call_id: call.call_id,
                        name: call.name,
                    };
                    out.push(Emitted::ok(at, StreamEvent::ToolCall(call)));
                }
                out.push(Emitted::ok(at, StreamEvent::Finished { reason }));
                return true;
            }
            "response.incomplete" => {
                let response = read_response(event.response);
                self.push_usage(&response, at, out);
                let reason = response
                    .as_ref()
                    .and_then(|r| r.incomplete_details.as_ref())
                    .and_then(|d| d.reason.clone())
                    .unwrap_or_default();
                // Calls of a cut response are never run: only the finish is reported.
                let reason = match reason.as_str() {
                    "max_output_tokens" => FinishReason::MaxTokens,
                    "content_filter" => FinishReason::ContentFilter,
                    "" => FinishReason::Other("incomplete".to_owned()),
                    other => FinishReason::Other(other.to_owned()),
                };
                out.push(Emitted::ok(at, StreamEvent::Finished { reason }));
                return true;
            }
            "response.failed" => {
                let error = read_response(event.response)
                    .and_then(|r| r.error)
                    .filter(|e| !e.is_null())
                    .unwrap_or_else(|| Value::String("the response failed".to_owned()));
                out.push(Emitted::err(at, classify(&error)));
                return true;
            }
            "error" => {
                let payload = match event.error.map(|raw| serde_json::from_str(raw.get())) {
                    Some(Ok(nested)) => nested,
                    _ => top_level_error(&event),
                };
                out.push(Emitted::err(at, classify(&payload)));
                return true;
            }
            _ => {}
        }
        false
    }

    fn item_added(
        &mut self,
        raw: &RawValue,
        output_index: Option<u64>,
        at: Option<usize>,
        out: &mut Vec<Emitted>,
    ) {
        let Ok(item) = serde_json::from_str::<Item<'_>>(raw.get()) else {
            return;
        };
        if item.kind.as_ref().map(Str::as_str) != Some("function_call") {
            return;
        }
        let pos = self.open_call(&item, output_index);
        let call = &mut self.calls[pos];
        if let Some(args) = item.arguments.filter(|a| !a.as_str().is_empty()) {
            call.args = args.0.into_owned();
        }
        self.announce(pos, at, out);
    }

    fn item_done(
        &mut self,
        raw: &RawValue,
        output_index: Option<u64>,
        at: Option<usize>,
        out: &mut Vec<Emitted>,
    ) {
        let Ok(item) = serde_json::from_str::<Item<'_>>(raw.get()) else {
            return;
        };
        match item.kind.as_ref().map(Str::as_str) {
            Some("function_call") => {
                let pos = self.open_call(&item, output_index);
                if let Some(args) = item.arguments {
                    self.calls[pos].args = args.0.into_owned();
                }
                self.announce(pos, at, out);
            }
            // The API ran the search: shown, kept for the next request, never executed.
            Some("web_search_call") => {
                for block in super::hosted_search::blocks(raw) {
                    out.push(Emitted::ok(at, StreamEvent::Hosted(block)));
                }
            }
            Some("reasoning") => {
                if let Some(data) = replayable_reasoning(raw) {
                    out.push(Emitted::ok(at, StreamEvent::ThoughtData { data }));
                }
            }
            Some("message") => {
                let id = item.id.as_ref().map_or("", Str::as_str);
                if self.streamed_text.contains(id) {
                    return;
                }
                for part in item.content.into_iter().flatten() {
                    let text = match part.kind.as_str() {
                        "output_text" => part.text,
                        "refusal" => part.refusal,
                        _ => None,
                    };
                    if let Some(text) = text.filter(|t| !t.is_empty()) {
                        out.push(Emitted::ok(at, StreamEvent::Text { text }));
                    }
                }
            }
            _ => {}
        }
    }

    /// The call an item belongs to (by item id, then call id), opened when new.
    fn open_call(&mut self, item: &Item<'_>, output_index: Option<u64>) -> usize {
        let id = item.id.as_ref().map_or("", Str::as_str);
        let call_id = item.call_id.as_ref().map_or("", Str::as_str);
        let found = self.calls.iter().position(|c| {
            (!id.is_empty() && c.item_id == id) || (!call_id.is_empty() && c.call_id == call_id)
        });
        let pos = found.unwrap_or_else(|| {
            self.calls.push(CallBuf {
                item_id: id.to_owned(),
                output_index,
                ..CallBuf::default()
            });
            self.calls.len() - 1
        });
        let call = &mut self.calls[pos];
        if call.call_id.is_empty() {
            call.call_id = call_id.to_owned();
        }
        if call.name.is_empty()
            && let Some(name) = &item.name
        {
            call.name = name.as_str().to_owned();
        }
        pos
    }

    /// The call an argument event is for: by item id, else by output index, else the latest.
    fn call_for(&mut self, event: &Event<'_>) -> Option<&mut CallBuf> {
        let id = event.item_id.as_ref().map(Str::as_str);
        let pos = id
            .and_then(|id| self.calls.iter().position(|c| c.item_id == id))
            .or_else(|| {
                event.output_index.and_then(|index| {
                    self.calls
                        .iter()
                        .position(|c| c.output_index == Some(index))
                })
            })
            .or_else(|| self.calls.len().checked_sub(1))?;
        self.calls.get_mut(pos)
    }

    /// Emits the preparing event once per call id, as soon as id and name are both known.
    fn announce(&mut self, pos: usize, at: Option<usize>, out: &mut Vec<Emitted>) {
        let call = &self.calls[pos];
        if call.call_id.is_empty() || call.name.is_empty() {
            return;
        }
        if self.announced.insert(call.call_id.clone()) {
            let event = StreamEvent::ToolPreparing {
                call_id: call.call_id.clone(),
                tool_name: call.name.clone(),
            };
            out.push(Emitted::ok(at, event));
        }
    }

    fn push_usage(&self, response: &Option<Response>, at: Option<usize>, out: &mut Vec<Emitted>) {
        if let Some(usage) = response.as_ref().and_then(|r| r.usage) {
            out.push(Emitted::ok(at, StreamEvent::Usage(usage.normalise())));
        }
    }
}

fn read_response(raw: Option<&RawValue>) -> Option<Response> {
    raw.and_then(|raw| serde_json::from_str(raw.get()).ok())
}

/// A top-level `error` event (`{"type":"error","code":..,"message":..}`) as an error object.
fn top_level_error(event: &Event<'_>) -> Value {
    let mut error = Map::new();
    for (key, value) in [("code", &event.code), ("message", &event.message)] {
        if let Some(value) = value {
            error.insert(key.to_owned(), Value::String(value.as_str().to_owned()));
        }
    }
    Value::Object(error)
}

/// Classifies a Responses error object by its `code` first, then as every stream error is.
fn classify(error: &Value) -> ErrorInfo {
    let mut info = classify_stream_error(error);
    let inner = error.get("error").unwrap_or(error);
    let code = inner.get("code").and_then(Value::as_str).unwrap_or("");
    match code {
        "context_length_exceeded" => info.kind = ErrorKind::ContextTooLong,
        "rate_limit_exceeded" => info.kind = ErrorKind::RateLimited,
        // The account is out of credit: waiting does not help.
        "insufficient_quota" => info.kind = ErrorKind::Auth,
        "server_is_overloaded" | "slow_down" => info.kind = ErrorKind::Overloaded,
        "server_error" => info.kind = ErrorKind::Server,
        "invalid_prompt" | "invalid_request_error" => info.kind = ErrorKind::BadRequest,
        _ => {}
    }
    if info.kind == ErrorKind::RateLimited {
        info.retry_after_ms = retry_delay_in_message(&info.message);
    }
    info
}

/// Converts a whole (non-streaming) response object through the same assembly as a stream:
/// each output item as if it had been added and finished, then the terminal event its
/// `status` names.
pub(crate) fn decode_whole(body: &[u8]) -> Vec<Emitted> {
    #[derive(Deserialize)]
    struct Whole<'a> {
        #[serde(borrow, default)]
        output: Vec<&'a RawValue>,
        #[serde(default)]
        status: Option<String>,
    }
    let parsed = std::str::from_utf8(body)
        .map_err(|e| e.to_string())
        .and_then(|text| {
            let whole: Whole<'_> = serde_json::from_str(text).map_err(|e| e.to_string())?;
            let raw: &RawValue = serde_json::from_str(text).map_err(|e| e.to_string())?;
            Ok((whole, raw))
        });
    let (whole, raw) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => {
            let message = format!("the provider's response is not a Responses API response: {e}");
            return vec![Emitted::err(
                None,
                ErrorInfo::new(ErrorKind::BadResponse, message),
            )];
        }
    };
    let mut parser = OpenAiResponsesParser::default();
    let mut out = Vec::new();
    for item in whole.output {
        parser.item_added(item, None, None, &mut out);
        parser.item_done(item, None, None, &mut out);
    }
    let kind = match whole.status.as_deref() {
        Some("incomplete") => "response.incomplete",
        Some("failed") => "response.failed",
        _ => "response.completed",
    };
    let event = Event {
        response: Some(raw),
        ..Event::default()
    };
    parser.apply(kind, event, None, &mut out);
    out
}
