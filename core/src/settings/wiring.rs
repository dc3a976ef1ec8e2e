//! Settings to a ready [`AgentConfig`]: the one place every front end (headless, TUI, ACP)
//! turns configuration into providers, tools and policies.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use corvid_providers::demo::{DEFAULT_PACING, DemoProvider};
use corvid_providers::limits::DEFAULT_IDLE_TIMEOUT;
use corvid_providers::{
    AnthropicProvider, ApiKey, GeminiProvider, OpenAiChatProvider, OpenAiResponsesProvider,
    Provider, ProviderConfig, Reasoning, ResponseStorage,
};
use corvid_tools::shell::{BackgroundLimits, BackgroundProcesses, EnvFilter, ShellPolicy};

use super::{
    FastModelSetting, ProviderKind, ResolvedModel, Settings, SettingsError, resolve_fast_model,
    resolve_provider,
};
use crate::agent::{AgentConfig, default_system_prompt};
use crate::context::instructions::{self, FileNames, ProjectInstructions};
use crate::policy::SessionPolicy;
use crate::policy::protected::ProtectedPaths;
use crate::policy::rules::PermissionRules;
use crate::retry::RetryPolicy;
use crate::session::RecordedSecrets;
use crate::summary::{SummaryConfig, summaries_enabled};

/// Hidden knob: milliseconds between the demo model's streamed pieces (tests set 0).
pub const DEMO_PACING_ENV: &str = "CORVID_DEMO_PACING_MS";

/// A new session's configuration from `settings`: main provider and model, fallback, fast
/// model for summaries (gated per SPEC §7.1), tools on the local disk, approval mode, retry
/// policy and shell timeout. Front ends adjust fields afterwards (ACP swaps `fs`, resuming
/// sets `history`).
pub fn agent_config(
    settings: &Settings,
    env: impl Fn(&str) -> Option<String>,
    cwd: &Path,
    session_id: &str,
) -> Result<AgentConfig, SettingsError> {
    let main = resolve_provider(settings, &env)?;
    let fast = resolve_fast_model(settings, &main, &env)?;
    let pacing = env(DEMO_PACING_ENV)
        .and_then(|ms| ms.trim().parse::<u64>().ok())
        .map_or(DEFAULT_PACING, Duration::from_millis);
    let endpoint = Endpoint {
        idle_timeout: settings
            .model
            .stream_idle_timeout_ms
            .map_or(DEFAULT_IDLE_TIMEOUT, Duration::from_millis),
        // Each provider redacts the other model's key too, should a server echo it.
        other_secrets: [&main, fast.as_ref().unwrap_or(&main)]
            .iter()
            .filter_map(|m| m.api_key.as_ref().map(|k| ApiKey::new(k.expose())))
            .collect(),
        session_id: session_id.to_owned(),
        reasoning: Reasoning {
            effort: settings.model.reasoning_effort,
            summary: settings.model.reasoning_summary,
        },
        storage: match settings.model.store {
            Some(true) => ResponseStorage::Stored,
            Some(false) | None => ResponseStorage::Stateless,
        },
        server_search: None,
        hosted_search: None,
    };
    // The user's `web.allowPrivate`, validated when the file was read.
    let web_allow =
        corvid_tools::web::AllowPrivate::parse(&settings.web.allow_private).map_err(|message| {
            SettingsError::InvalidValue {
                origin: "settings".to_owned(),
                key: "web.allowPrivate".to_owned(),
                message: format!("is invalid: {message}"),
            }
        })?;
    let search = settings
        .web_search
        .for_session(main.kind, &web_allow)
        .map_err(|message| SettingsError::InvalidValue {
            origin: "settings".to_owned(),
            key: "webSearch.providers".to_owned(),
            message: format!("is refused: {message}"),
        })?;
    let main_endpoint = Endpoint {
        server_search: match &search {
            Some(super::SessionSearch::Anthropic(server)) => Some(*server),
            _ => None,
        },
        hosted_search: match &search {
            Some(super::SessionSearch::OpenAi {
                allowed_domains,
                max_per_session,
            }) => Some((allowed_domains.clone(), *max_per_session)),
            _ => None,
        },
        ..endpoint.clone()
    };
    let provider = build_provider(&main, cwd, pacing, &main_endpoint)?;
    let instructions = project_instructions(settings, &env, cwd);

    let summaries = match fast {
        Some(fast)
            if summaries_enabled(
                &env,
                Some(settings.experimental.emit_tool_use_summaries),
                true,
            ) =>
        {
            let fast_provider = if same_endpoint(&fast, &main) {
                Arc::clone(&provider)
            } else {
                // The reasoning settings are the main model's; a fast model keeps its defaults.
                let endpoint = Endpoint {
                    reasoning: Reasoning::default(),
                    ..endpoint.clone()
                };
                build_provider(&fast, cwd, pacing, &endpoint)?
            };
            Some(SummaryConfig {
                provider: fast_provider,
                model: fast.model,
            })
        }
        _ => None,
    };

    let mut policy = approval_policy(settings, &env)?;
    policy.recorded_secrets =
        RecordedSecrets::from_env(key_vars(settings).iter().map(String::as_str), &env);
    if settings.agent.subagents {
        policy.subagents = crate::policy::Subagents::On {
            max_turns: crate::policy::MaxTurns(settings.agent.subagent_max_turns),
            time_limit: Duration::from_millis(settings.agent.subagent_timeout_ms),
            types: crate::agents::files::load(
                super::corvid_home(&env).as_deref(),
                settings.project.folder.as_deref().unwrap_or(cwd),
                &settings.project,
            ),
        };
    }
    let mut instructions = instructions;
    policy.hooks = session_hooks(settings, &env, cwd, &mut instructions.warnings)?.map(|hooks| {
        let project = settings
            .project
            .folder
            .clone()
            .unwrap_or_else(|| cwd.to_owned());
        Arc::new(crate::hooks::SessionHooks::new(
            hooks,
            session_id.to_owned(),
            project,
        ))
    });
    policy.checkpoints = session_checkpoints(settings, &env, cwd, session_id)
        .map_err(|warning| instructions.warnings.push(warning))
        .ok()
        .flatten();
    // `auto` runs edits unasked only while undo can really take them back: the setting is not
    // enough when the store could not be opened (home folder, unwritable `$CORVID_HOME`).
    policy.undo = crate::policy::unasked::Undo::from_enabled(policy.checkpoints.is_some());
    let mut tools = corvid_tools::builtin_tools().replacing(Arc::new(corvid_tools::WebFetch::new(
        web_allow,
        Arc::new(corvid_tools::web::SystemResolver),
    )));
    if let Some(super::SessionSearch::Keyed(search)) = search {
        tools = tools.with_tool(Arc::new(search));
    }
    if let Some(servers) = super::mcp::start(&settings.mcp, policy.shell.env.clone(), cwd)? {
        tools = tools.with_source(Arc::new(servers));
    }
    let (library, skills) = commands_library(settings, &env, cwd, &main.model);
    let mut system_prompt = instructions.append_to(default_system_prompt(cwd));
    if let Some((listing, warning)) = skills {
        system_prompt.push_str("\n\n");
        system_prompt.push_str(&listing);
        tools = tools.with_tool(Arc::new(crate::commands::skill_tool::SkillTool::new(
            library.clone(),
        )));
        instructions.warnings.extend(warning);
    }
    instructions.warnings.extend(library.commands().warnings);
    policy.commands = Some(library);
    Ok(AgentConfig {
        session_id: session_id.to_owned(),
        provider,
        model: main.model,
        fallback_model: settings.model.fallback.clone(),
        max_output_tokens: settings.model.max_output_tokens,
        system_prompt,
        instructions,
        cwd: cwd.to_owned(),
        tools,
        fs: Arc::new(corvid_tools::LocalFs),
        approval_mode: settings.tools.approval_mode,
        retry: RetryPolicy {
            max_attempts: settings.retry.max_attempts,
            initial_delay: Duration::from_millis(settings.retry.initial_delay_ms),
            max_delay: Duration::from_millis(settings.retry.max_delay_ms),
        },
        shell_timeout: Duration::from_millis(settings.tools.shell_timeout_ms),
        summaries,
        history: Vec::new(),
        policy,
    })
}

/// The session's commands and skills, and the skills' listing for the system prompt (with
/// a warning when the budget cut some) when the model may load any.
fn commands_library(
    settings: &Settings,
    env: impl Fn(&str) -> Option<String>,
    cwd: &Path,
    model: &str,
) -> (
    Arc<crate::commands::Library>,
    Option<(String, Option<String>)>,
) {
    let library = crate::commands::Library::for_settings(settings, env, cwd);
    let skills = library.skills();
    let window = settings.model.context_window.unwrap_or_else(|| {
        crate::context::window::known_window(model)
            .unwrap_or(crate::context::window::DEFAULT_WINDOW)
    });
    // About 2% of the context window, at about 4 characters a token.
    let budget = usize::try_from(window / 50 * 4).unwrap_or(usize::MAX);
    (library, skills.listing(budget))
}

/// The configured MCP servers, started in the background (for `corvid mcp list`; sessions
/// start theirs in [`agent_config`]); `None` when none is configured.
pub fn start_mcp_servers(
    settings: &Settings,
    cwd: &Path,
) -> Result<Option<corvid_mcp::McpServers>, SettingsError> {
    let filter = shell_policy(settings).map_err(|e| SettingsError::InvalidValue {
        origin: "settings".to_owned(),
        key: "tools.shellEnv".to_owned(),
        message: format!("is invalid: {e}"),
    })?;
    super::mcp::start(&settings.mcp, filter.env, cwd)
}

/// The session's checkpoints; `Ok(None)` when the settings turn them off, `Err` with the
/// warning the session starts with when they cannot be taken.
fn session_checkpoints(
    settings: &Settings,
    env: &impl Fn(&str) -> Option<String>,
    cwd: &Path,
    session_id: &str,
) -> Result<Option<Arc<crate::checkpoints::SessionCheckpoints>>, String> {
    if !settings.checkpoints.enabled {
        return Ok(None);
    }
    let Some(home) = super::corvid_home(env) else {
        return Err(
            "checkpoints are off: corvid's home folder is unknown (set CORVID_HOME)".into(),
        );
    };
    crate::checkpoints::SessionCheckpoints::open(&home, cwd, session_id, settings.checkpoints)
        .map(|c| Some(Arc::new(c)))
        .map_err(|e| format!("{e}; turns of this session cannot be undone"))
}

/// The session's hooks from its settings files, once per session; `None` when there are none
/// (or `disableAllHooks`), so the agent loop does nothing for them. Configuration warnings
/// join `warnings`, which the session shows first.
fn session_hooks(
    settings: &Settings,
    env: impl Fn(&str) -> Option<String>,
    cwd: &Path,
    warnings: &mut Vec<String>,
) -> Result<Option<crate::hooks::Hooks>, SettingsError> {
    let files = super::SettingsFiles::discover(cwd, &env);
    let home = super::user_home(&env);
    let hooks = crate::hooks::Hooks::load(settings, &files, home.as_deref()).map_err(|e| {
        SettingsError::InvalidValue {
            origin: "settings".to_owned(),
            key: "hooks".to_owned(),
            message: e.to_string(),
        }
    })?;
    warnings.extend(hooks.config().warnings.iter().cloned());
    let config = hooks.config();
    let none = config.disabled || config.handlers.is_empty();
    Ok((!none).then_some(hooks))
}

/// The instructions files for a session in `cwd` (`context.fileNames` picks their names).
fn project_instructions(
    settings: &Settings,
    env: impl Fn(&str) -> Option<String>,
    cwd: &Path,
) -> ProjectInstructions {
    let names = match &settings.context.file_names {
        Some(names) => FileNames::Custom(names.clone()),
        None => FileNames::Standard,
    };
    let corvid_home = super::corvid_home(&env);
    let user_home = super::user_home(&env);
    instructions::load(cwd, corvid_home.as_deref(), user_home.as_deref(), &names)
}

/// Protected paths and permission rules from `tools.*` (the user's `$CORVID_HOME` included).
fn approval_policy(
    settings: &Settings,
    env: impl Fn(&str) -> Option<String>,
) -> Result<SessionPolicy, SettingsError> {
    let invalid = |key: &str, message: String| SettingsError::InvalidValue {
        origin: "settings".to_owned(),
        key: key.to_owned(),
        message: format!("is invalid: {message}"),
    };
    let tools = &settings.tools;
    let home = super::corvid_home(&env);
    let user_home = super::user_home(&env);
    Ok(SessionPolicy {
        protected: ProtectedPaths::new(
            &tools.protected_paths,
            home.as_deref(),
            user_home.as_deref(),
        )
        .map_err(|e| invalid("tools.protectedPaths", e))?,
        rules: PermissionRules::new(&tools.allow, &tools.deny)
            .map_err(|e| invalid("tools.allow/tools.deny", e))?,
        max_turns: crate::policy::MaxTurns(settings.agent.max_turns),
        shell: ShellPolicy {
            // Sandboxed commands must never change the user's settings, even when the
            // workspace or a temp dir holds them.
            keep_read_only: home.iter().cloned().collect(),
            // One table per session: its processes end with it.
            background: Some(Arc::new(BackgroundProcesses::new(BackgroundLimits {
                max_running: tools.max_background,
                auto_background_after: tools.auto_background_ms.map(Duration::from_millis),
            }))),
            ..shell_policy(settings).map_err(|e| invalid("tools.shellEnv", e))?
        },
        images: crate::images::ImageSupport {
            setting: settings.model.supports_images,
        },
        context: crate::context::ContextPolicy {
            window_override: settings.model.context_window,
            threshold: settings
                .model
                .compact_threshold
                .unwrap_or(crate::context::window::DEFAULT_THRESHOLD),
            auto_compact: settings.model.auto_compact.unwrap_or(true),
        },
        result_budget: crate::context::result_budget::ResultBudget {
            max_tokens: settings.tools.max_result_tokens,
        },
        // Set by `agent_config`, which knows the project and the keys.
        subagents: crate::policy::Subagents::Off,
        subagent_caps: settings.agent.subagent_caps,
        recorded_secrets: RecordedSecrets::default(),
        // Set by `agent_config`, which knows the settings files.
        hooks: None,
        undo: crate::policy::unasked::Undo::from_enabled(settings.checkpoints.enabled),
        // Set by `agent_config`, which knows the project.
        commands: None,
        // Set by `agent_config`, which knows the session.
        checkpoints: None,
    })
}

/// The variables the settings name for the model keys (`model.apiKeyEnv`,
/// `fastModel.apiKeyEnv`).
fn configured_key_vars(settings: &Settings) -> Vec<String> {
    let fast_key_env = match &settings.fast_model {
        Some(FastModelSetting::Model(spec)) => spec.api_key_env.clone(),
        _ => None,
    };
    settings
        .model
        .api_key_env
        .iter()
        .cloned()
        .chain(fast_key_env)
        .chain(settings.web_search.key_vars())
        .collect()
}

/// Every variable a model key may come from: the configured ones and the default provider
/// keys.
fn key_vars(settings: &Settings) -> Vec<String> {
    configured_key_vars(settings)
        .into_iter()
        .chain(corvid_tools::shell::PROVIDER_KEYS.map(str::to_owned))
        .collect()
}

/// The shell's sandbox level and environment filter; the variables the settings name for the
/// model keys are dropped from commands along with the default provider keys.
pub(crate) fn shell_policy(settings: &Settings) -> Result<ShellPolicy, String> {
    let key_vars = configured_key_vars(settings);
    let env = &settings.tools.shell_env;
    Ok(ShellPolicy {
        sandbox: settings.tools.sandbox,
        env: EnvFilter::new(&key_vars, &env.include, &env.exclude)?,
        base_env: None,
        host: None,
        keep_read_only: Vec::new(),
        background: None,
    })
}

/// What every provider of a session shares: how long a response may be silent, the
/// secrets none of them may show, the session (the Responses API's cache key) and the
/// reasoning settings.
#[derive(Clone)]
struct Endpoint {
    idle_timeout: Duration,
    other_secrets: Vec<ApiKey>,
    session_id: String,
    reasoning: Reasoning,
    storage: ResponseStorage,
    /// The Anthropic API's own web search, for the main model only.
    server_search: Option<corvid_providers::ServerWebSearch>,
    /// The Responses API's hosted web search (its allowed domains and per-session cap), for
    /// the main model only.
    hosted_search: Option<(Vec<String>, u32)>,
}

/// A provider for one resolved endpoint.
fn build_provider(
    model: &ResolvedModel,
    cwd: &Path,
    demo_pacing: Duration,
    endpoint: &Endpoint,
) -> Result<Arc<dyn Provider>, SettingsError> {
    let config = || ProviderConfig {
        base_url: model.base_url.clone(),
        api_key: ApiKey::new(
            model
                .api_key
                .as_ref()
                .map(|k| k.expose().to_owned())
                .unwrap_or_default(),
        ),
        extra_headers: Vec::new(),
        other_secrets: endpoint.other_secrets.clone(),
        idle_timeout: endpoint.idle_timeout,
    };
    let provider: Arc<dyn Provider> = match model.kind {
        ProviderKind::Demo => Arc::new(DemoProvider::new(cwd).with_pacing(demo_pacing)),
        ProviderKind::Openai => Arc::new(
            OpenAiChatProvider::new(&config())?.with_reasoning_effort(endpoint.reasoning.effort),
        ),
        ProviderKind::OpenaiResponses => {
            let provider = OpenAiResponsesProvider::new(&config())?
                .with_cache_key(endpoint.session_id.clone())
                .with_reasoning(endpoint.reasoning)
                .with_storage(endpoint.storage);
            Arc::new(match &endpoint.hosted_search {
                Some((domains, cap)) => provider.with_hosted_web_search(domains.clone(), *cap),
                None => provider,
            })
        }
        ProviderKind::Anthropic => {
            let provider = AnthropicProvider::new(&config())?;
            Arc::new(match endpoint.server_search {
                Some(search) => provider.with_server_web_search(search),
                None => provider,
            })
        }
        ProviderKind::Gemini => {
            Arc::new(GeminiProvider::new(&config())?.with_reasoning(endpoint.reasoning))
        }
    };
    Ok(provider)
}

/// Whether two models can share one provider (and its connection pool).
fn same_endpoint(a: &ResolvedModel, b: &ResolvedModel) -> bool {
    a.kind == b.kind && a.base_url == b.base_url && a.api_key == b.api_key
}
