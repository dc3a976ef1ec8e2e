//! Model providers: HTTP + SSE bytes turned into corvid's one [`StreamEvent`] enum.
//!
//! One wire parser per API (`openai_chat`, `openai_responses`, `anthropic`, `gemini`), one error classification, and the
//! built-in scripted `demo` model. Parsers are push-based and I/O-free so that the live path
//! and `corvid debug replay-sse` share the same code.

use futures::future::BoxFuture;
use futures::stream::BoxStream;

pub use corvid_protocol::{
    Completion, ErrorInfo, ModelRequest, ReasoningEffort, StreamEvent, StreamItem,
};

pub mod demo;

/// A stream of model events; it ends after `Finished` or after the first `Err`.
/// Dropping it aborts the underlying HTTP request.
pub type EventStream = BoxStream<'static, StreamItem>;

/// A model backend. Streaming is the one essential call; `complete` is the non-streaming
/// call used for the fast model.
pub trait Provider: Send + Sync {
    /// A short name for logs and errors (`openai`, `anthropic`, `demo`).
    fn name(&self) -> &str;

    /// Starts a streaming request. Errors (HTTP status, broken stream) arrive as the last item.
    fn stream(&self, request: ModelRequest) -> EventStream;

    /// A non-streaming request, assembled into one completion.
    fn complete(&self, request: ModelRequest) -> BoxFuture<'static, Result<Completion, ErrorInfo>>;

    /// The models the server offers, for model pickers; empty when the provider cannot tell.
    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ErrorInfo>> {
        Box::pin(futures::future::ready(Ok(Vec::new())))
    }

    /// The reasoning efforts `model` takes through this provider, for pickers (`/model`,
    /// ACP's `reasoning_effort` option); empty when it takes none.
    fn reasoning_efforts(&self, _model: &str) -> &'static [ReasoningEffort] {
        &[]
    }

    /// Sets the reasoning effort of later requests; a provider without one ignores it.
    fn set_reasoning_effort(&self, _effort: ReasoningEffort) {}

    /// The effort later requests ask for (chosen or configured); `None`: the server's default.
    fn reasoning_effort(&self) -> Option<ReasoningEffort> {
        None
    }

    /// Where this provider's requests go (credentials redacted), so what a server lists can
    /// be cached per server; `None` for models built into corvid.
    fn endpoint(&self) -> Option<String> {
        None
    }
}

pub mod anthropic;
mod body;
pub mod error;
pub mod gemini;
#[cfg(test)]
mod golden_bodies;
mod history;
pub mod http;
pub mod limits;
pub mod models;
pub mod openai_chat;
pub mod openai_responses;
pub mod reasoning;
pub mod redact;
pub mod sse;
#[cfg(test)]
mod test_history;
pub mod wire;

pub use anthropic::{AnthropicProvider, ServerWebSearch};
pub use error::{classify_http_error, classify_reqwest_error, classify_stream_error};
pub use gemini::GeminiProvider;
pub use http::{ApiKey, ConfigError, ProviderConfig};
pub use limits::StreamLimits;
pub use openai_chat::OpenAiChatProvider;
pub use openai_responses::{OpenAiResponsesProvider, ResponseStorage};
pub use reasoning::{Reasoning, ReasoningSummary};
pub use redact::Redactor;
pub use wire::{
    Emitted, StreamDecoder, WireProtocol, collect_completion, decode_body, decode_whole_response,
};
