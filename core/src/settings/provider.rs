//! From settings to a concrete model endpoint: provider, model, base URL and key.

use std::fmt;

use super::{FastModelSetting, ProviderKind, Settings, SettingsError, corvid_home};

pub(super) const OPENAI_KEY: &str = "OPENAI_API_KEY";
pub(super) const OPENAI_URL: &str = "OPENAI_BASE_URL";
pub(super) const ANTHROPIC_KEY: &str = "ANTHROPIC_API_KEY";
pub(super) const ANTHROPIC_URL: &str = "ANTHROPIC_BASE_URL";
pub(super) const GEMINI_KEY: &str = "GEMINI_API_KEY";
pub(super) const GEMINI_URL: &str = "GEMINI_BASE_URL";

/// The model name the demo provider answers to.
pub const DEMO_MODEL: &str = "corvid-demo";
/// The model name of the demo's scripted fast model.
pub const DEMO_FAST_MODEL: &str = "corvid-demo-fast";

/// An API key. Its `Debug` and `Display` never show it, so it cannot leak through logs,
/// error messages or debug output by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself, for the one place that needs it: the request header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// A model endpoint ready to build a provider from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedModel {
    pub kind: ProviderKind,
    pub model: String,
    /// Empty for the demo provider, which has no endpoint.
    pub base_url: String,
    /// `None` for the demo provider and for a custom base URL that needs no key.
    pub api_key: Option<Secret>,
}

impl ResolvedModel {
    /// The built-in offline model.
    pub fn demo(model: &str) -> Self {
        Self {
            kind: ProviderKind::Demo,
            model: model.to_owned(),
            base_url: String::new(),
            api_key: None,
        }
    }
}

/// The main model: provider (explicit or inferred by [`super::load`]), model, URL and key.
/// With nothing usable configured, the error says exactly what to set and suggests `--demo`.
pub fn resolve_provider(
    settings: &Settings,
    env: impl Fn(&str) -> Option<String>,
) -> Result<ResolvedModel, SettingsError> {
    let Some(kind) = settings.model.provider else {
        let settings_hint = match env(super::CORVID_HOME_ENV) {
            Some(_) => "$CORVID_HOME/settings.json".to_owned(),
            None => corvid_home(&env)
                .map(|home| home.join("settings.json").display().to_string())
                .unwrap_or_else(|| "~/.corvid/settings.json".to_owned()),
        };
        return Err(SettingsError::NoProvider { settings_hint });
    };
    let model = settings.model.name.clone();
    connect(
        kind,
        model,
        settings.model.base_url.clone(),
        settings.model.api_key_env.as_deref(),
        env,
    )
}

/// The fast model for tool-use summaries, or `None` when none is configured (summaries are
/// then skipped silently; the main model is never used instead). The demo provider always
/// has its scripted fast model.
pub fn resolve_fast_model(
    settings: &Settings,
    main: &ResolvedModel,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<ResolvedModel>, SettingsError> {
    match &settings.fast_model {
        None if main.kind == ProviderKind::Demo => Ok(Some(ResolvedModel::demo(DEMO_FAST_MODEL))),
        None => Ok(None),
        Some(FastModelSetting::Name(name)) => Ok(Some(ResolvedModel {
            model: name.clone(),
            ..main.clone()
        })),
        Some(FastModelSetting::Model(spec)) => {
            let kind = spec.provider.unwrap_or(main.kind);
            if kind == main.kind && spec.base_url.is_none() && spec.api_key_env.is_none() {
                return Ok(Some(ResolvedModel {
                    model: spec.name.clone(),
                    ..main.clone()
                }));
            }
            let base_url = spec
                .base_url
                .clone()
                .or_else(|| url_var(kind).and_then(&env));
            connect(
                kind,
                Some(spec.name.clone()),
                base_url,
                spec.api_key_env.as_deref(),
                env,
            )
            .map(Some)
        }
    }
}

/// Fills in defaults and reads the key for one endpoint.
fn connect(
    kind: ProviderKind,
    model: Option<String>,
    base_url: Option<String>,
    api_key_env: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<ResolvedModel, SettingsError> {
    let (default_model, default_url, default_key) = match kind {
        ProviderKind::Demo => {
            return Ok(ResolvedModel::demo(model.as_deref().unwrap_or(DEMO_MODEL)));
        }
        ProviderKind::Openai => ("gpt-4.1", "https://api.openai.com/v1", OPENAI_KEY),
        ProviderKind::OpenaiResponses => ("gpt-5.1-codex", "https://api.openai.com/v1", OPENAI_KEY),
        ProviderKind::Anthropic => (
            "claude-sonnet-4-5",
            "https://api.anthropic.com",
            ANTHROPIC_KEY,
        ),
        ProviderKind::Gemini => (
            "gemini-2.5-pro",
            "https://generativelanguage.googleapis.com/v1beta",
            GEMINI_KEY,
        ),
    };
    let key_var = api_key_env.unwrap_or(default_key);
    let api_key = env(key_var).filter(|k| !k.is_empty()).map(Secret);
    // A self-hosted compatible server often needs no key; the official endpoints always do.
    if api_key.is_none() && base_url.is_none() {
        return Err(SettingsError::MissingKey {
            provider: kind.as_str(),
            env_var: key_var.to_owned(),
            alternative: if api_key_env.is_some() {
                String::new()
            } else {
                " (or `model.apiKeyEnv` to the name of the variable holding it)".to_owned()
            },
        });
    }
    Ok(ResolvedModel {
        kind,
        model: model.unwrap_or_else(|| default_model.to_owned()),
        base_url: base_url
            .unwrap_or_else(|| default_url.to_owned())
            .trim_end_matches('/')
            .to_owned(),
        api_key,
    })
}

/// The env var overriding a provider's base URL.
fn url_var(kind: ProviderKind) -> Option<&'static str> {
    match kind {
        ProviderKind::Openai | ProviderKind::OpenaiResponses => Some(OPENAI_URL),
        ProviderKind::Anthropic => Some(ANTHROPIC_URL),
        ProviderKind::Gemini => Some(GEMINI_URL),
        ProviderKind::Demo => None,
    }
}
