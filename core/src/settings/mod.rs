//! Settings: defaults, user and project files, environment, flags (SPEC §1.2).
//!
//! Sources, lowest to highest precedence: built-in defaults, `$CORVID_HOME/settings.json`
//! (default `~/.corvid/settings.json`), `<project>/.corvid/settings.json` (only in a trusted
//! folder, and never for the user-level-only keys), environment variables, command-line
//! flags. The environment is always passed in as a lookup function so callers (and tests)
//! decide where it comes from.

mod file;
mod mcp;
mod project;
mod project_limits;
mod provider;
pub(crate) mod trust;
mod trust_list;
mod web_search;
mod wiring;

use std::path::{Path, PathBuf};

use corvid_protocol::ApprovalMode;

pub use mcp::McpSettings;
pub use project::{SettingsFiles, grant_folders};
pub(crate) use project::{is_own_folder, open_regular, project_search_dirs};
pub use provider::{
    DEMO_FAST_MODEL, DEMO_MODEL, ResolvedModel, Secret, resolve_fast_model, resolve_provider,
};
pub use trust::{
    ConfigFile, GrantedFolders, ProjectTrust, TRUSTED_FOLDERS_FILE, Trust, TrustGrant,
    TrustedFolders, Verdict,
};
pub use web_search::{SearchProvider, SearchProviderKind, SessionSearch, WebSearchSettings};
pub(crate) use wiring::shell_policy;
pub use wiring::{DEMO_PACING_ENV, agent_config, start_mcp_servers};

/// Env var naming corvid's home directory (settings, sessions).
pub const CORVID_HOME_ENV: &str = "CORVID_HOME";

/// Which model API a model is reached through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    /// OpenAI Chat Completions (and compatible servers).
    Openai,
    /// The OpenAI Responses API (`model.api: "responses"`).
    OpenaiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Google's Gemini API (`GEMINI_API_KEY`).
    Gemini,
    /// The built-in offline scripted model.
    Demo,
}

impl ProviderKind {
    /// The settings and flag name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Openai => "openai",
            Self::OpenaiResponses => "openai-responses",
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
            Self::Demo => "demo",
        }
    }

    /// Parses a settings value.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "openai" => Some(Self::Openai),
            "openai-responses" => Some(Self::OpenaiResponses),
            "anthropic" => Some(Self::Anthropic),
            "gemini" => Some(Self::Gemini),
            "demo" => Some(Self::Demo),
            _ => None,
        }
    }
}

/// The effective settings after all sources were applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub model: ModelSettings,
    pub fast_model: Option<FastModelSetting>,
    pub ui: UiSettings,
    pub experimental: ExperimentalSettings,
    pub tools: ToolSettings,
    pub retry: RetrySettings,
    pub agent: AgentSettings,
    /// `mcpServers` and `mcp.*`.
    pub mcp: McpSettings,
    pub context: ContextSettings,
    /// `web.*`: the web tools.
    pub web: WebSettings,
    /// `webSearch`: the services `web_search` uses (user settings only).
    pub web_search: WebSearchSettings,
    /// `checkpoints.*`: undo of the agent's turns (issue 26).
    pub checkpoints: crate::checkpoints::CheckpointSettings,
    /// The project folder and which of its own configuration files apply; agent files (and
    /// later hooks and commands) are read through it.
    pub project: ProjectTrust,
}

/// `model.*`: the main model. Unset values are filled in by [`resolve_provider`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelSettings {
    /// Explicit, or inferred from which API key is present (Anthropic first).
    pub provider: Option<ProviderKind>,
    pub name: Option<String>,
    pub base_url: Option<String>,
    /// Name of the env var holding the key (default `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`).
    pub api_key_env: Option<String>,
    /// Model tried when the main model keeps failing (SPEC §3.4).
    pub fallback: Option<String>,
    pub max_output_tokens: Option<u32>,
    /// `model.streamIdleTimeoutMs`: how long a response may send nothing before it fails
    /// (unset: the providers' default).
    pub stream_idle_timeout_ms: Option<u64>,
    /// `model.supportsImages`: overrides corvid's table of models that accept images.
    pub supports_images: Option<bool>,
    /// `model.contextWindow`: the window in tokens, over corvid's table of model families.
    pub context_window: Option<u64>,
    /// `model.compactThreshold`: the share of the window a request may fill before corvid
    /// compacts the conversation first (default 0.8).
    pub compact_threshold: Option<f64>,
    /// `model.autoCompact`: whether corvid compacts on its own (default true).
    pub auto_compact: Option<bool>,
    /// `model.api` (or `OPENAI_API`): which OpenAI API the `openai` provider speaks; already
    /// applied to `provider` (`responses` makes it [`ProviderKind::OpenaiResponses`]).
    pub api: Option<OpenAiApi>,
    /// `model.reasoningEffort` (also `--reasoning-effort`): sent to reasoning models.
    pub reasoning_effort: Option<corvid_providers::ReasoningEffort>,
    /// `model.reasoningSummary`: the Responses API's reasoning summary (default `auto` on
    /// reasoning models).
    pub reasoning_summary: Option<corvid_providers::ReasoningSummary>,
    /// `model.store`: the Responses API keeps the session's responses and later turns send
    /// only their new items (`previous_response_id`); default false (stateless).
    pub store: Option<bool>,
}

/// `model.api`: the two OpenAI APIs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenAiApi {
    /// Chat Completions (the default, and what compatible servers speak).
    Chat,
    /// The Responses API.
    Responses,
}

impl OpenAiApi {
    /// Parses a settings or `OPENAI_API` value.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "chat" => Some(Self::Chat),
            "responses" => Some(Self::Responses),
            _ => None,
        }
    }
}

/// `fastModel`: the model writing tool-use summaries.
#[derive(Debug, Clone, PartialEq)]
pub enum FastModelSetting {
    /// A model name on the main model's provider.
    Name(String),
    /// A model on a provider of its own.
    Model(FastModelSpec),
}

/// The object form of `fastModel`; unset fields default to the main provider's values.
#[derive(Debug, Clone, PartialEq)]
pub struct FastModelSpec {
    pub provider: Option<ProviderKind>,
    pub name: String,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
}

/// `ui.*`.
#[derive(Debug, Clone, PartialEq)]
pub struct UiSettings {
    pub compact_mode: bool,
    /// `ui.theme`: the terminal UI's palette.
    pub theme: UiTheme,
}

/// `ui.theme`: which palette the terminal UI draws with. `auto` asks the terminal for its
/// background colour (OSC 11) and takes dark when it does not answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UiTheme {
    #[default]
    Auto,
    Dark,
    Light,
}

impl UiTheme {
    /// `auto`, `dark` or `light`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "auto" => Some(Self::Auto),
            "dark" => Some(Self::Dark),
            "light" => Some(Self::Light),
            _ => None,
        }
    }
}

/// `experimental.*`.
#[derive(Debug, Clone, PartialEq)]
pub struct ExperimentalSettings {
    /// The setting layer of the summary gate (SPEC §7.1); env switches are read by the gate.
    pub emit_tool_use_summaries: bool,
}

/// `tools.*`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSettings {
    pub approval_mode: ApprovalMode,
    pub shell_timeout_ms: u64,
    /// `tools.autoBackgroundMs`: a foreground command still running after this long moves
    /// to the background instead of running into its timeout (`None`: never).
    pub auto_background_ms: Option<u64>,
    /// `tools.maxBackground`: how many background processes may run at once.
    pub max_background: usize,
    /// `tools.sandbox`: `off`, `workspace-write` (default) or `read-only`.
    pub sandbox: corvid_tools::shell::SandboxLevel,
    /// `tools.shellEnv`: which variables shell commands inherit beyond the defaults.
    pub shell_env: ShellEnvSettings,
    /// `tools.protectedPaths`: globs added to the built-in protected paths (`!glob` removes).
    pub protected_paths: Vec<String>,
    /// `tools.allow`: rules that run without asking (`run_shell_command(git status)`).
    pub allow: Vec<String>,
    /// `tools.deny`: rules refused without asking; they win over every allow.
    pub deny: Vec<String>,
    /// `tools.maxResultTokens`: a tool result longer than this (estimated at 4 bytes a token)
    /// is cut before it enters the history.
    pub max_result_tokens: u32,
}

/// `tools.shellEnv`: name patterns (names or globs, case-insensitive) overriding which
/// variables are kept from shell commands.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShellEnvSettings {
    /// Kept even when they look like secrets.
    pub include: Vec<String>,
    /// Dropped besides the provider keys and secret-looking names.
    pub exclude: Vec<String>,
}

/// `agent.*`: the task loop.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSettings {
    /// `agent.maxTurns`: the most model turns one task may take (at least 1).
    pub max_turns: u32,
    /// `agent.subagents`: whether the model is offered the `task` tool (default on).
    pub subagents: bool,
    /// `agent.subagentMaxTurns`: the most model turns a `task` call's child may take.
    pub subagent_max_turns: u32,
    /// `agent.subagentTimeoutMs`: how long a `task` call's child may work.
    pub subagent_timeout_ms: u64,
    /// `agent.maxConcurrentSubagents` (default 4) and `agent.maxSubagentsPerTurn` (default 16).
    pub subagent_caps: crate::policy::SubagentCaps,
}

/// `context.*`: what goes into the model's context besides the conversation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContextSettings {
    /// `context.fileNames`: the instructions file names read in each folder (unset: the
    /// standard `AGENTS.md`/`CORVID.md` set).
    pub file_names: Option<Vec<String>>,
}

/// `web.*`, read from user settings only.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WebSettings {
    /// `web.allowPrivate`: private hosts, addresses and CIDRs `web_fetch` may reach
    /// (`127.0.0.1:8080`, `10.0.0.0/8`); a project file cannot set it.
    pub allow_private: Vec<String>,
}

/// `retry.*`.
#[derive(Debug, Clone, PartialEq)]
pub struct RetrySettings {
    pub max_attempts: u32,
    pub initial_delay_ms: u64,
    pub max_delay_ms: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            model: ModelSettings::default(),
            fast_model: None,
            ui: UiSettings {
                compact_mode: false,
                theme: UiTheme::Auto,
            },
            experimental: ExperimentalSettings {
                emit_tool_use_summaries: true,
            },
            tools: ToolSettings {
                approval_mode: ApprovalMode::Default,
                shell_timeout_ms: 120_000,
                auto_background_ms: None,
                max_background: 8,
                sandbox: corvid_tools::shell::SandboxLevel::WorkspaceWrite,
                shell_env: ShellEnvSettings::default(),
                protected_paths: Vec::new(),
                allow: Vec::new(),
                deny: Vec::new(),
                max_result_tokens: crate::context::result_budget::DEFAULT_MAX_RESULT_TOKENS,
            },
            retry: RetrySettings {
                max_attempts: 5,
                initial_delay_ms: 1_000,
                max_delay_ms: 30_000,
            },
            agent: AgentSettings {
                max_turns: crate::policy::MaxTurns::DEFAULT.0,
                subagents: true,
                subagent_max_turns: crate::policy::MaxTurns::SUBAGENT_DEFAULT.0,
                subagent_timeout_ms: u64::try_from(
                    crate::policy::SUBAGENT_DEFAULT_TIME_LIMIT.as_millis(),
                )
                .unwrap_or(u64::MAX),
                subagent_caps: crate::policy::SubagentCaps::DEFAULT,
            },
            mcp: McpSettings::default(),
            context: ContextSettings::default(),
            web: WebSettings::default(),
            web_search: WebSearchSettings::default(),
            checkpoints: crate::checkpoints::CheckpointSettings::default(),
            project: ProjectTrust::default(),
        }
    }
}

/// Command-line flags, the highest-precedence source. `None` leaves lower sources in charge.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    pub provider: Option<ProviderKind>,
    pub model: Option<String>,
    /// `--fast-model NAME`: a name on the main provider.
    pub fast_model: Option<String>,
    pub approval_mode: Option<ApprovalMode>,
    pub compact_mode: Option<bool>,
    /// `--reasoning-effort`.
    pub reasoning_effort: Option<corvid_providers::ReasoningEffort>,
}

/// The user's home directory (`$HOME`, else the system's idea of it), canonical when it exists.
pub(crate) fn user_home(env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    env("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .or_else(dirs::home_dir)
        .map(|h| h.canonicalize().unwrap_or(h))
}

/// `$CORVID_HOME`, else `~/.corvid`; `None` only when there is no home directory at all.
pub fn corvid_home(env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    match env(CORVID_HOME_ENV).filter(|v| !v.is_empty()) {
        Some(home) => Some(PathBuf::from(home)),
        None => dirs::home_dir().map(|home| home.join(".corvid")),
    }
}

/// The process environment as a lookup function; empty values count as unset.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Loaded settings plus the warnings (unknown keys, ignored project keys) the user must see.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    pub settings: Settings,
    pub warnings: Vec<String>,
    /// Whether the project folder is trusted: anything else the project provides (MCP
    /// servers, hooks, agent files) applies only when this is [`Trust::Trusted`].
    pub trust: Trust,
}

/// Why settings could not be loaded or a provider could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// The file exists but could not be read.
    #[error("cannot read settings file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A file corvid keeps (the trusted folders) could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is not valid JSON (with comments). Line and column are 1-based.
    #[error("{}:{line}:{column}: invalid settings file: {message}", path.display())]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// A key holds a value of the wrong JSON type.
    #[error("{}: settings key `{key}` must be {expected}, found {found}", path.display())]
    WrongType {
        path: PathBuf,
        key: String,
        expected: String,
        found: String,
    },
    /// A key holds a value of the right type but not an allowed one.
    #[error("{origin}: settings key `{key}` {message}")]
    InvalidValue {
        origin: String,
        key: String,
        message: String,
    },
    /// Nothing says which model to use.
    #[error(
        "no model provider is configured. Set ANTHROPIC_API_KEY or OPENAI_API_KEY (with \
         OPENAI_BASE_URL for an OpenAI-compatible server), or set `model.provider` in {settings_hint}; \
         or run `corvid --demo` to try the built-in offline demo model"
    )]
    NoProvider { settings_hint: String },
    /// A provider was chosen but its key is missing.
    #[error(
        "the {provider} provider needs an API key: set {env_var}{alternative}, \
         or run `corvid --demo` to try the built-in offline demo model"
    )]
    MissingKey {
        provider: &'static str,
        env_var: String,
        alternative: String,
    },
    /// The provider could not be set up (bad base URL, no TLS provider).
    #[error(transparent)]
    ProviderSetup(#[from] corvid_providers::ConfigError),
}

/// Loads settings from the standard files for a session in `cwd`, the environment and flags;
/// the project's files apply when its folder is trusted (remembered, or granted by `grant`)
/// and the user accepted their content.
pub fn load(
    cwd: &Path,
    env: impl Fn(&str) -> Option<String>,
    overrides: &Overrides,
    grant: TrustGrant,
) -> Result<Loaded, SettingsError> {
    let files = SettingsFiles::discover(cwd, &env);
    let project = files.trust(&grant, &env)?;
    load_with(&files, &project, env, overrides)
}

/// Loads settings from explicit files (lowest to highest: user, project), env and flags.
/// The project file is read only when `trust` says so, and never sets user-level-only keys.
pub fn load_from(
    files: &SettingsFiles,
    trust: Trust,
    env: impl Fn(&str) -> Option<String>,
    overrides: &Overrides,
) -> Result<Loaded, SettingsError> {
    let project = ProjectTrust::vouched(files.project_folder().map(Path::to_owned), trust);
    load_with(files, &project, env, overrides)
}

/// [`load_from`] with the project's trust decided file by file: the project file applies
/// only when `project` accepts its content, read once (so what was checked is what applies).
pub fn load_with(
    files: &SettingsFiles,
    project: &ProjectTrust,
    env: impl Fn(&str) -> Option<String>,
    overrides: &Overrides,
) -> Result<Loaded, SettingsError> {
    let mut warnings = Vec::new();
    let mut layer = match &files.user {
        Some(path) => file::read(path, &mut warnings)?.unwrap_or_default(),
        None => file::Partial::default(),
    };
    if let Some(path) = files.project_file() {
        let content = match project.trust {
            // Not even read: nothing of it may apply.
            Trust::Untrusted => path.exists().then(Vec::new),
            Trust::Trusted => {
                project::read_project_file(path).map_err(|source| SettingsError::Read {
                    path: path.to_owned(),
                    source,
                })?
            }
        };
        if let Some(content) = content {
            match project.verdict(path, &content) {
                Verdict::Apply => {
                    let text = String::from_utf8(content).map_err(|e| SettingsError::Read {
                        path: path.to_owned(),
                        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
                    })?;
                    let mut from_project = file::parse(path, &text, &mut warnings)?;
                    project_limits::restrict(path, &layer, &mut from_project, &mut warnings);
                    layer.merge(from_project);
                }
                verdict => warnings.extend(ProjectTrust::ignored_warning(
                    path,
                    "project settings",
                    verdict,
                )),
            }
        }
    }

    // The provider decides which env vars apply, so settle it before the env layer.
    let provider = overrides
        .provider
        .or(layer.provider)
        .or_else(|| infer_provider(&env));
    layer.merge(env_layer(provider, &env));
    layer.merge(openai_api_env(&env)?);
    layer.merge(file::Partial {
        provider: overrides.provider,
        name: overrides.model.clone(),
        fast_model: overrides.fast_model.clone().map(FastModelSetting::Name),
        approval_mode: overrides.approval_mode,
        compact_mode: overrides.compact_mode,
        reasoning_effort: overrides.reasoning_effort,
        ..file::Partial::default()
    });
    let mut settings = layer.into_settings();
    settings.model.provider = match (provider, settings.model.api) {
        (Some(ProviderKind::Openai), Some(OpenAiApi::Responses)) => {
            Some(ProviderKind::OpenaiResponses)
        }
        _ => provider,
    };
    settings.project = project.clone();
    Ok(Loaded {
        settings,
        warnings,
        trust: project.trust,
    })
}

/// With no provider set anywhere: Anthropic if its key is present, else OpenAI if its key is,
/// else Gemini if its key is.
fn infer_provider(env: impl Fn(&str) -> Option<String>) -> Option<ProviderKind> {
    if env(provider::ANTHROPIC_KEY).is_some() {
        Some(ProviderKind::Anthropic)
    } else if env(provider::OPENAI_KEY).is_some() {
        Some(ProviderKind::Openai)
    } else if env(provider::GEMINI_KEY).is_some() {
        Some(ProviderKind::Gemini)
    } else {
        None
    }
}

/// `OPENAI_API`: `responses` or `chat`, like `model.api`; any other value is an error naming it.
fn openai_api_env(env: impl Fn(&str) -> Option<String>) -> Result<file::Partial, SettingsError> {
    let Some(value) = env(OPENAI_API_ENV) else {
        return Ok(file::Partial::default());
    };
    let api = OpenAiApi::parse(value.trim()).ok_or_else(|| SettingsError::InvalidValue {
        origin: "environment".to_owned(),
        key: OPENAI_API_ENV.to_owned(),
        message: format!("is `{value}`; expected `chat` or `responses`"),
    })?;
    Ok(file::Partial {
        api: Some(api),
        ..file::Partial::default()
    })
}

/// Env var choosing the OpenAI API (`chat` or `responses`), like `model.api`.
pub const OPENAI_API_ENV: &str = "OPENAI_API";

/// `OPENAI_MODEL`/`OPENAI_BASE_URL` or the Anthropic pair, for the provider in use only.
fn env_layer(
    provider: Option<ProviderKind>,
    env: impl Fn(&str) -> Option<String>,
) -> file::Partial {
    let (model_var, url_var) = match provider {
        Some(ProviderKind::Openai | ProviderKind::OpenaiResponses) => {
            ("OPENAI_MODEL", provider::OPENAI_URL)
        }
        Some(ProviderKind::Anthropic) => ("ANTHROPIC_MODEL", provider::ANTHROPIC_URL),
        Some(ProviderKind::Gemini) => ("GEMINI_MODEL", provider::GEMINI_URL),
        Some(ProviderKind::Demo) | None => return file::Partial::default(),
    };
    file::Partial {
        name: env(model_var),
        base_url: env(url_var),
        ..file::Partial::default()
    }
}
