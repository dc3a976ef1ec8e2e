//! The HTTP side shared by both providers: configuration with a redacted key, sending a
//! request, and turning the response body into events chunk by chunk, within the size caps
//! and the idle timeout of [`crate::limits`]. Every error leaving here has been redacted.

use std::collections::VecDeque;
use std::fmt;
use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;
use corvid_protocol::{Completion, ErrorInfo, ErrorKind, StreamItem};
use futures::stream::{self, BoxStream, StreamExt};
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use crate::EventStream;
use crate::body::{self, Answer};
use crate::error::{classify_http_error, classify_reqwest_error};
use crate::limits::{DEFAULT_IDLE_TIMEOUT, StreamLimits};
use crate::redact::{Redactor, redact_url};
use crate::wire::{Emitted, StreamDecoder, WireProtocol, collect_completion};

/// How long to wait for a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

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
#[derive(Clone)]
pub struct ProviderConfig {
    /// OpenAI: up to the version, e.g. `https://api.openai.com/v1`; Anthropic: the host,
    /// e.g. `https://api.anthropic.com`.
    pub base_url: String,
    /// Sent as a bearer token (OpenAI) or `x-api-key` (Anthropic); omitted when empty.
    pub api_key: ApiKey,
    /// Extra headers for gateways and proxies; values are treated as secrets too.
    pub extra_headers: Vec<(String, String)>,
    /// Other configured secrets (e.g. the fast model's key) this provider's errors must never
    /// show, should a server echo them.
    pub other_secrets: Vec<ApiKey>,
    /// How long a response may send nothing before it fails (`model.streamIdleTimeoutMs`).
    pub idle_timeout: Duration,
}

impl Default for ProviderConfig {
    fn default() -> Self {
        Self {
            base_url: String::new(),
            api_key: ApiKey::default(),
            extra_headers: Vec::new(),
            other_secrets: Vec::new(),
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
        }
    }
}

impl ProviderConfig {
    /// The redactor for everything this provider says: its key, its header values, the
    /// credentials in its base URL and the other secrets it was given.
    pub fn redactor(&self) -> Redactor {
        let mut secrets: Vec<String> = vec![self.api_key.expose_secret().to_owned()];
        secrets.extend(self.extra_headers.iter().map(|(_, v)| v.clone()));
        secrets.extend(
            self.other_secrets
                .iter()
                .map(|k| k.expose_secret().to_owned()),
        );
        secrets.extend(Redactor::url_secrets(&self.base_url));
        Redactor::new(secrets)
    }
}

impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.extra_headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("ProviderConfig")
            .field("base_url", &redact_url(&self.base_url))
            .field("api_key", &self.api_key)
            .field("extra_headers", &header_names)
            .field("other_secrets", &self.other_secrets.len())
            .field("idle_timeout", &self.idle_timeout)
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

/// A ready-to-send endpoint: client, URL, fixed headers, and how to read and report.
#[derive(Clone)]
pub(crate) struct Endpoint {
    client: reqwest::Client,
    /// The configured base URL, for the provider's other endpoints (the model list).
    base: reqwest::Url,
    url: reqwest::Url,
    headers: HeaderMap,
    reading: Reading,
}

/// How a response is read: the caps, the idle timeout and the redactor for its errors.
#[derive(Clone, Debug)]
pub(crate) struct Reading {
    pub(crate) limits: StreamLimits,
    pub(crate) idle_timeout: Duration,
    pub(crate) redactor: Redactor,
    /// The URL as errors show it (credentials redacted).
    pub(crate) shown_url: String,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("url", &self.reading.shown_url)
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// The request URL as logs and errors show it (credentials redacted).
    pub(crate) fn shown_url(&self) -> &str {
        &self.reading.shown_url
    }

    /// Builds the endpoint `path` under the configured base URL with `auth` headers marked
    /// sensitive (hyper then never logs them).
    pub(crate) fn new(
        config: &ProviderConfig,
        path: &str,
        auth: Vec<(HeaderName, String)>,
    ) -> Result<Self, ConfigError> {
        let bad_url = || ConfigError::BaseUrl {
            url: config
                .redactor()
                .redact(&redact_url(&config.base_url))
                .into_owned(),
        };
        let base = reqwest::Url::parse(config.base_url.trim())
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .ok_or_else(bad_url)?;
        let url = under(&base, path);
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
        let client = shared_client()?;
        let reading = Reading {
            limits: StreamLimits::default(),
            idle_timeout: config.idle_timeout,
            redactor: config.redactor(),
            shown_url: redact_url(url.as_str()),
        };
        Ok(Self {
            client,
            base,
            url,
            headers,
            reading,
        })
    }

    /// `GET {base}/{path}` with the endpoint's headers, its JSON answer read within the caps
    /// and the idle timeout. Errors are classified and redacted like a model request's.
    pub(crate) async fn get_json(&self, path: &str) -> Result<Value, ErrorInfo> {
        let url = under(&self.base, path);
        let shown_url = redact_url(url.as_str());
        tracing::debug!(url = %shown_url, "GET");
        let result = async {
            let request = self.client.get(url).headers(self.headers.clone()).send();
            let response = body::within_idle(&self.reading, request)
                .await?
                .map_err(|e| classify_reqwest_error(&e, false))?;
            let status = response.status();
            if !status.is_success() {
                let headers = response.headers().clone();
                let body = body::read_error_body(&self.reading, response).await;
                return Err(classify_http_error(status.as_u16(), &headers, &body));
            }
            let bytes = body::read_whole(&self.reading, response).await?;
            serde_json::from_slice(&bytes).map_err(|e| {
                ErrorInfo::new(
                    ErrorKind::BadResponse,
                    format!("{shown_url} did not answer JSON: {e}"),
                )
            })
        };
        result.await.map_err(|e| self.reading.redactor.error(e))
    }

    /// This endpoint aimed at `path` (and `query`) under the same base URL, with the same
    /// headers: for APIs whose URL names the model (Gemini's `models/{model}:...`).
    pub(crate) fn at(&self, path: &str, query: Option<&str>) -> Self {
        let mut url = under(&self.base, path);
        url.set_query(query);
        let mut endpoint = self.clone();
        endpoint.reading.shown_url = redact_url(url.as_str());
        endpoint.url = url;
        endpoint
    }

    /// The size caps its responses are read within.
    pub(crate) fn limits(&self) -> StreamLimits {
        self.reading.limits
    }

    /// The host the requests go to.
    pub(crate) fn host(&self) -> Option<&str> {
        self.url.host_str()
    }

    /// Sends `body`; a non-success status becomes a classified (unredacted) error.
    async fn send(&self, body: Bytes) -> Result<reqwest::Response, ErrorInfo> {
        tracing::debug!(url = %self.reading.shown_url, "sending model request");
        // What `RequestBuilder::json` did: the type goes last, unless a configured header set it.
        let mut headers = self.headers.clone();
        if !headers.contains_key(CONTENT_TYPE) {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        let request = self
            .client
            .post(self.url.clone())
            .headers(headers)
            .body(body)
            .send();
        let response = body::within_idle(&self.reading, request)
            .await?
            .map_err(|e| classify_reqwest_error(&e, false))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let headers = response.headers().clone();
        let body = body::read_error_body(&self.reading, response).await;
        Err(classify_http_error(status.as_u16(), &headers, &body))
    }

    /// A streaming request: items are yielded as soon as the chunk that completes them arrives.
    pub(crate) fn stream(self, body: RequestBody, protocol: WireProtocol) -> EventStream {
        let decoder = StreamDecoder::with_limits(protocol, self.reading.limits);
        self.stream_decoding(body, decoder)
    }

    /// [`Self::stream`] through a decoder the caller set up (one that notes what it saw).
    pub(crate) fn stream_decoding(self, body: RequestBody, decoder: StreamDecoder) -> EventStream {
        let redactor = self.reading.redactor.clone();
        let state = State::Send(Box::new((self, encoded(body), decoder)));
        stream::unfold(state, next_item)
            .map(move |item| item.map_err(|e| reported(&redactor, e)))
            .boxed()
    }

    /// A non-streaming request, assembled by the same parser as a stream.
    pub(crate) async fn complete(
        self,
        body: RequestBody,
        protocol: WireProtocol,
    ) -> Result<Completion, ErrorInfo> {
        let result = async {
            let response = self.send(encoded(body)?).await?;
            let content_type = body::content_type(&response);
            let bytes = body::read_whole(&self.reading, response).await?;
            let answer = body::sniff(content_type.as_deref(), &bytes);
            collect_completion(
                body::decode_answer(answer, protocol, &bytes, &self.reading)
                    .into_iter()
                    .map(|e| e.item),
            )
        };
        let redactor = self.reading.redactor.clone();
        result.await.map_err(|e| reported(&redactor, e))
    }
}

/// A request body as a provider's builder serialized it.
pub(crate) type RequestBody = serde_json::Result<Vec<u8>>;

/// The body as the HTTP layer sends it, without a copy. Writing corvid's bodies cannot fail
/// (every map has string keys); should it, the request fails instead of the process.
fn encoded(body: RequestBody) -> Result<Bytes, ErrorInfo> {
    body.map(Bytes::from).map_err(|e| {
        ErrorInfo::new(
            ErrorKind::BadRequest,
            format!("corvid could not write the request body: {e}"),
        )
    })
}

/// The process's one HTTP client (a connection pool and the system's root certificates),
/// shared by every provider of every session: a client per session cost each one about
/// 150 KiB and a read of the certificate store. Keys travel per request, never per client.
fn shared_client() -> Result<reqwest::Client, ConfigError> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            // No read timeout here: the idle timeout is enforced around every read instead,
            // so its error can name the setting.
            reqwest::Client::builder()
                .connect_timeout(CONNECT_TIMEOUT)
                .build()
                .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(ConfigError::Client)
}

/// `path` under the base URL's path; a query in the base URL (`?key=`) stays a query.
fn under(base: &reqwest::Url, path: &str) -> reqwest::Url {
    let mut url = base.clone();
    let joined = format!(
        "{}/{}",
        base.path().trim_end_matches('/'),
        path.trim_start_matches('/')
    );
    url.set_path(&joined);
    url
}

/// An error as it leaves the provider: redacted, then logged.
fn reported(redactor: &Redactor, error: ErrorInfo) -> ErrorInfo {
    let error = redactor.error(error);
    tracing::warn!(%error, "model request failed");
    error
}

enum State {
    Send(Box<(Endpoint, Result<Bytes, ErrorInfo>, StreamDecoder)>),
    Body(Box<Body>),
    Over,
}

struct Body {
    chunks: BoxStream<'static, reqwest::Result<Bytes>>,
    decoder: StreamDecoder,
    scratch: Vec<Emitted>,
    pending: VecDeque<StreamItem>,
    over: bool,
    reading: Reading,
}

impl Body {
    /// A body whose items are all known already (a whole answer, or an error).
    fn decided(items: VecDeque<StreamItem>, protocol: WireProtocol, reading: Reading) -> Self {
        Self {
            chunks: stream::empty().boxed(),
            decoder: StreamDecoder::new(protocol),
            scratch: Vec::new(),
            pending: items,
            over: true,
            reading,
        }
    }
}

async fn next_item(mut state: State) -> Option<(StreamItem, State)> {
    loop {
        state = match state {
            State::Over => return None,
            State::Send(request) => {
                let (endpoint, body, decoder) = *request;
                let reading = endpoint.reading.clone();
                let sent = match body {
                    Ok(body) => endpoint.send(body).await,
                    Err(error) => Err(error),
                };
                match sent {
                    Ok(response) => open_body(response, decoder, reading).await,
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
                match body::within_idle(&b.reading, b.chunks.next()).await {
                    Ok(Some(Ok(bytes))) => b.decoder.push(&bytes, &mut b.scratch),
                    Ok(Some(Err(e))) => {
                        b.over = true;
                        b.pending.push_back(Err(classify_reqwest_error(&e, true)));
                    }
                    Ok(None) => b.decoder.finish(&mut b.scratch),
                    Err(idle) => {
                        b.over = true;
                        b.pending.push_back(Err(idle));
                    }
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

/// Starts reading a successful response: a stream, a whole JSON answer (some servers and
/// proxies ignore `stream: true`), or something that is no model response at all.
async fn open_body(response: reqwest::Response, decoder: StreamDecoder, reading: Reading) -> State {
    let protocol = decoder.protocol();
    let content_type = body::content_type(&response);
    let mut chunks = response.bytes_stream().boxed();
    let mut body = Body {
        chunks: stream::empty().boxed(),
        decoder,
        scratch: Vec::new(),
        pending: VecDeque::new(),
        over: false,
        reading,
    };
    if body::is_event_stream(content_type.as_deref()) {
        body.chunks = chunks;
        return State::Body(Box::new(body));
    }
    // Otherwise the first bytes decide what the body is, whatever its label says.
    let first = match body::first_bytes(&body.reading, &mut chunks).await {
        Ok(first) => first,
        Err(error) => {
            body.pending.push_back(Err(error));
            body.over = true;
            return State::Body(Box::new(body));
        }
    };
    match body::sniff(content_type.as_deref(), &first) {
        Answer::Stream => {
            body.decoder.push(&first, &mut body.scratch);
            body.pending.extend(body.scratch.drain(..).map(|e| e.item));
            body.chunks = chunks;
            State::Body(Box::new(body))
        }
        answer => {
            let reading = body.reading;
            let items = match body::read_sniffed(&reading, &answer, first, chunks).await {
                Ok(bytes) => body::decode_answer(answer, protocol, &bytes, &reading)
                    .into_iter()
                    .map(|e| e.item)
                    .collect(),
                Err(error) => VecDeque::from([Err(error)]),
            };
            State::Body(Box::new(Body::decided(items, protocol, reading)))
        }
    }
}
