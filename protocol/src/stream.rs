//! Provider stream events: what every provider turns its HTTP bytes into.

use serde::{Deserialize, Serialize};

use crate::{ErrorInfo, Messages, ToolCall};

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
    /// A tool call's id and name became known; its arguments are still streaming.
    ToolPreparing { call_id: String, tool_name: String },
    /// A complete tool call, released only once the response finished cleanly.
    ToolCall(ToolCall),
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
    /// Adds another usage record to this one (for per-prompt-id accounting).
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.total_tokens += other.total_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
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

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSchema {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// Everything a provider needs for one model request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    pub model: String,
    pub system: String,
    pub messages: Messages,
    pub tools: Vec<ToolSchema>,
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
