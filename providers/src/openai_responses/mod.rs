//! OpenAI Responses API (`POST {baseUrl}/responses`): reasoning summaries, encrypted
//! reasoning carried across turns, and the newest GPT/Codex models' full behaviour.

mod chain;
mod events;
mod hosted_search;
mod parser;
pub(crate) mod request;

use std::borrow::Cow;
use std::sync::Arc;

use corvid_protocol::{Completion, ErrorInfo, ModelRequest};
use futures::StreamExt;
use futures::future::BoxFuture;
use reqwest::header::AUTHORIZATION;

pub(crate) use parser::decode_whole;
pub(crate) use parser::{OpenAiResponsesParser, ResponseIdSlot};

use crate::http::{ConfigError, Endpoint, ProviderConfig};
use crate::reasoning::{LiveEffort, Reasoning, ReasoningEffort, efforts_if, is_reasoning_model};
use crate::wire::{StreamDecoder, WireProtocol, collect_completion};
use crate::{EventStream, Provider};
use chain::LastResponse;
use request::{BodyOptions, Continuation, build_body};

/// `model.store`: whether the server keeps the session's responses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ResponseStorage {
    /// `store: false`: every request carries the whole conversation, earlier reasoning items
    /// included (nothing of the session stays on OpenAI's servers).
    #[default]
    Stateless,
    /// `store: true`: a request that continues the last response names it in
    /// `previous_response_id` and sends only the new items.
    Stored,
}

/// A Responses API provider for one session; cheap to clone (clones share the session's
/// last stored response), one connection pool per instance.
#[derive(Debug, Clone)]
pub struct OpenAiResponsesProvider {
    endpoint: Arc<Endpoint>,
    options: Arc<BodyOptions>,
    last: Arc<LastResponse>,
    live_effort: LiveEffort,
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
            last: Arc::default(),
            live_effort: LiveEffort::default(),
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

    /// Whether the server keeps responses, so later requests continue them (`model.store`).
    pub fn with_storage(mut self, storage: ResponseStorage) -> Self {
        Arc::make_mut(&mut self.options).storage = storage;
        self
    }

    /// Offers the API's hosted `web_search` tool beside the client tools (`webSearch`
    /// `{"type": "openai"}`), limited to `allowed_domains` when there are any, while the
    /// searches in the history are fewer than `max_per_session`; its searches come back as
    /// hosted blocks, never as calls.
    pub fn with_hosted_web_search(
        mut self,
        allowed_domains: Vec<String>,
        max_per_session: u32,
    ) -> Self {
        Arc::make_mut(&mut self.options).web_search = Some(request::HostedSearch {
            allowed_domains,
            max_per_session,
        });
        self
    }

    /// The body of a streaming request for `request`, as sent (benchmarks and debugging).
    pub fn request_body(&self, request: &ModelRequest) -> serde_json::Result<Vec<u8>> {
        build_body(request, &self.options, None)
    }

    /// The options of a request to `model`: the configured ones with the effort chosen since.
    fn options_now(&self, model: &str) -> Cow<'_, BodyOptions> {
        let configured = self.options.reasoning.effort;
        match self
            .live_effort
            .for_request(configured, is_reasoning_model(model))
        {
            effort if effort == configured => Cow::Borrowed(&self.options),
            effort => {
                let mut options = BodyOptions::clone(&self.options);
                options.reasoning.effort = effort;
                Cow::Owned(options)
            }
        }
    }

    /// Sends one streaming request; with `slot`, the id of the response it completes is
    /// noted there.
    fn send(
        &self,
        request: &ModelRequest,
        continuation: Option<Continuation<'_>>,
        slot: Option<ResponseIdSlot>,
    ) -> EventStream {
        let body = build_body(request, &self.options_now(&request.model), continuation);
        let endpoint = Endpoint::clone(&self.endpoint);
        match slot {
            Some(slot) => {
                let decoder = StreamDecoder::responses_noting_id(endpoint.limits(), slot);
                endpoint.stream_decoding(body, decoder)
            }
            None => endpoint.stream(body, WireProtocol::OpenAiResponses),
        }
    }
}

impl Provider for OpenAiResponsesProvider {
    fn name(&self) -> &str {
        "openai-responses"
    }

    fn stream(&self, request: ModelRequest) -> EventStream {
        match self.options.storage {
            ResponseStorage::Stateless => self.send(&request, None, None),
            ResponseStorage::Stored => chain::stream(self.clone(), request),
        }
    }

    /// Streams and collects: the stream is the one shape every Responses server speaks well
    /// (a whole JSON answer to it is still understood, see `decode_whole`). Always whole:
    /// a side request (a summary) neither continues the session's last response nor
    /// replaces it.
    fn complete(&self, request: ModelRequest) -> BoxFuture<'static, Result<Completion, ErrorInfo>> {
        let stream = self.send(&request, None, None);
        Box::pin(async move { collect_completion(stream.collect::<Vec<_>>().await) })
    }

    fn reasoning_efforts(&self, model: &str) -> &'static [ReasoningEffort] {
        efforts_if(is_reasoning_model(model))
    }

    fn set_reasoning_effort(&self, effort: ReasoningEffort) {
        self.live_effort.set(effort);
    }

    fn reasoning_effort(&self) -> Option<ReasoningEffort> {
        self.live_effort.or(self.options.reasoning.effort)
    }

    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ErrorInfo>> {
        let endpoint = Arc::clone(&self.endpoint);
        Box::pin(async move { crate::models::model_ids(&endpoint.get_json("models").await?) })
    }
}
