//! One settings file: JSON with comments, validated key by key so every problem names its
//! file and key (wrong types are errors, unknown keys are warnings).

use std::path::Path;

use corvid_protocol::ApprovalMode;
use serde_json::{Map, Value};

use super::{FastModelSetting, FastModelSpec, ProviderKind, Settings, SettingsError};

mod checkpoints;
mod web_search;

/// The smallest `model.contextWindow` taken: below it no real conversation fits.
const MIN_CONTEXT_WINDOW: u64 = 1_024;

/// The values one source sets; `None` leaves lower sources in charge.
#[derive(Debug, Clone, Default)]
pub(super) struct Partial {
    pub provider: Option<ProviderKind>,
    pub name: Option<String>,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub fallback: Option<String>,
    pub max_output_tokens: Option<u32>,
    pub stream_idle_timeout_ms: Option<u64>,
    pub supports_images: Option<bool>,
    pub context_window: Option<u64>,
    pub compact_threshold: Option<f64>,
    pub auto_compact: Option<bool>,
    pub api: Option<super::OpenAiApi>,
    pub reasoning_effort: Option<corvid_providers::ReasoningEffort>,
    pub reasoning_summary: Option<corvid_providers::ReasoningSummary>,
    pub store: Option<bool>,
    pub fast_model: Option<FastModelSetting>,
    pub compact_mode: Option<bool>,
    pub theme: Option<super::UiTheme>,
    pub emit_tool_use_summaries: Option<bool>,
    pub approval_mode: Option<ApprovalMode>,
    pub shell_timeout_ms: Option<u64>,
    pub auto_background_ms: Option<u64>,
    pub max_background: Option<usize>,
    pub sandbox: Option<corvid_tools::shell::SandboxLevel>,
    /// `tools.shellEnv`: a file that sets it replaces the lower files' lists.
    pub shell_env: Option<super::ShellEnvSettings>,
    /// `tools.protectedPaths`, `tools.allow`, `tools.deny`: every file's entries add up, so a
    /// later file can add rules but never drop an earlier file's.
    pub protected_paths: Vec<String>,
    pub allow: Vec<String>,
    pub deny: Vec<String>,
    pub max_attempts: Option<u32>,
    pub initial_delay_ms: Option<u64>,
    pub max_delay_ms: Option<u64>,
    pub max_turns: Option<u32>,
    pub subagents: Option<bool>,
    pub subagent_max_turns: Option<u32>,
    pub subagent_timeout_ms: Option<u64>,
    pub max_concurrent_subagents: Option<usize>,
    pub max_subagents_per_turn: Option<u32>,
    /// `mcpServers`: a later file's server replaces an earlier one of the same name.
    pub mcp_servers: Vec<corvid_mcp::ServerConfig>,
    pub mcp_startup_ms: Option<u64>,
    pub mcp_max_tools_per_server: Option<usize>,
    pub mcp_max_tools: Option<usize>,
    pub max_result_tokens: Option<u32>,
    pub context_file_names: Option<Vec<String>>,
    /// `web.allowPrivate` (user-level only, see `project_limits`).
    pub web_allow_private: Option<Vec<String>>,
    /// `webSearch` as a whole (user-level only, see `project_limits`).
    pub web_search: Option<super::WebSearchSettings>,
    /// Whether the file has a `telemetry` block (user-level only; the binary reads it).
    pub telemetry: bool,
    /// `checkpoints.*` (user-level only, see `project_limits`).
    pub checkpoints: checkpoints::CheckpointsPartial,
}

impl Partial {
    /// Lets every value `higher` sets win over this one.
    pub fn merge(&mut self, higher: Partial) {
        fn over<T>(slot: &mut Option<T>, value: Option<T>) {
            if value.is_some() {
                *slot = value;
            }
        }
        over(&mut self.provider, higher.provider);
        over(&mut self.name, higher.name);
        over(&mut self.base_url, higher.base_url);
        over(&mut self.api_key_env, higher.api_key_env);
        over(&mut self.fallback, higher.fallback);
        over(&mut self.max_output_tokens, higher.max_output_tokens);
        over(
            &mut self.stream_idle_timeout_ms,
            higher.stream_idle_timeout_ms,
        );
        over(&mut self.supports_images, higher.supports_images);
        over(&mut self.context_window, higher.context_window);
        over(&mut self.compact_threshold, higher.compact_threshold);
        over(&mut self.auto_compact, higher.auto_compact);
        over(&mut self.api, higher.api);
        over(&mut self.reasoning_effort, higher.reasoning_effort);
        over(&mut self.reasoning_summary, higher.reasoning_summary);
        over(&mut self.store, higher.store);
        over(&mut self.fast_model, higher.fast_model);
        over(&mut self.compact_mode, higher.compact_mode);
        over(&mut self.theme, higher.theme);
        over(
            &mut self.emit_tool_use_summaries,
            higher.emit_tool_use_summaries,
        );
        over(&mut self.approval_mode, higher.approval_mode);
        over(&mut self.shell_timeout_ms, higher.shell_timeout_ms);
        over(&mut self.auto_background_ms, higher.auto_background_ms);
        over(&mut self.max_background, higher.max_background);
        over(&mut self.sandbox, higher.sandbox);
        over(&mut self.shell_env, higher.shell_env);
        self.protected_paths.extend(higher.protected_paths);
        self.allow.extend(higher.allow);
        self.deny.extend(higher.deny);
        over(&mut self.max_attempts, higher.max_attempts);
        over(&mut self.initial_delay_ms, higher.initial_delay_ms);
        over(&mut self.max_delay_ms, higher.max_delay_ms);
        over(&mut self.max_turns, higher.max_turns);
        over(&mut self.subagents, higher.subagents);
        over(&mut self.subagent_max_turns, higher.subagent_max_turns);
        over(&mut self.subagent_timeout_ms, higher.subagent_timeout_ms);
        over(
            &mut self.max_concurrent_subagents,
            higher.max_concurrent_subagents,
        );
        over(
            &mut self.max_subagents_per_turn,
            higher.max_subagents_per_turn,
        );
        self.mcp_servers.extend(higher.mcp_servers);
        over(&mut self.mcp_startup_ms, higher.mcp_startup_ms);
        over(
            &mut self.mcp_max_tools_per_server,
            higher.mcp_max_tools_per_server,
        );
        over(&mut self.mcp_max_tools, higher.mcp_max_tools);
        over(&mut self.max_result_tokens, higher.max_result_tokens);
        over(&mut self.web_allow_private, higher.web_allow_private);
        over(&mut self.web_search, higher.web_search);
        over(&mut self.context_file_names, higher.context_file_names);
        self.checkpoints.merge(higher.checkpoints);
    }

    /// The defaults with every set value applied.
    pub fn into_settings(self) -> Settings {
        let mut s = Settings::default();
        s.model.provider = self.provider;
        s.model.name = self.name;
        s.model.base_url = self.base_url;
        s.model.api_key_env = self.api_key_env;
        s.model.fallback = self.fallback;
        s.model.max_output_tokens = self.max_output_tokens;
        s.model.stream_idle_timeout_ms = self.stream_idle_timeout_ms;
        s.model.supports_images = self.supports_images;
        s.model.context_window = self.context_window;
        s.model.compact_threshold = self.compact_threshold;
        s.model.auto_compact = self.auto_compact;
        s.model.api = self.api;
        s.model.reasoning_effort = self.reasoning_effort;
        s.model.reasoning_summary = self.reasoning_summary;
        s.model.store = self.store;
        s.fast_model = self.fast_model;
        if let Some(v) = self.compact_mode {
            s.ui.compact_mode = v;
        }
        if let Some(v) = self.theme {
            s.ui.theme = v;
        }
        if let Some(v) = self.emit_tool_use_summaries {
            s.experimental.emit_tool_use_summaries = v;
        }
        if let Some(v) = self.approval_mode {
            s.tools.approval_mode = v;
        }
        if let Some(v) = self.shell_timeout_ms {
            s.tools.shell_timeout_ms = v;
        }
        if let Some(v) = self.auto_background_ms {
            s.tools.auto_background_ms = Some(v);
        }
        if let Some(v) = self.max_background {
            s.tools.max_background = v;
        }
        if let Some(v) = self.sandbox {
            s.tools.sandbox = v;
        }
        if let Some(v) = self.shell_env {
            s.tools.shell_env = v;
        }
        s.tools.protected_paths = self.protected_paths;
        s.tools.allow = self.allow;
        s.tools.deny = self.deny;
        if let Some(v) = self.max_attempts {
            s.retry.max_attempts = v;
        }
        if let Some(v) = self.initial_delay_ms {
            s.retry.initial_delay_ms = v;
        }
        if let Some(v) = self.max_delay_ms {
            s.retry.max_delay_ms = v;
        }
        if let Some(v) = self.max_turns {
            s.agent.max_turns = v;
        }
        if let Some(v) = self.subagents {
            s.agent.subagents = v;
        }
        if let Some(v) = self.subagent_max_turns {
            s.agent.subagent_max_turns = v;
        }
        if let Some(v) = self.subagent_timeout_ms {
            s.agent.subagent_timeout_ms = v;
        }
        if let Some(v) = self.max_concurrent_subagents {
            s.agent.subagent_caps.concurrent = v;
        }
        if let Some(v) = self.max_subagents_per_turn {
            s.agent.subagent_caps.per_turn = v;
        }
        s.mcp.add_servers(self.mcp_servers);
        if let Some(ms) = self.mcp_startup_ms {
            s.mcp.startup_wait = std::time::Duration::from_millis(ms);
        }
        if let Some(n) = self.mcp_max_tools_per_server {
            s.mcp.tool_limits.per_server = n;
        }
        if let Some(n) = self.mcp_max_tools {
            s.mcp.tool_limits.total = n;
        }
        if let Some(v) = self.max_result_tokens {
            s.tools.max_result_tokens = v;
        }
        s.context.file_names = self.context_file_names;
        if let Some(list) = self.web_allow_private {
            s.web.allow_private = list;
        }
        if let Some(web_search) = self.web_search {
            s.web_search = web_search;
        }
        self.checkpoints.apply(&mut s.checkpoints);
        s
    }
}

/// Reads and validates one file; `Ok(None)` when it does not exist.
pub(super) fn read(
    path: &Path,
    warnings: &mut Vec<String>,
) -> Result<Option<Partial>, SettingsError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(SettingsError::Read {
                path: path.to_owned(),
                source,
            });
        }
    };
    parse(path, &text, warnings).map(Some)
}

/// Parses a file's text (JSON with `//` and `/* */` comments).
pub(super) fn parse(
    path: &Path,
    text: &str,
    warnings: &mut Vec<String>,
) -> Result<Partial, SettingsError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Ok(Partial::default());
    }
    let root: Value = json5::from_str(text).map_err(|e| syntax_error(path, text, &e))?;
    let mut v = Validator {
        path,
        warnings,
        out: Partial::default(),
    };
    let Value::Object(root) = root else {
        return Err(v.wrong_type("(top level)", "an object", &root));
    };
    v.root(&root)?;
    // The hooks block is read by `crate::hooks`; a malformed one stops the start like any key.
    crate::hooks::config::check(path, text)?;
    Ok(v.out)
}

/// The json5 error with a 1-based position; errors without one happened at the end of input.
fn syntax_error(path: &Path, text: &str, e: &json5::Error) -> SettingsError {
    let pos = e
        .position()
        .unwrap_or_else(|| json5::Position::from_offset(text.len(), text));
    let message = match e.code() {
        Some(code) => code.to_string(),
        None => e.to_string(),
    };
    SettingsError::Syntax {
        path: path.to_owned(),
        line: pos.line + 1,
        column: pos.column + 1,
        message,
    }
}

/// Walks one file's object, filling a [`Partial`].
struct Validator<'a> {
    path: &'a Path,
    warnings: &'a mut Vec<String>,
    out: Partial,
}

impl Validator<'_> {
    fn root(&mut self, root: &Map<String, Value>) -> Result<(), SettingsError> {
        for (key, value) in root {
            match key.as_str() {
                "model" => self.model(value)?,
                "fastModel" => self.out.fast_model = self.fast_model(value)?,
                "ui" => {
                    for (k, v) in self.section("ui", value)? {
                        match k.as_str() {
                            "compactMode" => {
                                self.out.compact_mode = self.boolean("ui.compactMode", v)?
                            }
                            "theme" => {
                                self.out.theme = match self.string("ui.theme", v)? {
                                    None => None,
                                    Some(s) => {
                                        Some(super::UiTheme::parse(&s).ok_or_else(|| {
                                            self.invalid(
                                                "ui.theme",
                                                &s,
                                                "`auto`, `dark` or `light`",
                                            )
                                        })?)
                                    }
                                };
                            }
                            _ => self.unknown(&format!("ui.{k}")),
                        }
                    }
                }
                "experimental" => {
                    for (k, v) in self.section("experimental", value)? {
                        match k.as_str() {
                            "emitToolUseSummaries" => {
                                self.out.emit_tool_use_summaries =
                                    self.boolean("experimental.emitToolUseSummaries", v)?;
                            }
                            _ => self.unknown(&format!("experimental.{k}")),
                        }
                    }
                }
                "tools" => self.tools(value)?,
                "retry" => self.retry(value)?,
                "agent" => self.agent(value)?,
                "mcpServers" => {
                    let servers = super::mcp::parse_servers(self.path, value, self.warnings)?;
                    self.out.mcp_servers = servers;
                }
                "mcp" => {
                    for (k, v) in self.section("mcp", value)? {
                        match k.as_str() {
                            "startupTimeoutMs" => {
                                self.out.mcp_startup_ms = self.number("mcp.startupTimeoutMs", v)?
                            }
                            "maxToolsPerServer" => {
                                self.out.mcp_max_tools_per_server =
                                    self.number("mcp.maxToolsPerServer", v)?
                            }
                            "maxTools" => {
                                self.out.mcp_max_tools = self.number("mcp.maxTools", v)?
                            }
                            _ => self.unknown(&format!("mcp.{k}")),
                        }
                    }
                }
                "context" => self.context(value)?,
                "checkpoints" => self.checkpoints(value)?,
                "webSearch" => self.web_search(value)?,
                "web" => {
                    for (k, v) in self.section("web", value)? {
                        match k.as_str() {
                            "allowPrivate" => {
                                let list = self.string_list("web.allowPrivate", v)?;
                                corvid_tools::web::AllowPrivate::parse(&list)
                                    .map_err(|e| self.invalid_entry("web.allowPrivate", e))?;
                                self.out.web_allow_private = Some(list);
                            }
                            _ => self.unknown(&format!("web.{k}")),
                        }
                    }
                }
                // Editors add a schema reference; it configures nothing.
                "$schema" => {}
                // Read and validated by `crate::hooks::config`, which reports their errors.
                "hooks" | "disableAllHooks" | "importClaudeHooks" => {}
                // Read by the binary's telemetry set-up, from the user's file only.
                "telemetry" => self.out.telemetry = true,
                _ => self.unknown(key),
            }
        }
        Ok(())
    }

    fn model(&mut self, value: &Value) -> Result<(), SettingsError> {
        for (k, v) in self.section("model", value)? {
            let key = format!("model.{k}");
            match k.as_str() {
                "provider" => self.out.provider = self.provider(&key, v)?,
                "name" => self.out.name = self.string(&key, v)?,
                "baseUrl" => self.out.base_url = self.string(&key, v)?,
                "apiKeyEnv" => self.out.api_key_env = self.string(&key, v)?,
                "fallback" => self.out.fallback = self.string(&key, v)?,
                "maxOutputTokens" => self.out.max_output_tokens = self.number(&key, v)?,
                "supportsImages" => self.out.supports_images = self.boolean(&key, v)?,
                "autoCompact" => self.out.auto_compact = self.boolean(&key, v)?,
                "store" => self.out.store = self.boolean(&key, v)?,
                "api" => {
                    self.out.api = match self.string(&key, v)? {
                        None => None,
                        Some(s) => Some(
                            super::OpenAiApi::parse(&s)
                                .ok_or_else(|| self.invalid(&key, &s, "`chat` or `responses`"))?,
                        ),
                    };
                }
                "reasoningEffort" => {
                    self.out.reasoning_effort = match self.string(&key, v)? {
                        None => None,
                        Some(s) => {
                            Some(corvid_providers::ReasoningEffort::parse(&s).ok_or_else(|| {
                                self.invalid(
                                    &key,
                                    &s,
                                    "`minimal`, `low`, `medium`, `high` or `xhigh`",
                                )
                            })?)
                        }
                    };
                }
                "reasoningSummary" => {
                    self.out.reasoning_summary = match self.string(&key, v)? {
                        None => None,
                        Some(s) => Some(corvid_providers::ReasoningSummary::parse(&s).ok_or_else(
                            || self.invalid(&key, &s, "`auto`, `concise`, `detailed` or `off`"),
                        )?),
                    };
                }
                "contextWindow" => {
                    let tokens = self.number(&key, v)?;
                    if tokens.is_some_and(|t: u64| t < MIN_CONTEXT_WINDOW) {
                        return Err(self.invalid(
                            &key,
                            &v.to_string(),
                            &format!("a number of tokens of at least {MIN_CONTEXT_WINDOW}"),
                        ));
                    }
                    self.out.context_window = tokens;
                }
                "compactThreshold" => {
                    self.out.compact_threshold = match v {
                        Value::Null => None,
                        Value::Number(n) => match n.as_f64() {
                            Some(share) if share > 0.0 && share <= 1.0 => Some(share),
                            _ => {
                                return Err(self.invalid(
                                    &key,
                                    &n.to_string(),
                                    "a share of the window above 0 and at most 1, e.g. 0.8",
                                ));
                            }
                        },
                        other => {
                            return Err(self.wrong_type(&key, "a number such as 0.8", other));
                        }
                    };
                }
                "streamIdleTimeoutMs" => {
                    let ms = self.number(&key, v)?;
                    if ms == Some(0) {
                        return Err(self.invalid(&key, "0", "milliseconds above 0"));
                    }
                    self.out.stream_idle_timeout_ms = ms;
                }
                _ => self.unknown(&key),
            }
        }
        Ok(())
    }

    fn fast_model(&mut self, value: &Value) -> Result<Option<FastModelSetting>, SettingsError> {
        let obj = match value {
            Value::Null => return Ok(None),
            Value::String(name) => return Ok(Some(FastModelSetting::Name(name.clone()))),
            Value::Object(obj) => obj,
            other => {
                return Err(self.wrong_type("fastModel", "a model name or an object", other));
            }
        };
        let mut spec = FastModelSpec {
            provider: None,
            name: String::new(),
            base_url: None,
            api_key_env: None,
        };
        for (k, v) in obj {
            let key = format!("fastModel.{k}");
            match k.as_str() {
                "provider" => spec.provider = self.provider(&key, v)?,
                "name" => spec.name = self.string(&key, v)?.unwrap_or_default(),
                "baseUrl" => spec.base_url = self.string(&key, v)?,
                "apiKeyEnv" => spec.api_key_env = self.string(&key, v)?,
                _ => self.unknown(&key),
            }
        }
        if spec.name.is_empty() {
            return Err(SettingsError::InvalidValue {
                origin: self.path.display().to_string(),
                key: "fastModel.name".into(),
                message: "is required when `fastModel` is an object".into(),
            });
        }
        Ok(Some(FastModelSetting::Model(spec)))
    }

    fn tools(&mut self, value: &Value) -> Result<(), SettingsError> {
        for (k, v) in self.section("tools", value)? {
            let key = format!("tools.{k}");
            match k.as_str() {
                "approvalMode" => {
                    self.out.approval_mode = match self.string(&key, v)? {
                        None => None,
                        Some(s) => Some(ApprovalMode::parse(&s).ok_or_else(|| {
                            self.invalid(
                                &key,
                                &s,
                                "`default`, `auto`, `auto-edit`, `yolo` or `plan`",
                            )
                        })?),
                    };
                }
                "shellTimeoutMs" => self.out.shell_timeout_ms = self.number(&key, v)?,
                "autoBackgroundMs" => {
                    self.out.auto_background_ms = match self.number::<u64>(&key, v)? {
                        Some(0) => {
                            return Err(self.invalid(
                                &key,
                                "0",
                                "at least 1 (leave it out to keep commands in the foreground)",
                            ));
                        }
                        n => n,
                    }
                }
                "maxBackground" => self.out.max_background = self.number(&key, v)?,
                "sandbox" => {
                    self.out.sandbox = match self.string(&key, v)? {
                        None => None,
                        Some(s) => {
                            Some(corvid_tools::shell::SandboxLevel::parse(&s).ok_or_else(|| {
                                self.invalid(&key, &s, "`off`, `workspace-write` or `read-only`")
                            })?)
                        }
                    };
                }
                "shellEnv" => self.out.shell_env = self.shell_env(v)?,
                "protectedPaths" => {
                    let list = self.string_list(&key, v)?;
                    crate::policy::protected::ProtectedPaths::new(&list, None, None)
                        .map_err(|e| self.invalid_entry(&key, e))?;
                    self.out.protected_paths = list;
                }
                "maxResultTokens" => {
                    self.out.max_result_tokens = match self.number::<u32>(&key, v)? {
                        Some(0) => return Err(self.invalid(&key, "0", "at least 1")),
                        n => n,
                    }
                }
                "allow" => self.out.allow = self.rule_list(&key, v)?,
                "deny" => self.out.deny = self.rule_list(&key, v)?,
                _ => self.unknown(&key),
            }
        }
        Ok(())
    }

    fn shell_env(
        &mut self,
        value: &Value,
    ) -> Result<Option<super::ShellEnvSettings>, SettingsError> {
        if value.is_null() {
            return Ok(None);
        }
        let mut env = super::ShellEnvSettings::default();
        for (k, v) in self.section("tools.shellEnv", value)? {
            let key = format!("tools.shellEnv.{k}");
            match k.as_str() {
                "include" => env.include = self.string_list(&key, v)?,
                "exclude" => env.exclude = self.string_list(&key, v)?,
                _ => self.unknown(&key),
            }
        }
        corvid_tools::shell::EnvFilter::new(&[], &env.include, &env.exclude)
            .map_err(|e| self.invalid_entry("tools.shellEnv", e))?;
        Ok(Some(env))
    }

    fn retry(&mut self, value: &Value) -> Result<(), SettingsError> {
        for (k, v) in self.section("retry", value)? {
            let key = format!("retry.{k}");
            match k.as_str() {
                "maxAttempts" => self.out.max_attempts = self.number(&key, v)?,
                "initialDelayMs" => self.out.initial_delay_ms = self.number(&key, v)?,
                "maxDelayMs" => self.out.max_delay_ms = self.number(&key, v)?,
                _ => self.unknown(&key),
            }
        }
        Ok(())
    }

    fn agent(&mut self, value: &Value) -> Result<(), SettingsError> {
        for (k, v) in self.section("agent", value)? {
            let key = format!("agent.{k}");
            match k.as_str() {
                "maxTurns" => {
                    self.out.max_turns = match self.number::<u32>(&key, v)? {
                        Some(0) => return Err(self.invalid(&key, "0", "at least 1")),
                        n => n,
                    }
                }
                "subagents" => self.out.subagents = self.boolean(&key, v)?,
                "subagentMaxTurns" => {
                    self.out.subagent_max_turns = match self.number::<u32>(&key, v)? {
                        Some(0) => return Err(self.invalid(&key, "0", "at least 1")),
                        n => n,
                    }
                }
                "subagentTimeoutMs" => {
                    self.out.subagent_timeout_ms = match self.number::<u64>(&key, v)? {
                        Some(0) => return Err(self.invalid(&key, "0", "at least 1")),
                        n => n,
                    }
                }
                "maxConcurrentSubagents" => {
                    self.out.max_concurrent_subagents = match self.number::<usize>(&key, v)? {
                        Some(0) => return Err(self.invalid(&key, "0", "at least 1")),
                        n => n,
                    }
                }
                "maxSubagentsPerTurn" => {
                    self.out.max_subagents_per_turn = match self.number::<u32>(&key, v)? {
                        Some(0) => return Err(self.invalid(&key, "0", "at least 1")),
                        n => n,
                    }
                }
                _ => self.unknown(&key),
            }
        }
        Ok(())
    }

    fn context(&mut self, value: &Value) -> Result<(), SettingsError> {
        for (k, v) in self.section("context", value)? {
            let key = format!("context.{k}");
            match k.as_str() {
                "fileNames" if v.is_null() => self.out.context_file_names = None,
                "fileNames" => {
                    let names = self.string_list(&key, v)?;
                    for name in &names {
                        crate::context::instructions::check_file_name(name)
                            .map_err(|e| self.invalid_entry(&key, e))?;
                    }
                    self.out.context_file_names = Some(names);
                }
                _ => self.unknown(&key),
            }
        }
        Ok(())
    }

    fn section<'v>(
        &self,
        name: &str,
        value: &'v Value,
    ) -> Result<Vec<(&'v String, &'v Value)>, SettingsError> {
        match value {
            Value::Object(obj) => Ok(obj.iter().collect()),
            Value::Null => Ok(Vec::new()),
            other => Err(self.wrong_type(name, "an object", other)),
        }
    }

    fn unknown(&mut self, key: &str) {
        self.warnings.push(format!(
            "{}: unknown settings key `{key}` (ignored)",
            self.path.display()
        ));
    }

    fn string(&self, key: &str, value: &Value) -> Result<Option<String>, SettingsError> {
        match value {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(s.clone())),
            other => Err(self.wrong_type(key, "a string", other)),
        }
    }

    fn string_list(&self, key: &str, value: &Value) -> Result<Vec<String>, SettingsError> {
        match value {
            Value::Null => Ok(Vec::new()),
            Value::Array(items) => items
                .iter()
                .map(|item| match item {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(self.wrong_type(&format!("{key}[]"), "a string", other)),
                })
                .collect(),
            other => Err(self.wrong_type(key, "a list of strings", other)),
        }
    }

    /// A list of permission rules, each checked here so a bad one names this file.
    fn rule_list(&self, key: &str, value: &Value) -> Result<Vec<String>, SettingsError> {
        let list = self.string_list(key, value)?;
        for text in &list {
            crate::policy::rules::Rule::parse(text, crate::policy::path_pattern::Case::Sensitive)
                .map_err(|e| self.invalid_entry(key, format!("entry `{text}` {e}")))?;
        }
        Ok(list)
    }

    /// A list entry that does not parse; `message` names the entry and the problem.
    fn invalid_entry(&self, key: &str, message: String) -> SettingsError {
        SettingsError::InvalidValue {
            origin: self.path.display().to_string(),
            key: key.to_owned(),
            message: format!("is invalid: {message}"),
        }
    }

    fn boolean(&self, key: &str, value: &Value) -> Result<Option<bool>, SettingsError> {
        match value {
            Value::Null => Ok(None),
            Value::Bool(b) => Ok(Some(*b)),
            other => Err(self.wrong_type(key, "true or false", other)),
        }
    }

    fn number<T: TryFrom<u64>>(
        &self,
        key: &str,
        value: &Value,
    ) -> Result<Option<T>, SettingsError> {
        match value {
            Value::Null => Ok(None),
            Value::Number(n) => n
                .as_u64()
                .and_then(|n| T::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| self.invalid(key, &n.to_string(), "a whole number in range")),
            other => Err(self.wrong_type(key, "a whole number", other)),
        }
    }

    fn provider(&self, key: &str, value: &Value) -> Result<Option<ProviderKind>, SettingsError> {
        match self.string(key, value)? {
            None => Ok(None),
            Some(s) => ProviderKind::parse(&s).map(Some).ok_or_else(|| {
                self.invalid(
                    key,
                    &s,
                    "`openai`, `openai-responses`, `anthropic`, `gemini` or `demo`",
                )
            }),
        }
    }

    fn wrong_type(&self, key: &str, expected: &str, found: &Value) -> SettingsError {
        SettingsError::WrongType {
            path: self.path.to_owned(),
            key: key.to_owned(),
            expected: expected.to_owned(),
            found: describe(found),
        }
    }

    fn invalid(&self, key: &str, got: &str, allowed: &str) -> SettingsError {
        SettingsError::InvalidValue {
            origin: self.path.display().to_string(),
            key: key.to_owned(),
            message: format!("is `{got}`; expected {allowed}"),
        }
    }
}

/// A short description of a JSON value for error messages.
fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {s:?}"),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}
