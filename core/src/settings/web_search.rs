//! `webSearch.*` (issue 31): which search service `web_search` uses. Read from the user's
//! settings only; the session's choice depends on the main model's API.

use corvid_tools::web::search::{Backend, DEFAULT_MAX_PER_SESSION, Endpoint};
use corvid_tools::web::{AllowPrivate, WebSearch};

/// One `webSearch.providers[]` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchProvider {
    pub kind: SearchProviderKind,
    /// The variable holding the service's key (keyed services; read at request time).
    pub api_key_env: Option<String>,
    /// The service's endpoint instead of its public one (a SearXNG instance, a proxy).
    pub base_url: Option<String>,
}

/// A search service: one corvid calls with a key, or the model API's own search tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchProviderKind {
    Keyed(Backend),
    /// Anthropic's server-side `web_search` tool, when the main model is on the Anthropic API.
    Anthropic,
    /// OpenAI's hosted `web_search` tool, on the Responses API.
    OpenAi,
}

impl SearchProviderKind {
    /// The kind for a `type` value.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "anthropic" => Some(Self::Anthropic),
            "openai" => Some(Self::OpenAi),
            other => Backend::parse(other).map(Self::Keyed),
        }
    }

    /// The `type` value.
    pub fn name(self) -> &'static str {
        match self {
            Self::Keyed(backend) => backend.name(),
            Self::Anthropic => "anthropic",
            Self::OpenAi => "openai",
        }
    }
}

/// `webSearch`: the services configured, the preferred one and the per-session cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSearchSettings {
    pub providers: Vec<SearchProvider>,
    /// `webSearch.default`: the `type` tried first; otherwise the list's order.
    pub default: Option<String>,
    /// `webSearch.maxPerSession` (default 200).
    pub max_per_session: u32,
}

impl Default for WebSearchSettings {
    fn default() -> Self {
        Self {
            providers: Vec::new(),
            default: None,
            max_per_session: DEFAULT_MAX_PER_SESSION,
        }
    }
}

impl WebSearchSettings {
    /// The providers in the order a session tries them: the default first, then the list.
    pub fn in_preference_order(&self) -> impl Iterator<Item = &SearchProvider> {
        let default = self
            .providers
            .iter()
            .filter(|p| Some(p.kind.name()) == self.default.as_deref());
        let rest = self
            .providers
            .iter()
            .filter(|p| Some(p.kind.name()) != self.default.as_deref());
        default.chain(rest)
    }
}

impl SearchProvider {
    /// The variable this provider's key is read from, for keyed services.
    fn key_var(&self) -> Option<String> {
        match self.kind {
            SearchProviderKind::Keyed(backend) => self
                .api_key_env
                .clone()
                .or_else(|| backend.default_key_env().map(str::to_owned)),
            SearchProviderKind::Anthropic | SearchProviderKind::OpenAi => None,
        }
    }
}

impl WebSearchSettings {
    /// The variables the keyed services' keys come from: kept out of shell commands and out
    /// of recordings like the model keys.
    pub fn key_vars(&self) -> Vec<String> {
        self.providers
            .iter()
            .filter_map(SearchProvider::key_var)
            .collect()
    }

    /// The `web_search` tool on the first keyed service in preference order, or `None` when
    /// no keyed service is configured (then the model is not offered the tool). An error
    /// names the provider whose endpoint is refused.
    pub fn keyed_tool(&self, allow: &AllowPrivate) -> Result<Option<WebSearch>, String> {
        let Some((provider, backend)) = self.in_preference_order().find_map(|p| match p.kind {
            SearchProviderKind::Keyed(backend) => Some((p, backend)),
            SearchProviderKind::Anthropic | SearchProviderKind::OpenAi => None,
        }) else {
            return Ok(None);
        };
        let endpoint = Endpoint::new(
            backend,
            provider.api_key_env.clone(),
            provider.base_url.as_deref(),
            allow,
        )?;
        Ok(Some(WebSearch::new(
            endpoint,
            WebSearch::env_keys(),
            self.max_per_session,
        )))
    }
}
