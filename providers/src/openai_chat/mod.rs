//! OpenAI Chat Completions (`POST {baseUrl}/chat/completions`) and compatible servers.

mod parser;
pub(crate) mod request;

use std::sync::Arc;

use corvid_protocol::{Completion, ErrorInfo, ModelRequest};
use futures::future::BoxFuture;
use reqwest::header::AUTHORIZATION;

pub(crate) use parser::OpenAiChatParser;
pub(crate) use parser::decode_whole;
pub use request::MaxTokensField;

use crate::http::{ConfigError, Endpoint, ProviderConfig};
use crate::reasoning::{LiveEffort, ReasoningEffort, efforts_if, is_reasoning_model};
use crate::wire::WireProtocol;
use crate::{EventStream, Provider};
use request::{Delivery, build_body};

/// A Chat Completions provider; cheap to clone, one connection pool per instance.
#[derive(Debug, Clone)]
pub struct OpenAiChatProvider {
    endpoint: Arc<Endpoint>,
    max_tokens_field: MaxTokensField,
    reasoning_effort: Option<ReasoningEffort>,
    live_effort: LiveEffort,
}

impl OpenAiChatProvider {
    /// A provider for `config`. The token-limit field defaults to `max_completion_tokens` on
    /// api.openai.com (its reasoning models reject `max_tokens`) and `max_tokens` elsewhere.
    pub fn new(config: &ProviderConfig) -> Result<Self, ConfigError> {
        let mut auth = Vec::new();
        if !config.api_key.is_empty() {
            auth.push((
                AUTHORIZATION,
                format!("Bearer {}", config.api_key.expose_secret()),
            ));
        }
        let endpoint = Endpoint::new(config, "chat/completions", auth)?;
        let max_tokens_field = if endpoint.host() == Some("api.openai.com") {
            MaxTokensField::MaxCompletionTokens
        } else {
            MaxTokensField::MaxTokens
        };
        Ok(Self {
            endpoint: Arc::new(endpoint),
            max_tokens_field,
            reasoning_effort: None,
            live_effort: LiveEffort::default(),
        })
    }

    /// The body of a streaming request for `request`, as sent (benchmarks and debugging).
    pub fn request_body(&self, request: &ModelRequest) -> serde_json::Result<Vec<u8>> {
        build_body(
            request,
            Delivery::Stream,
            self.max_tokens_field,
            self.live_effort
                .for_request(self.reasoning_effort, is_reasoning_model(&request.model)),
        )
    }

    /// Sends `reasoning_effort` (`model.reasoningEffort`) with every request.
    pub fn with_reasoning_effort(mut self, effort: Option<ReasoningEffort>) -> Self {
        self.reasoning_effort = effort;
        self
    }

    /// Overrides which field carries `max_output_tokens`.
    pub fn with_max_tokens_field(mut self, field: MaxTokensField) -> Self {
        self.max_tokens_field = field;
        self
    }
}

impl Provider for OpenAiChatProvider {
    fn name(&self) -> &str {
        "openai"
    }

    fn stream(&self, request: ModelRequest) -> EventStream {
        let body = build_body(
            &request,
            Delivery::Stream,
            self.max_tokens_field,
            self.live_effort
                .for_request(self.reasoning_effort, is_reasoning_model(&request.model)),
        );
        Endpoint::clone(&self.endpoint).stream(body, WireProtocol::OpenAiChat)
    }

    fn complete(&self, request: ModelRequest) -> BoxFuture<'static, Result<Completion, ErrorInfo>> {
        let body = build_body(
            &request,
            Delivery::Whole,
            self.max_tokens_field,
            self.live_effort
                .for_request(self.reasoning_effort, is_reasoning_model(&request.model)),
        );
        let endpoint = Endpoint::clone(&self.endpoint);
        Box::pin(endpoint.complete(body, WireProtocol::OpenAiChat))
    }

    fn endpoint(&self) -> Option<String> {
        Some(self.endpoint.shown_url().to_owned())
    }

    fn reasoning_efforts(&self, model: &str) -> &'static [ReasoningEffort] {
        efforts_if(is_reasoning_model(model))
    }

    fn set_reasoning_effort(&self, effort: ReasoningEffort) {
        self.live_effort.set(effort);
    }

    fn reasoning_effort(&self) -> Option<ReasoningEffort> {
        self.live_effort.or(self.reasoning_effort)
    }

    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ErrorInfo>> {
        let endpoint = Arc::clone(&self.endpoint);
        Box::pin(async move { crate::models::model_ids(&endpoint.get_json("models").await?) })
    }
}
