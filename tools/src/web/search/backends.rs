//! The keyed search services `web_search` can use, each with its real request and response
//! shape: Brave (`GET /res/v1/web/search`, `X-Subscription-Token`), Tavily (`POST /search`,
//! Bearer key), Exa (`POST /search`, `x-api-key`) and SearXNG (`GET /search?format=json`).

use std::time::Duration;

use serde_json::{Value, json};
use url::Url;

use super::Hit;

/// Results asked of a backend per search.
const RESULTS_WANTED: u32 = 10;
/// The whole request must finish within this.
const TIMEOUT: Duration = Duration::from_secs(30);
/// The most bytes of an answer read.
const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// A search service (`webSearch.providers[].type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Brave,
    Tavily,
    Exa,
    Searxng,
}

impl Backend {
    /// The service for a `type` value, or `None` for a name that is no keyed backend.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "brave" => Some(Self::Brave),
            "tavily" => Some(Self::Tavily),
            "exa" => Some(Self::Exa),
            "searxng" => Some(Self::Searxng),
            _ => None,
        }
    }

    /// The name in settings and in results.
    pub fn name(self) -> &'static str {
        match self {
            Self::Brave => "brave",
            Self::Tavily => "tavily",
            Self::Exa => "exa",
            Self::Searxng => "searxng",
        }
    }

    /// The service's public endpoint; SearXNG has none (it is self-hosted).
    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            Self::Brave => Some("https://api.search.brave.com"),
            Self::Tavily => Some("https://api.tavily.com"),
            Self::Exa => Some("https://api.exa.ai"),
            Self::Searxng => None,
        }
    }

    /// The variable the key is read from when `apiKeyEnv` is not given; SearXNG takes no key.
    pub fn default_key_env(self) -> Option<&'static str> {
        match self {
            Self::Brave => Some("BRAVE_API_KEY"),
            Self::Tavily => Some("TAVILY_API_KEY"),
            Self::Exa => Some("EXA_API_KEY"),
            Self::Searxng => None,
        }
    }

    fn path(self) -> &'static str {
        match self {
            Self::Brave => "/res/v1/web/search",
            Self::Tavily | Self::Exa | Self::Searxng => "/search",
        }
    }
}

/// What one search asks: the query and the domain filters (already checked to be host names).
pub struct Query<'a> {
    pub text: &'a str,
    pub allowed: &'a [String],
    pub blocked: &'a [String],
}

/// `text` with `site:` operators for the domain filters, for services that take them in the
/// query (Brave, SearXNG); results are filtered afterwards in every case.
fn with_site_operators(q: &Query<'_>) -> String {
    let mut text = q.text.to_owned();
    if !q.allowed.is_empty() {
        let sites: Vec<String> = q.allowed.iter().map(|d| format!("site:{d}")).collect();
        text.push_str(&format!(" ({})", sites.join(" OR ")));
    }
    for d in q.blocked {
        text.push_str(&format!(" -site:{d}"));
    }
    text
}

/// A client for search services: no redirects, so a key sent in a header never follows
/// one elsewhere. Built once a session (it loads the TLS roots).
pub fn client() -> Result<reqwest::Client, String> {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Another thread may have installed one meanwhile; either way one is installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
        .user_agent(concat!("corvid/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("could not set up the HTTP client: {e}"))
}

/// Sends one search to `backend` at `base` with `key` and returns its results as the service
/// listed them. Errors never contain the key.
pub async fn search(
    client: &reqwest::Client,
    backend: Backend,
    base: &Url,
    key: Option<&str>,
    q: &Query<'_>,
) -> Result<Vec<Hit>, String> {
    let redact = |text: String| match key {
        Some(k) if !k.is_empty() => text.replace(k, "[key]"),
        _ => text,
    };
    let mut url = endpoint(base, backend.path())?;
    match backend {
        Backend::Brave => {
            url.query_pairs_mut()
                .append_pair("q", &with_site_operators(q))
                .append_pair("count", &RESULTS_WANTED.to_string());
        }
        Backend::Searxng => {
            url.query_pairs_mut()
                .append_pair("q", &with_site_operators(q))
                .append_pair("format", "json");
        }
        Backend::Tavily | Backend::Exa => {}
    }
    let request = match backend {
        Backend::Brave => client
            .get(url)
            .header("Accept", "application/json")
            .header("X-Subscription-Token", key.unwrap_or_default()),
        Backend::Tavily => client
            .post(url)
            .bearer_auth(key.unwrap_or_default())
            .json(&json!({
                "query": q.text,
                "max_results": RESULTS_WANTED,
                "include_domains": q.allowed,
                "exclude_domains": q.blocked,
            })),
        Backend::Exa => {
            let mut body = json!({
                "query": q.text,
                "numResults": RESULTS_WANTED,
                "contents": {"text": {"maxCharacters": 500}},
            });
            if !q.allowed.is_empty() {
                body["includeDomains"] = json!(q.allowed);
            }
            if !q.blocked.is_empty() {
                body["excludeDomains"] = json!(q.blocked);
            }
            client
                .post(url)
                .header("x-api-key", key.unwrap_or_default())
                .json(&body)
        }
        Backend::Searxng => client.get(url).header("Accept", "application/json"),
    };
    let name = backend.name();
    let mut response = request
        .send()
        .await
        .map_err(|e| redact(format!("the {name} search request failed: {e}")))?;
    let status = response.status();
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| redact(format!("reading the {name} answer failed: {e}")))?
    {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(format!(
                "the {name} answer is over {} MiB; it was not read",
                MAX_ANSWER_BYTES / (1024 * 1024)
            ));
        }
        body.extend_from_slice(&chunk);
    }
    if !status.is_success() {
        let text = String::from_utf8_lossy(&body);
        let excerpt: String = text.chars().take(300).collect();
        let hint = if matches!(status.as_u16(), 401 | 403) {
            " (check the API key in the variable named by `apiKeyEnv`)"
        } else {
            ""
        };
        return Err(redact(format!(
            "{name} search answered HTTP {}{hint}: {excerpt}",
            status.as_u16()
        )));
    }
    let value: Value =
        serde_json::from_slice(&body).map_err(|e| format!("the {name} answer is not JSON: {e}"))?;
    parse(backend, &value)
}

fn endpoint(base: &Url, path: &str) -> Result<Url, String> {
    let joined = format!("{}{path}", base.as_str().trim_end_matches('/'));
    Url::parse(&joined).map_err(|e| format!("`{joined}` is not a URL: {e}"))
}

/// The results in a service's answer, in its order.
pub fn parse(backend: Backend, answer: &Value) -> Result<Vec<Hit>, String> {
    let list = match backend {
        Backend::Brave => answer.pointer("/web/results"),
        Backend::Tavily | Backend::Exa | Backend::Searxng => answer.get("results"),
    };
    let Some(list) = list else {
        // Brave leaves `web` out when nothing was found.
        return if backend == Backend::Brave && answer.get("type").is_some() {
            Ok(Vec::new())
        } else {
            Err(format!(
                "the {} answer has no results list; is the base URL right?",
                backend.name()
            ))
        };
    };
    let list = list
        .as_array()
        .ok_or_else(|| format!("the {} answer's results are not a list", backend.name()))?;
    Ok(list.iter().filter_map(|r| hit(backend, r)).collect())
}

fn hit(backend: Backend, r: &Value) -> Option<Hit> {
    let text = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_owned);
    let url = text("url")?;
    let snippet = match backend {
        Backend::Brave => text("description"),
        Backend::Tavily | Backend::Searxng => text("content"),
        Backend::Exa => text("summary")
            .or_else(|| {
                let parts: Vec<&str> = r
                    .get("highlights")?
                    .as_array()?
                    .iter()
                    .filter_map(Value::as_str)
                    .collect();
                (!parts.is_empty()).then(|| parts.join(" … "))
            })
            .or_else(|| text("text")),
    };
    Some(Hit {
        title: text("title").unwrap_or_default(),
        url,
        snippet: snippet.unwrap_or_default(),
    })
}
