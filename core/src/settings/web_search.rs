//! `webSearch.*` (issue 31): which search service `web_search` uses. Read from the user's
//! settings only; the session's choice depends on the main model's API.

use corvid_providers::ServerWebSearch;
use corvid_tools::web::search::{Backend, DEFAULT_MAX_PER_SESSION, Endpoint};
use corvid_tools::web::{AllowPrivate, WebSearch};

use super::ProviderKind;

/// What a session searches with.
pub enum SessionSearch {
    /// The `web_search` tool on a keyed service.
    Keyed(WebSearch),
    /// The Anthropic API's own search, offered in the main model's requests.
    Anthropic(ServerWebSearch),
    /// The Responses API's hosted search, offered in the main model's requests, limited to
    /// these domains (none: any).
    OpenAi {
        allowed_domains: Vec<String>,
        max_per_session: u32,
    },
}

/// One `webSearch.providers[]` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchProvider {
    pub kind: SearchProviderKind,
    /// The variable holding the service's key (keyed services; read at request time).
    pub api_key_env: Option<String>,
    /// The service's endpoint instead of its public one (a SearXNG instance, a proxy).
    pub base_url: Option<String>,
    /// `allowedDomains` (`openai` only): the domains the hosted search is limited to.
    pub allowed_domains: Vec<String>,
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

    /// What a session whose main model is on `main` searches with: the first provider in
    /// preference order that works there (a keyed service anywhere, `anthropic` on the
    /// Anthropic API, `openai` on the Responses API), or `None` (then the model is offered no
    /// search). An error names the keyed endpoint refused.
    pub fn for_session(
        &self,
        main: ProviderKind,
        allow: &AllowPrivate,
    ) -> Result<Option<SessionSearch>, String> {
        for provider in self.in_preference_order() {
            match provider.kind {
                SearchProviderKind::Keyed(backend) => {
                    let endpoint = Endpoint::new(
                        backend,
                        provider.api_key_env.clone(),
                        provider.base_url.as_deref(),
                        allow,
                    )?;
                    return Ok(Some(SessionSearch::Keyed(WebSearch::new(
                        endpoint,
                        WebSearch::env_keys(),
                        self.max_per_session,
                    ))));
                }
                SearchProviderKind::Anthropic if main == ProviderKind::Anthropic => {
                    return Ok(Some(SessionSearch::Anthropic(ServerWebSearch {
                        max_per_session: self.max_per_session,
                    })));
                }
                SearchProviderKind::OpenAi if main == ProviderKind::OpenaiResponses => {
                    return Ok(Some(SessionSearch::OpenAi {
                        allowed_domains: provider.allowed_domains.clone(),
                        max_per_session: self.max_per_session,
                    }));
                }
                SearchProviderKind::Anthropic | SearchProviderKind::OpenAi => {}
            }
        }
        Ok(None)
    }
}
