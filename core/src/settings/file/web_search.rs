//! `webSearch` in a settings file (issue 31): the search services `web_search` may use, in
//! Qwen Code's shape. User-level only (see `project_limits`): a project pointing searches
//! (with the user's key) at its own `baseUrl` must not be possible.

use serde_json::Value;

use super::Validator;
use crate::settings::{SearchProvider, SearchProviderKind, SettingsError, WebSearchSettings};

impl Validator<'_> {
    pub(super) fn web_search(&mut self, value: &Value) -> Result<(), SettingsError> {
        let mut out = WebSearchSettings::default();
        for (k, v) in self.section("webSearch", value)? {
            match k.as_str() {
                "providers" => {
                    let Value::Array(items) = v else {
                        return Err(self.wrong_type("webSearch.providers", "a list", v));
                    };
                    for (i, item) in items.iter().enumerate() {
                        out.providers.push(self.search_provider(i, item)?);
                    }
                }
                "default" => out.default = self.string("webSearch.default", v)?,
                "maxPerSession" => {
                    if let Some(n) = self.number("webSearch.maxPerSession", v)? {
                        out.max_per_session = n;
                    }
                }
                _ => self.unknown(&format!("webSearch.{k}")),
            }
        }
        if let Some(default) = &out.default
            && !out.providers.iter().any(|p| p.kind.name() == default)
        {
            return Err(self.invalid(
                "webSearch.default",
                default,
                "the `type` of one of `webSearch.providers`",
            ));
        }
        self.out.web_search = Some(out);
        Ok(())
    }

    fn search_provider(&mut self, i: usize, item: &Value) -> Result<SearchProvider, SettingsError> {
        let at = format!("webSearch.providers[{i}]");
        let mut kind = None;
        let mut api_key_env = None;
        let mut base_url = None;
        let mut allowed_domains = None;
        for (k, v) in self.section(&at, item)? {
            let key = format!("{at}.{k}");
            match k.as_str() {
                "type" => {
                    let name = self.string(&key, v)?.unwrap_or_default();
                    kind = Some(SearchProviderKind::parse(&name).ok_or_else(|| {
                        self.invalid(
                            &key,
                            &name,
                            "one of brave, tavily, exa, searxng, anthropic, openai",
                        )
                    })?);
                }
                "apiKeyEnv" => api_key_env = self.string(&key, v)?,
                "baseUrl" => base_url = self.string(&key, v)?,
                "allowedDomains" => {
                    let domains = match v {
                        Value::Array(items) => items
                            .iter()
                            .map(|d| d.as_str().map(str::to_owned))
                            .collect::<Option<Vec<_>>>(),
                        _ => None,
                    };
                    allowed_domains = Some(
                        domains
                            .ok_or_else(|| self.wrong_type(&key, "a list of domain names", v))?,
                    );
                }
                _ => self.unknown(&key),
            }
        }
        let kind = kind.ok_or_else(|| {
            self.invalid(&format!("{at}.type"), "(missing)", "a search service name")
        })?;
        if matches!(kind, SearchProviderKind::Keyed(_)) {
            // Checked now so the error names the file; the http rule needs `web.allowPrivate`
            // and is checked when the session starts.
            if let Some(url) = &base_url {
                url::Url::parse(url).map_err(|e| {
                    self.invalid(&format!("{at}.baseUrl"), url, &format!("a URL ({e})"))
                })?;
            }
        } else if api_key_env.is_some() || base_url.is_some() {
            return Err(self.invalid(
                &at,
                kind.name(),
                "no `apiKeyEnv` or `baseUrl` (the model's own API searches)",
            ));
        }
        if allowed_domains.is_some() && kind != SearchProviderKind::OpenAi {
            return Err(self.invalid(
                &format!("{at}.allowedDomains"),
                kind.name(),
                "set only on `openai` (the Responses API's hosted search)",
            ));
        }
        Ok(SearchProvider {
            kind,
            api_key_env,
            base_url,
            allowed_domains: allowed_domains.unwrap_or_default(),
        })
    }
}
