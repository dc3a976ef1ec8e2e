//! What the live HTTP path and `corvid debug replay-sse` share: SSE framing feeding one wire
//! parser, producing [`StreamItem`]s tagged with the data event that produced them.

use std::borrow::Cow;
use std::fmt;

use corvid_protocol::{Completion, ErrorInfo, ErrorKind, StreamEvent, StreamItem};
use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use serde_json::Value;

use crate::anthropic::AnthropicParser;
use crate::gemini::GeminiParser;
use crate::limits::StreamLimits;
use crate::openai_chat::OpenAiChatParser;
use crate::openai_responses::OpenAiResponsesParser;
use crate::sse::{BodyEnd, SseDecoder, SseEvent};

/// A decoded item and the 0-based data event that produced it (`None`: the end of the body).
#[derive(Debug, Clone, PartialEq)]
pub struct Emitted {
    /// 0-based index of the data-carrying SSE event that produced the item.
    pub at: Option<usize>,
    /// The event, or the error that ended the stream.
    pub item: StreamItem,
}

impl Emitted {
    pub(crate) fn ok(at: Option<usize>, event: StreamEvent) -> Self {
        Self {
            at,
            item: Ok(event),
        }
    }

    pub(crate) fn err(at: Option<usize>, error: ErrorInfo) -> Self {
        Self {
            at,
            item: Err(error),
        }
    }
}

/// The wire protocols corvid speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireProtocol {
    /// OpenAI Chat Completions and the many servers compatible with it.
    OpenAiChat,
    /// Anthropic Messages.
    AnthropicMessages,
    /// OpenAI Responses.
    OpenAiResponses,
    /// Google's Gemini API (`streamGenerateContent`).
    Gemini,
}

/// A wire parser: turns dispatched SSE events into stream items.
pub(crate) trait WireParser {
    /// Handles one data event; returns `true` once the stream is over (finished or failed).
    fn on_event(&mut self, event: &SseEvent<'_>, out: &mut Vec<Emitted>) -> bool;
    /// Handles the end of the body when no event ended the stream.
    fn on_end(&mut self, end: BodyEnd, out: &mut Vec<Emitted>);
}

enum Parser {
    OpenAi(OpenAiChatParser),
    Anthropic(AnthropicParser),
    Responses(OpenAiResponsesParser),
    Gemini(GeminiParser),
}

/// SSE framing plus the protocol's parser: push body bytes in, get stream items out.
///
/// The stream is over after the first `Finished` or `Err`; later bytes are ignored.
pub struct StreamDecoder {
    sse: SseDecoder,
    protocol: WireProtocol,
    parser: Parser,
    done: bool,
    limits: StreamLimits,
    /// Body bytes pushed so far, checked against `limits.max_body_bytes`.
    received: usize,
}

impl fmt::Debug for StreamDecoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamDecoder")
            .field("data_events", &self.sse.data_events())
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl StreamDecoder {
    /// A decoder for one response body of `protocol`, with the default size caps.
    pub fn new(protocol: WireProtocol) -> Self {
        Self::with_limits(protocol, StreamLimits::default())
    }

    /// A decoder that fails the stream with `bad_response` once a line or the body passes
    /// `limits`.
    pub fn with_limits(protocol: WireProtocol, limits: StreamLimits) -> Self {
        let parser = match protocol {
            WireProtocol::OpenAiChat => Parser::OpenAi(OpenAiChatParser::default()),
            WireProtocol::AnthropicMessages => Parser::Anthropic(AnthropicParser::default()),
            WireProtocol::OpenAiResponses => Parser::Responses(OpenAiResponsesParser::default()),
            WireProtocol::Gemini => Parser::Gemini(GeminiParser::default()),
        };
        Self {
            sse: SseDecoder::with_max_line(limits.max_line_bytes),
            protocol,
            parser,
            done: false,
            limits,
            received: 0,
        }
    }

    /// A Responses API decoder that notes the id of the response it completes in `slot`.
    pub(crate) fn responses_noting_id(
        limits: StreamLimits,
        slot: crate::openai_responses::ResponseIdSlot,
    ) -> Self {
        let mut decoder = Self::with_limits(WireProtocol::OpenAiResponses, limits);
        decoder.parser = Parser::Responses(OpenAiResponsesParser::noting_response_id(slot));
        decoder
    }

    /// The protocol this decoder speaks.
    pub fn protocol(&self) -> WireProtocol {
        self.protocol
    }

    /// How many data-carrying SSE events were framed so far (diagnostics; the `at` counter).
    pub fn data_events(&self) -> usize {
        self.sse.data_events()
    }

    /// Whether the stream already ended (finished or failed).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Feeds body bytes; every item they complete is appended to `out` at once.
    ///
    /// The bytes up to the body cap are decoded before the cap's error, so the items are the
    /// same however the body was split into chunks.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<Emitted>) {
        if self.done {
            return;
        }
        let room = self.limits.max_body_bytes.saturating_sub(self.received);
        let over_cap = bytes.len() > room;
        let bytes = bytes.get(..room).unwrap_or(bytes);
        self.received = self.received.saturating_add(bytes.len());
        self.decode(bytes, out);
        if over_cap && !self.done {
            self.done = true;
            out.push(Emitted::err(None, too_big(self.limits)));
        }
    }

    /// Decodes bytes within the body cap.
    fn decode(&mut self, bytes: &[u8], out: &mut Vec<Emitted>) {
        let Self {
            sse, parser, done, ..
        } = self;
        sse.push(bytes, |event| {
            if *done {
                return;
            }
            *done = match parser {
                Parser::OpenAi(p) => p.on_event(&event, out),
                Parser::Anthropic(p) => p.on_event(&event, out),
                Parser::Responses(p) => p.on_event(&event, out),
                Parser::Gemini(p) => p.on_event(&event, out),
            };
        });
        if !self.done && self.sse.overflowed() {
            self.done = true;
            let message = format!(
                "the provider sent an SSE line or event longer than {}, corvid's cap; \
                 this is not a model response: check model.baseUrl",
                size(self.limits.max_line_bytes)
            );
            out.push(Emitted::err(
                Some(self.sse.data_events()),
                ErrorInfo::new(ErrorKind::BadResponse, message),
            ));
        }
    }

    /// Ends the body: a stream that did not finish becomes a `stream_truncated` error.
    pub fn finish(&mut self, out: &mut Vec<Emitted>) {
        if self.done {
            return;
        }
        self.done = true;
        let end = self.sse.finish();
        match &mut self.parser {
            Parser::OpenAi(p) => p.on_end(end, out),
            Parser::Anthropic(p) => p.on_end(end, out),
            Parser::Responses(p) => p.on_end(end, out),
            Parser::Gemini(p) => p.on_end(end, out),
        }
    }
}

/// Decodes a whole captured body at once (what `debug replay-sse` and tests use).
pub fn decode_body(protocol: WireProtocol, body: &[u8]) -> Vec<Emitted> {
    let mut decoder = StreamDecoder::new(protocol);
    let mut out = Vec::new();
    decoder.push(body, &mut out);
    decoder.finish(&mut out);
    out
}

/// Decodes a whole JSON response (a non-streaming call, or a server that ignored `stream`)
/// into the same items a stream of it would have produced, minus early tool identity.
pub fn decode_whole_response(protocol: WireProtocol, body: &[u8]) -> Vec<Emitted> {
    match protocol {
        WireProtocol::OpenAiChat => crate::openai_chat::decode_whole(body),
        WireProtocol::AnthropicMessages => crate::anthropic::decode_whole(body),
        WireProtocol::OpenAiResponses => crate::openai_responses::decode_whole(body),
        WireProtocol::Gemini => crate::gemini::decode_whole(body),
    }
}

/// Folds a finished stream's items into one [`Completion`] (the non-streaming result).
pub fn collect_completion(
    items: impl IntoIterator<Item = StreamItem>,
) -> Result<Completion, ErrorInfo> {
    let mut completion = Completion::default();
    let mut finished = false;
    for item in items {
        match item? {
            StreamEvent::Text { text } => completion.text.push_str(&text),
            StreamEvent::ToolCall(call) => completion.tool_calls.push(call),
            StreamEvent::Usage(usage) => completion.usage = Some(usage),
            StreamEvent::Finished { reason } => {
                completion.finish_reason = Some(reason);
                finished = true;
            }
            StreamEvent::Thought { .. }
            | StreamEvent::ThoughtSignature { .. }
            | StreamEvent::ThoughtData { .. }
            | StreamEvent::ToolPreparing { .. }
            | StreamEvent::Hosted(_) => {}
        }
    }
    if finished {
        Ok(completion)
    } else {
        Err(truncated("the response ended before it finished"))
    }
}

/// The first data line that was not JSON, kept while a stream may still turn out fine.
#[derive(Debug, Default)]
pub(crate) struct NonJsonLine(Option<(usize, String)>);

impl NonJsonLine {
    /// Longest slice of the bad line quoted in the error.
    const QUOTED: usize = 200;

    /// Notes a data event that did not parse (only the first one is kept).
    pub(crate) fn note(&mut self, index: usize, data: &str) {
        if self.0.is_none() {
            self.0 = Some((index, cut(data.trim(), Self::QUOTED)));
        }
    }

    /// The error for a stream that held nothing but lines like this one.
    pub(crate) fn error(&self) -> Option<ErrorInfo> {
        let (index, line) = self.0.as_ref()?;
        let message = format!(
            "the provider's stream held no JSON events; data event {index} was `{line}`; \
             check that model.baseUrl points at a compatible API"
        );
        Some(ErrorInfo::new(ErrorKind::BadResponse, message))
    }
}

/// The error for a body that ended before `terminal` (the event or field that finishes a
/// response of this API): a stream of nothing but non-JSON lines says so, anything else is a
/// truncated stream.
pub(crate) fn ended_before(
    end: crate::sse::BodyEnd,
    non_json: &NonJsonLine,
    decoded_any: bool,
    terminal: &str,
) -> ErrorInfo {
    match end {
        crate::sse::BodyEnd::MidEvent => truncated(
            "the connection closed in the middle of an event, before the response finished",
        ),
        crate::sse::BodyEnd::Clean => non_json
            .error()
            .filter(|_| !decoded_any)
            .unwrap_or_else(|| truncated(&format!("the response ended without {terminal}"))),
    }
}

/// At most `max` bytes of `text`, cut on a character boundary, `…` marking a cut.
pub(crate) fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The error for a body over the size cap.
pub(crate) fn too_big(limits: StreamLimits) -> ErrorInfo {
    let message = format!(
        "the provider's response passed {}, corvid's cap for one response; \
         check model.baseUrl and model.maxOutputTokens",
        size(limits.max_body_bytes)
    );
    ErrorInfo::new(ErrorKind::BadResponse, message)
}

/// A cap as people read it: `16 MiB`, or bytes when it is not whole MiB (tests use tiny caps).
fn size(bytes: usize) -> String {
    const MIB: usize = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// The error for a body that ended before the response finished.
pub(crate) fn truncated(message: &str) -> ErrorInfo {
    ErrorInfo::new(ErrorKind::StreamTruncated, message)
}

/// Turns assembled argument text into the call's `args`.
///
/// Empty means `{}`. Text that is not a JSON object is kept verbatim as a JSON string value,
/// so the core can answer the model with a tool error naming the problem (SPEC §2.2 rule 9)
/// and the same text can be sent back in the history.
pub(crate) fn parse_args(text: &str) -> Value {
    if text.trim().is_empty() {
        return Value::Object(Default::default());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => value,
        _ => Value::String(text.to_owned()),
    }
}

/// A JSON string borrowed from the input when it has no escapes (keeps decoding lean).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Str<'a>(pub Cow<'a, str>);

impl Str<'_> {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v)))
            }
            // Some servers send already-parsed arguments instead of a string, or a numeric id:
            // keep their JSON text rather than dropping the whole chunk.
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let value = Value::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Str(Cow::Owned(value.to_string())))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                let value = Value::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(Str(Cow::Owned(value.to_string())))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v.to_string())))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v.to_string())))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v.to_string())))
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// A token count that tolerates floats and nulls (seen in compatible servers' usage objects).
pub(crate) fn lenient_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let value = Option::<Value>::deserialize(d)?;
    Ok(value.and_then(|v| match v {
        Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
        _ => None,
    }))
}
