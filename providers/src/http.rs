//! The HTTP side shared by both providers: configuration with a redacted key, sending a
//! request, and turning the response body into events chunk by chunk.

use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use corvid_protocol::{Completion, ErrorInfo, StreamItem};
use futures::stream::{self, BoxStream, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use crate::EventStream;
use crate::error::{classify_http_error, classify_reqwest_error};
use crate::wire::{
    Emitted, StreamDecoder, WireProtocol, collect_completion, decode_body, decode_whole_response,
};

/// How long to wait for a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a stream may stay silent; thinking models pause, but servers send pings.
const READ_TIMEOUT: Duration = Duration::from_secs(300);

/// An API key; its `Debug` never shows the value, so it cannot leak through logs.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key read from the environment or settings.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself, for the one header that carries it.
    pub fn expose_secret(&self) -> &str {
        &self.0
    }

    /// Whether no key is set (local servers often need none).
    pub fn is_empty(&self) -> bool {
        self.0.trim().is_empty()
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.is_empty() {
            "ApiKey(<empty>)"
        } else {
            "ApiKey(<redacted>)"
        })
    }
}

/// Where and how to reach a provider.
#[derive(Clone, Default)]
pub struct ProviderConfig {
    /// OpenAI: up to the version, e.g. `https://api.openai.com/v1`; Anthropic: the host,
    /// e.g. `https://api.anthropic.com`.
    pub base_url: String,
    /// Sent as a bearer token (OpenAI) or `x-api-key` (Anthropic); omitted when empty.
    pub api_key: ApiKey,
    /// Extra headers for gateways and proxies; values are treated as secrets too.
    pub extra_headers: Vec<(String, String)>,
}

impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.extra_headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("ProviderConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("extra_headers", &header_names)
            .finish()
    }
}

/// A provider could not be set up from its configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "the base URL {url:?} is not a valid http(s) URL; set model.baseUrl to e.g. https://api.openai.com/v1"
    )]
    BaseUrl { url: String },
    #[error("the extra header {name:?} has an invalid name or value")]
    Header { name: String },
    #[error("could not start the HTTP client ({0}); is a TLS crypto provider installed?")]
    Client(String),
}

/// A ready-to-send endpoint: client, URL and fixed headers.
#[derive(Clone)]
pub(crate) struct Endpoint {
    client: reqwest::Client,
    url: reqwest::Url,
    headers: HeaderMap,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("url", &self.url.as_str())
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// Builds the endpoint `path` under the configured base URL with `auth` headers marked
    /// sensitive (hyper then never logs them).
    pub(crate) fn new(
        config: &ProviderConfig,
        path: &str,
        auth: Vec<(HeaderName, String)>,
    ) -> Result<Self, ConfigError> {
        let joined = format!(
            "{}/{}",
            config.base_url.trim_end_matches('/'),
            path.trim_start_matches('/')
        );
        let url = reqwest::Url::parse(&joined)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .ok_or_else(|| ConfigError::BaseUrl {
                url: config.base_url.clone(),
            })?;
        let mut headers = HeaderMap::new();
        let extra = config.extra_headers.iter().map(|(k, v)| {
            let name = HeaderName::from_bytes(k.trim().as_bytes())
                .map_err(|_| ConfigError::Header { name: k.clone() })?;
            Ok((name, v.clone()))
        });
        for pair in auth.into_iter().map(Ok).chain(extra) {
            let (name, value) = pair?;
            let mut value =
                HeaderValue::from_str(value.trim()).map_err(|_| ConfigError::Header {
                    name: name.to_string(),
                })?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        // reqwest (built without a default provider) panics without one; the binary installs
        // ring at startup, and this keeps library users such as tests from crashing.
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            .build()
            .map_err(|e| ConfigError::Client(e.to_string()))?;
        Ok(Self {
            client,
            url,
            headers,
        })
    }

    /// The host the requests go to.
    pub(crate) fn host(&self) -> Option<&str> {
        self.url.host_str()
    }

    /// Sends `body`; a non-success status becomes a classified error.
    async fn send(&self, body: &Value) -> Result<reqwest::Response, ErrorInfo> {
        tracing::debug!(url = %self.url, "sending model request");
        let response = self
            .client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .json(body)
            .send()
            .await
            .map_err(|e| classify_reqwest_error(&e, false))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let headers = response.headers().clone();
        let body = response.bytes().await.unwrap_or_default();
        let error = classify_http_error(status.as_u16(), &headers, &body);
        tracing::warn!(%error, "model request failed");
        Err(error)
    }

    /// A streaming request: items are yielded as soon as the chunk that completes them arrives.
    pub(crate) fn stream(self, body: Value, protocol: WireProtocol) -> EventStream {
        let state = State::Send(Box::new((self, body, protocol)));
        stream::unfold(state, next_item).boxed()
    }

    /// A non-streaming request, assembled by the same parser as a stream.
    pub(crate) async fn complete(
        self,
        body: Value,
        protocol: WireProtocol,
    ) -> Result<Completion, ErrorInfo> {
        let response = self.send(&body).await?;
        let bytes = response
            .bytes()
            .await
            .map_err(|e| classify_reqwest_error(&e, true))?;
        collect_completion(
            decode_whole_response(protocol, &bytes)
                .into_iter()
                .map(|e| e.item),
        )
    }
}

enum State {
    Send(Box<(Endpoint, Value, WireProtocol)>),
    Body(Box<Body>),
    Over,
}

struct Body {
    chunks: BoxStream<'static, reqwest::Result<Bytes>>,
    decoder: StreamDecoder,
    scratch: Vec<Emitted>,
    pending: VecDeque<StreamItem>,
    over: bool,
}

async fn next_item(mut state: State) -> Option<(StreamItem, State)> {
    loop {
        state = match state {
            State::Over => return None,
            State::Send(request) => {
                let (endpoint, body, protocol) = *request;
                match endpoint.send(&body).await {
                    Ok(response) if is_json(&response) => {
                        // Some servers and proxies ignore `stream: true` and answer whole.
                        let items: VecDeque<StreamItem> = match response.bytes().await {
                            Ok(bytes) => decode_json_answer(protocol, &bytes),
                            Err(e) => VecDeque::from([Err(classify_reqwest_error(&e, true))]),
                        };
                        State::Body(Box::new(Body {
                            chunks: stream::empty().boxed(),
                            decoder: StreamDecoder::new(protocol),
                            scratch: Vec::new(),
                            pending: items,
                            over: true,
                        }))
                    }
                    Ok(response) => State::Body(Box::new(Body {
                        chunks: response.bytes_stream().boxed(),
                        decoder: StreamDecoder::new(protocol),
                        scratch: Vec::new(),
                        pending: VecDeque::new(),
                        over: false,
                    })),
                    Err(error) => return Some((Err(error), State::Over)),
                }
            }
            State::Body(mut b) => {
                if let Some(item) = b.pending.pop_front() {
                    return Some((item, State::Body(b)));
                }
                if b.over || b.decoder.is_done() {
                    // Dropping the body here closes the connection even if the server goes on.
                    return None;
                }
                match b.chunks.next().await {
                    Some(Ok(bytes)) => b.decoder.push(&bytes, &mut b.scratch),
                    Some(Err(e)) => {
                        b.over = true;
                        b.pending.push_back(Err(classify_reqwest_error(&e, true)));
                    }
                    None => b.decoder.finish(&mut b.scratch),
                }
                let Body {
                    scratch, pending, ..
                } = &mut *b;
                pending.extend(scratch.drain(..).map(|e| e.item));
                State::Body(b)
            }
        };
    }
}

/// Decodes a body labelled JSON: a whole response, unless it is really SSE under the wrong label.
fn decode_json_answer(protocol: WireProtocol, bytes: &[u8]) -> VecDeque<StreamItem> {
    let text = String::from_utf8_lossy(bytes);
    let sse = text.trim_start().starts_with("data:") || text.contains("\ndata:");
    let emitted = if sse {
        decode_body(protocol, bytes)
    } else {
        decode_whole_response(protocol, bytes)
    };
    emitted.into_iter().map(|e| e.item).collect()
}

fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"))
}
