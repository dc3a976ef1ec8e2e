//! Anthropic Messages (`POST {baseUrl}/v1/messages`).

mod parser;
pub(crate) mod request;
mod server_search;

use std::sync::Arc;

use corvid_protocol::{Completion, ErrorInfo, ModelRequest};
use futures::future::BoxFuture;
use reqwest::header::HeaderName;

pub(crate) use parser::AnthropicParser;
pub(crate) use parser::decode_whole;
pub use request::DEFAULT_MAX_TOKENS;
pub use server_search::ServerWebSearch;

use crate::http::{ConfigError, Endpoint, ProviderConfig};
use crate::wire::WireProtocol;
use crate::{EventStream, Provider};

/// The API version corvid's parser is written against.
const API_VERSION: &str = "2023-06-01";

/// A Messages API provider; cheap to clone, one connection pool per instance.
#[derive(Debug, Clone)]
pub struct AnthropicProvider {
    endpoint: Arc<Endpoint>,
    /// The API's own web search, when the user chose it in `webSearch`.
    search: Option<ServerWebSearch>,
}

impl AnthropicProvider {
    /// A provider for `config` (`base_url` is the host, e.g. `https://api.anthropic.com`).
    pub fn new(config: &ProviderConfig) -> Result<Self, ConfigError> {
        let mut headers = vec![(
            HeaderName::from_static("anthropic-version"),
            API_VERSION.to_owned(),
        )];
        if !config.api_key.is_empty() {
            headers.push((
                HeaderName::from_static("x-api-key"),
                config.api_key.expose_secret().to_owned(),
            ));
        }
        let endpoint = Endpoint::new(config, "v1/messages", headers)?;
        Ok(Self {
            endpoint: Arc::new(endpoint),
            search: None,
        })
    }

    /// This provider offering the API's server-side web search in every request with tools.
    pub fn with_server_web_search(mut self, search: ServerWebSearch) -> Self {
        self.search = Some(search);
        self
    }

    /// The body of a streaming request for `request`, as sent (benchmarks and debugging).
    pub fn request_body(&self, request: &ModelRequest) -> serde_json::Result<Vec<u8>> {
        request::build_body(request, true, self.search)
    }
}

impl Provider for AnthropicProvider {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn stream(&self, request: ModelRequest) -> EventStream {
        let body = request::build_body(&request, true, self.search);
        Endpoint::clone(&self.endpoint).stream(body, WireProtocol::AnthropicMessages)
    }

    fn complete(&self, request: ModelRequest) -> BoxFuture<'static, Result<Completion, ErrorInfo>> {
        let body = request::build_body(&request, false, self.search);
        let endpoint = Endpoint::clone(&self.endpoint);
        Box::pin(endpoint.complete(body, WireProtocol::AnthropicMessages))
    }

    /// `GET /v1/models`: the first page (newest first), which is what a picker needs.
    fn endpoint(&self) -> Option<String> {
        Some(self.endpoint.shown_url().to_owned())
    }

    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ErrorInfo>> {
        let endpoint = Arc::clone(&self.endpoint);
        Box::pin(async move { crate::models::model_ids(&endpoint.get_json("v1/models").await?) })
    }
}
