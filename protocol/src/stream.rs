//! Provider stream events: what every provider turns its HTTP bytes into.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::{ErrorInfo, HostedBlock, Messages, ToolCall};

/// One event of a model response stream, provider-neutral.
///
/// `ToolPreparing` is its own variant so the type system keeps it out of history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// A piece of visible text.
    Text { text: String },
    /// A piece of model reasoning.
    Thought { text: String },
    /// The signature closing a reasoning block (to be sent back with the history).
    ThoughtSignature { signature: String },
    /// Opaque provider state closing a reasoning block (the Responses API's reasoning item),
    /// kept on the history's thought part and sent back verbatim by that provider.
    ThoughtData { data: JsonText },
    /// A tool call's id and name became known; its arguments are still streaming.
    ToolPreparing { call_id: String, tool_name: String },
    /// A complete tool call, released only once the response finished cleanly.
    ToolCall(ToolCall),
    /// A tool use the API ran itself (a server-side web search, or its results): shown and
    /// kept in history, never executed.
    Hosted(HostedBlock),
    /// Token usage so far (the latest supersedes earlier ones).
    Usage(Usage),
    /// The response finished.
    Finished { reason: FinishReason },
}

/// Token usage as reported by the provider, normalised.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
    pub cached_input_tokens: u64,
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Adds another usage record to this one (for per-prompt-id accounting). Saturating:
    /// the counts come from servers, and a hostile one must not overflow them.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.total_tokens = self.total_tokens.saturating_add(other.total_tokens);
        self.cached_input_tokens = self
            .cached_input_tokens
            .saturating_add(other.cached_input_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(other.reasoning_tokens);
    }
}

/// Why a response ended, normalised across providers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    ToolCalls,
    MaxTokens,
    ContentFilter,
    Refusal,
    /// A reason this enum does not know, kept as the provider sent it.
    Other(String),
}

impl FinishReason {
    /// The wire name used by `debug replay-sse` and logs.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Stop => "stop",
            Self::ToolCalls => "tool_calls",
            Self::MaxTokens => "max_tokens",
            Self::ContentFilter => "content_filter",
            Self::Refusal => "refusal",
            Self::Other(s) => s,
        }
    }
}

/// A tool offered to the model. Built once per tool and shared by every request that offers
/// it (see [`ModelRequest::tools`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSchema {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: JsonText,
}

/// A JSON value kept as the compact text serde_json writes for it: serialized once, copied
/// into every request body as it is (a schema tree used to be rebuilt and walked per request).
#[derive(Clone)]
pub struct JsonText(Box<RawValue>);

impl JsonText {
    /// The compact text of `value`, exactly as serde_json would write it inside a body.
    pub fn new(value: &Value) -> Self {
        // Writing a `Value` cannot fail: its map keys are strings, its numbers finite, and the
        // output is a `String`. The fallback only keeps this free of a panic path.
        let raw = serde_json::value::to_raw_value(value).unwrap_or_else(|_| null());
        Self(raw)
    }

    /// Keeps JSON text exactly as it is (a provider's opaque item, sent back byte for byte).
    pub fn from_raw(raw: Box<RawValue>) -> Self {
        Self(raw)
    }

    /// The JSON text.
    pub fn get(&self) -> &str {
        self.0.get()
    }

    /// The text as a raw value, for serializing it inside another document.
    pub fn raw(&self) -> &RawValue {
        &self.0
    }

    /// The value parsed back (for tests and inspection; the text is always valid JSON).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.get()).unwrap_or(Value::Null)
    }
}

fn null() -> Box<RawValue> {
    RawValue::NULL.to_owned()
}

impl From<Value> for JsonText {
    fn from(value: Value) -> Self {
        Self::new(&value)
    }
}

impl PartialEq for JsonText {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl fmt::Debug for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.get())
    }
}

impl Serialize for JsonText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// Read as a value and written compactly again, so text read from a pretty-printed file is
/// sent as the value it holds, not with its layout.
impl<'de> Deserialize<'de> for JsonText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(|value| Self::new(&value))
    }
}

/// Everything a provider needs for one model request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    pub model: String,
    pub system: String,
    pub messages: Messages,
    /// Shared with the cache that built them: a request costs no copy of any schema.
    pub tools: Vec<Arc<ToolSchema>>,
    pub max_output_tokens: Option<u32>,
    pub temperature: Option<f64>,
}

/// The assembled result of a non-streaming call (or of a drained stream).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<Usage>,
    pub finish_reason: Option<FinishReason>,
}

/// A stream item: an event, or the error that ends the stream.
pub type StreamItem = Result<StreamEvent, ErrorInfo>;

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn json_text_is_written_into_a_document_as_its_value_would_be() {
        let value = json!({"type": "object", "description": "say \"hi\"\n", "n": [1.5, -0.0]});
        let text = JsonText::new(&value);
        assert_eq!(
            serde_json::to_string(&[&text, &text]).unwrap(),
            serde_json::to_string(&[&value, &value]).unwrap()
        );
    }

    #[test]
    fn a_schema_read_from_pretty_json_keeps_its_value_not_its_layout() {
        let text = "{\"name\": \"t\", \"description\": \"\",\n \"parameters\": {\n  \"type\": \"object\"\n}}";
        let schema: ToolSchema = serde_json::from_str(text).unwrap();
        assert_eq!(schema.parameters.get(), r#"{"type":"object"}"#);
        assert_eq!(schema.parameters.to_value(), json!({"type": "object"}));
    }
}
