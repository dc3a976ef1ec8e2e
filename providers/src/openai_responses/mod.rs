//! OpenAI Responses API (`POST {baseUrl}/responses`): reasoning summaries, encrypted
//! reasoning carried across turns, and the newest GPT/Codex models' full behaviour.

mod events;
mod parser;
pub(crate) mod request;

use std::sync::Arc;

use corvid_protocol::{Completion, ErrorInfo, ModelRequest};
use futures::StreamExt;
use futures::future::BoxFuture;
use reqwest::header::AUTHORIZATION;

pub(crate) use parser::OpenAiResponsesParser;
pub(crate) use parser::decode_whole;

use crate::http::{ConfigError, Endpoint, ProviderConfig};
use crate::reasoning::Reasoning;
use crate::wire::{WireProtocol, collect_completion};
use crate::{EventStream, Provider};
use request::{BodyOptions, build_body};

/// A Responses API provider for one session; cheap to clone, one connection pool per instance.
#[derive(Debug, Clone)]
pub struct OpenAiResponsesProvider {
    endpoint: Arc<Endpoint>,
    options: Arc<BodyOptions>,
}

impl OpenAiResponsesProvider {
    /// A provider for `config` (same key and base URL as Chat Completions).
    pub fn new(config: &ProviderConfig) -> Result<Self, ConfigError> {
        let mut auth = Vec::new();
        if !config.api_key.is_empty() {
            auth.push((
                AUTHORIZATION,
                format!("Bearer {}", config.api_key.expose_secret()),
            ));
        }
        let endpoint = Endpoint::new(config, "responses", auth)?;
        Ok(Self {
            endpoint: Arc::new(endpoint),
            options: Arc::new(BodyOptions::default()),
        })
    }

    /// Sends `prompt_cache_key` = `key` (the session id): a session's requests then land on
    /// the same prompt cache.
    pub fn with_cache_key(mut self, key: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.options).cache_key = Some(key.into());
        self
    }

    /// The reasoning effort and summary asked of reasoning models.
    pub fn with_reasoning(mut self, reasoning: Reasoning) -> Self {
        Arc::make_mut(&mut self.options).reasoning = reasoning;
        self
    }

    /// The body of a streaming request for `request`, as sent (benchmarks and debugging).
    pub fn request_body(&self, request: &ModelRequest) -> serde_json::Result<Vec<u8>> {
        build_body(request, &self.options)
    }
}

impl Provider for OpenAiResponsesProvider {
    fn name(&self) -> &str {
        "openai-responses"
    }

    fn stream(&self, request: ModelRequest) -> EventStream {
        let body = build_body(&request, &self.options);
        Endpoint::clone(&self.endpoint).stream(body, WireProtocol::OpenAiResponses)
    }

    /// Streams and collects: the stream is the one shape every Responses server speaks well
    /// (a whole JSON answer to it is still understood, see `decode_whole`).
    fn complete(&self, request: ModelRequest) -> BoxFuture<'static, Result<Completion, ErrorInfo>> {
        let stream = self.stream(request);
        Box::pin(async move { collect_completion(stream.collect::<Vec<_>>().await) })
    }

    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ErrorInfo>> {
        let endpoint = Arc::clone(&self.endpoint);
        Box::pin(async move { crate::models::model_ids(&endpoint.get_json("models").await?) })
    }
}
