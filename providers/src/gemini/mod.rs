//! Gemini API (`POST {baseUrl}/models/{model}:streamGenerateContent?alt=sse`): thoughts,
//! thought signatures carried across turns, whole function calls per chunk.

mod malformed;
mod parser;
pub(crate) mod request;
mod schema;
mod signature;
mod thinking;

use std::borrow::Cow;
use std::sync::Arc;

use corvid_protocol::{Completion, ErrorInfo, ModelRequest};
use futures::StreamExt;
use futures::future::BoxFuture;
use reqwest::header::HeaderName;

pub(crate) use parser::{GeminiParser, decode_whole};

use crate::http::{ConfigError, Endpoint, ProviderConfig};
use crate::reasoning::{LiveEffort, Reasoning, ReasoningEffort, efforts_if};
use crate::wire::{WireProtocol, collect_completion};
use crate::{EventStream, Provider};
use malformed::LastMalformed;
use request::{BodyOptions, build_body};

/// The Gemini API's default base URL.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// A Gemini API provider for one session; cheap to clone, one connection pool per instance.
#[derive(Debug, Clone)]
pub struct GeminiProvider {
    endpoint: Arc<Endpoint>,
    options: Arc<BodyOptions>,
    malformed: Arc<LastMalformed>,
    live_effort: LiveEffort,
}

impl GeminiProvider {
    /// A provider for `config`; the key goes in the `x-goog-api-key` header (never the URL,
    /// where logs and error messages would show it).
    pub fn new(config: &ProviderConfig) -> Result<Self, ConfigError> {
        let mut auth = Vec::new();
        if !config.api_key.is_empty() {
            auth.push((
                HeaderName::from_static("x-goog-api-key"),
                config.api_key.expose_secret().to_owned(),
            ));
        }
        let endpoint = Endpoint::new(config, "models", auth)?;
        Ok(Self {
            endpoint: Arc::new(endpoint),
            options: Arc::new(BodyOptions::default()),
            malformed: Arc::default(),
            live_effort: LiveEffort::default(),
        })
    }

    /// The reasoning effort, sent as the thinking budget.
    pub fn with_reasoning(mut self, reasoning: Reasoning) -> Self {
        Arc::make_mut(&mut self.options).reasoning = reasoning;
        self
    }

    /// `models/{model}:streamGenerateContent?alt=sse` under the base URL.
    fn stream_endpoint(&self, model: &str) -> Endpoint {
        let model = model.trim_start_matches("models/");
        let path = format!("models/{model}:streamGenerateContent");
        self.endpoint.at(&path, Some("alt=sse"))
    }

    /// The options of a request to `model`: the configured ones with the effort chosen since.
    fn options_now(&self, model: &str) -> Cow<'_, BodyOptions> {
        let configured = self.options.reasoning.effort;
        match self
            .live_effort
            .for_request(configured, thinking::thinks(model))
        {
            effort if effort == configured => Cow::Borrowed(&self.options),
            effort => {
                let mut options = BodyOptions::clone(&self.options);
                options.reasoning.effort = effort;
                Cow::Owned(options)
            }
        }
    }

    /// The body of a streaming request for `request`, as sent (benchmarks and debugging).
    pub fn request_body(&self, request: &ModelRequest) -> serde_json::Result<Vec<u8>> {
        build_body(request, &self.options)
    }
}

impl Provider for GeminiProvider {
    fn name(&self) -> &str {
        "gemini"
    }

    fn stream(&self, request: ModelRequest) -> EventStream {
        let asked = request.clone();
        let (request, nudged) = malformed::prepare(&self.malformed, request);
        let body = build_body(&request, &self.options_now(&request.model));
        let events = self
            .stream_endpoint(&request.model)
            .stream(body, WireProtocol::Gemini);
        malformed::watch(events, Arc::clone(&self.malformed), asked, nudged)
    }

    fn complete(&self, request: ModelRequest) -> BoxFuture<'static, Result<Completion, ErrorInfo>> {
        let stream = self.stream(request);
        Box::pin(async move { collect_completion(stream.collect::<Vec<_>>().await) })
    }

    fn reasoning_efforts(&self, model: &str) -> &'static [ReasoningEffort] {
        efforts_if(thinking::thinks(model))
    }

    fn set_reasoning_effort(&self, effort: ReasoningEffort) {
        self.live_effort.set(effort);
    }

    fn reasoning_effort(&self) -> Option<ReasoningEffort> {
        self.live_effort.or(self.options.reasoning.effort)
    }

    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ErrorInfo>> {
        let endpoint = Arc::clone(&self.endpoint);
        Box::pin(async move {
            let listed = endpoint.get_json("models").await?;
            let names = listed
                .get("models")
                .and_then(serde_json::Value::as_array)
                .map(|models| {
                    models
                        .iter()
                        .filter_map(|m| m.get("name")?.as_str())
                        .map(|n| n.trim_start_matches("models/").to_owned())
                        .collect()
                })
                .unwrap_or_default();
            Ok(names)
        })
    }

    fn endpoint(&self) -> Option<String> {
        Some(self.endpoint.shown_url().to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_url_names_the_model_and_alt_sse_and_never_the_key() {
        let config = ProviderConfig {
            base_url: DEFAULT_BASE_URL.to_owned(),
            api_key: crate::ApiKey::new("AIza-secret"),
            ..ProviderConfig::default()
        };
        let provider = GeminiProvider::new(&config).unwrap();
        let endpoint = provider.stream_endpoint("models/gemini-3-pro-preview");
        assert_eq!(
            endpoint.shown_url(),
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse"
        );
        assert!(!endpoint.shown_url().contains("AIza"));
    }
}
