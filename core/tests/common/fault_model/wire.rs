//! A case's responses as a provider's real SSE bytes: each scripted response is written as
//! the OpenAI Responses API or the Gemini API sends it (the shapes of `testdata/sse/`), cut
//! at a random byte when its script is cut, broken by the API's own error event when it
//! fails mid-stream, and decoded by corvid's `StreamDecoder` in the pieces the script's pauses
//! make; the loop gets what the decoder made of the bytes, through the `Provider` interface
//! (no HTTP: an HTTP error before the body stays a scripted error).

use std::collections::HashMap;
use std::time::Duration;

use corvid_protocol::{ErrorKind, StreamEvent, Usage};
use corvid_providers::{StreamDecoder, WireProtocol};
use serde_json::{Value, json};

use crate::common::scripted::Step;

/// The API a case's responses come in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    Responses,
    Gemini,
}

enum Piece {
    Bytes(Vec<u8>),
    Delay(Duration),
}

/// `steps` (a scripted response, faults applied) as the loop gets them when they come as
/// `wire` bytes; `salt` picks the byte a cut body ends at.
pub fn through_wire(wire: Wire, steps: Vec<Step>, salt: u64) -> Vec<Step> {
    // An HTTP error: no body at all.
    if matches!(steps.first(), Some(Step::Fail(_))) {
        return steps;
    }
    let finished = steps
        .iter()
        .any(|s| matches!(s, Step::Event(StreamEvent::Finished { .. })));
    let failed = steps.iter().any(|s| matches!(s, Step::Fail(_)));
    let mut writer = Writer::new(wire);
    let mut pieces = vec![Piece::Bytes(writer.start())];
    let mut scripted_ids = Vec::new();
    for step in steps {
        match step {
            Step::Event(event) => {
                if let StreamEvent::ToolCall(c) = &event {
                    scripted_ids.push(c.call_id.clone());
                }
                pieces.push(Piece::Bytes(writer.event(event)));
            }
            Step::Fail(err) => pieces.push(Piece::Bytes(writer.error(err.kind))),
            Step::Delay(d) => pieces.push(Piece::Delay(d)),
            Step::Wait(_) | Step::Hang => {}
        }
    }
    if !finished && !failed {
        cut(&mut pieces, salt);
    }
    decode(wire, pieces, &scripted_ids)
}

/// Ends the body at a byte within its last 300.
fn cut(pieces: &mut [Piece], salt: u64) {
    let total: usize = pieces
        .iter()
        .map(|p| match p {
            Piece::Bytes(b) => b.len(),
            Piece::Delay(_) => 0,
        })
        .sum();
    let back = (salt as usize % total.clamp(1, 300)).max(1);
    let mut keep = total.saturating_sub(back);
    for piece in pieces.iter_mut() {
        if let Piece::Bytes(bytes) = piece {
            let kept = bytes.len().min(keep);
            bytes.truncate(kept);
            keep -= kept;
        }
    }
}

/// What the decoder makes of the pieces, Gemini's minted call ids mapped back to the
/// script's (in the order the calls appear), so the checks can follow each call.
fn decode(wire: Wire, pieces: Vec<Piece>, scripted_ids: &[String]) -> Vec<Step> {
    let protocol = match wire {
        Wire::Responses => WireProtocol::OpenAiResponses,
        Wire::Gemini => WireProtocol::Gemini,
    };
    let mut decoder = StreamDecoder::new(protocol);
    let mut names: HashMap<String, String> = HashMap::new();
    let mut rename = |id: String| -> String {
        if wire != Wire::Gemini {
            return id;
        }
        let next = names.len();
        names
            .entry(id.clone())
            .or_insert_with(|| scripted_ids.get(next).cloned().unwrap_or(id))
            .clone()
    };
    let mut out = Vec::new();
    let mut items = Vec::new();
    let pieces = pieces.into_iter().map(Some).chain([None]);
    for piece in pieces {
        match piece {
            Some(Piece::Bytes(bytes)) => decoder.push(&bytes, &mut items),
            Some(Piece::Delay(d)) => out.push(Step::Delay(d)),
            None => decoder.finish(&mut items),
        }
        for emitted in items.drain(..) {
            match emitted.item {
                Ok(StreamEvent::ToolPreparing { call_id, tool_name }) => {
                    out.push(Step::Event(StreamEvent::ToolPreparing {
                        call_id: rename(call_id),
                        tool_name,
                    }));
                }
                Ok(StreamEvent::ToolCall(mut call)) => {
                    call.call_id = rename(call.call_id);
                    out.push(Step::Event(StreamEvent::ToolCall(call)));
                }
                Ok(event) => out.push(Step::Event(event)),
                Err(err) => out.push(Step::Fail(err)),
            }
        }
        if decoder.is_done() {
            break;
        }
    }
    out
}

/// Writes one response's events in an API's shape.
struct Writer {
    wire: Wire,
    sequence: u64,
    /// Each call's output index (Responses).
    items: HashMap<String, u64>,
    usage: Option<Usage>,
}

impl Writer {
    fn new(wire: Wire) -> Self {
        Self {
            wire,
            sequence: 0,
            items: HashMap::new(),
            usage: None,
        }
    }

    fn sse(&mut self, kind: &str, mut data: Value) -> Vec<u8> {
        match self.wire {
            Wire::Responses => {
                data["type"] = json!(kind);
                data["sequence_number"] = json!(self.sequence);
                self.sequence += 1;
                format!("event: {kind}\ndata: {data}\n\n").into_bytes()
            }
            Wire::Gemini => format!("data: {data}\n\n").into_bytes(),
        }
    }

    fn start(&mut self) -> Vec<u8> {
        match self.wire {
            Wire::Responses => self.sse(
                "response.created",
                json!({"response": {"id": "resp_fault", "object": "response",
                    "status": "in_progress", "output": []}}),
            ),
            Wire::Gemini => Vec::new(),
        }
    }

    fn gemini(&mut self, parts: Value, finish: Option<&str>) -> Vec<u8> {
        let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
        if let Some(reason) = finish {
            candidate["finishReason"] = json!(reason);
        }
        let mut chunk = json!({"candidates": [candidate], "modelVersion": "gemini-2.5-pro"});
        if let Some(u) = self.usage.filter(|_| finish.is_some()) {
            chunk["usageMetadata"] = json!({"promptTokenCount": u.input_tokens,
                "candidatesTokenCount": u.output_tokens,
                "totalTokenCount": u.input_tokens + u.output_tokens});
        }
        self.sse("", chunk)
    }

    fn item(&mut self, id: &str) -> u64 {
        let next = self.items.len() as u64 + 1;
        *self.items.entry(id.to_owned()).or_insert(next)
    }

    fn event(&mut self, event: StreamEvent) -> Vec<u8> {
        match (self.wire, event) {
            (_, StreamEvent::Usage(u)) => {
                self.usage = Some(u);
                Vec::new()
            }
            (Wire::Responses, StreamEvent::Text { text }) => self.sse(
                "response.output_text.delta",
                json!({"item_id": "msg_fault", "output_index": 0, "content_index": 0,
                    "delta": text}),
            ),
            (Wire::Responses, StreamEvent::ToolPreparing { call_id, tool_name }) => {
                let index = self.item(&call_id);
                self.sse(
                    "response.output_item.added",
                    json!({"output_index": index, "item": {"id": format!("fc_{call_id}"),
                        "type": "function_call", "status": "in_progress", "arguments": "",
                        "call_id": call_id, "name": tool_name}}),
                )
            }
            (Wire::Responses, StreamEvent::ToolCall(call)) => {
                let mut bytes = Vec::new();
                if !self.items.contains_key(&call.call_id) {
                    bytes = self.event(StreamEvent::ToolPreparing {
                        call_id: call.call_id.clone(),
                        tool_name: call.name.clone(),
                    });
                }
                let index = self.item(&call.call_id);
                let item_id = format!("fc_{}", call.call_id);
                let args = call.args.to_string();
                // The arguments in two deltas, as the API streams them.
                let half = args
                    .char_indices()
                    .nth(args.chars().count() / 2)
                    .map_or(0, |(i, _)| i);
                for delta in [&args[..half], &args[half..]] {
                    bytes.extend(self.sse(
                        "response.function_call_arguments.delta",
                        json!({"item_id": item_id, "output_index": index, "delta": delta}),
                    ));
                }
                bytes.extend(self.sse(
                    "response.output_item.done",
                    json!({"output_index": index, "item": {"id": item_id,
                        "type": "function_call", "status": "completed", "arguments": args,
                        "call_id": call.call_id, "name": call.name}}),
                ));
                bytes
            }
            (Wire::Responses, StreamEvent::Finished { .. }) => {
                let usage = self.usage.map(|u| {
                    json!({"input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                        "total_tokens": u.input_tokens + u.output_tokens})
                });
                self.sse(
                    "response.completed",
                    json!({"response": {"id": "resp_fault", "object": "response",
                        "status": "completed", "output": [], "usage": usage}}),
                )
            }
            (Wire::Gemini, StreamEvent::Text { text }) => {
                self.gemini(json!([{"text": text}]), None)
            }
            (Wire::Gemini, StreamEvent::ToolCall(call)) => self.gemini(
                json!([{"functionCall": {"name": call.name, "args": call.args}}]),
                None,
            ),
            (Wire::Gemini, StreamEvent::Finished { .. }) => self.gemini(json!([]), Some("STOP")),
            // Gemini sends a call whole: nothing before it.
            (_, _) => Vec::new(),
        }
    }

    /// The API's error event for a failure of `kind` mid-stream (a broken connection is a
    /// cut body instead: the decoder finds it truncated).
    fn error(&mut self, kind: ErrorKind) -> Vec<u8> {
        let (code, status, http) = match kind {
            ErrorKind::RateLimited => ("rate_limit_exceeded", "RESOURCE_EXHAUSTED", 429),
            ErrorKind::Overloaded => ("server_is_overloaded", "UNAVAILABLE", 503),
            ErrorKind::Server => ("server_error", "INTERNAL", 500),
            ErrorKind::ContextTooLong => ("context_length_exceeded", "INVALID_ARGUMENT", 400),
            ErrorKind::BadRequest => ("invalid_request_error", "INVALID_ARGUMENT", 400),
            ErrorKind::Auth => ("insufficient_quota", "PERMISSION_DENIED", 403),
            _ => return Vec::new(),
        };
        let message = if kind == ErrorKind::ContextTooLong {
            "The input token count exceeds the maximum number of tokens allowed"
        } else {
            "injected failure"
        };
        match self.wire {
            Wire::Responses => self.sse(
                "error",
                json!({"code": code, "message": message, "param": null}),
            ),
            Wire::Gemini => self.sse(
                "",
                json!({"error": {"code": http, "status": status, "message": message}}),
            ),
        }
    }
}
