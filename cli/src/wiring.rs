//! Flags and settings to a session configuration, shared by every mode of the binary.

use std::path::PathBuf;

use anyhow::Context;
use corvid_core::agent::AgentConfig;
use corvid_core::settings::{
    self, Overrides, ProviderKind, Settings, SettingsFiles, TrustGrant, process_env,
};
use corvid_protocol::ApprovalMode;
use corvid_providers::ReasoningEffort;

use crate::args::{ApprovalModeArg, Cli, ProviderArg, ReasoningEffortArg};
use crate::trust_prompt;

/// A configuration problem: the binary exits with code 2 and this message.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

/// What every mode starts from: the working directory and the effective settings.
pub struct Setup {
    pub cwd: PathBuf,
    pub settings: Settings,
}

impl Setup {
    /// Resolves `--cwd` and loads settings; warnings (unknown keys, ignored project
    /// settings) go to stderr. Project configuration applies in a trusted folder only, as
    /// accepted: `--trust`, a remembered trust, or (terminal UI only) a yes to the question
    /// asked before it starts about files not accepted yet.
    pub fn load(cli: &Cli) -> Result<Self, ConfigError> {
        let cwd = resolve_cwd(cli)?;
        let files = SettingsFiles::discover(&cwd, process_env);
        let grant = trust_grant(cli)?;
        let mut project = files
            .trust(&grant, process_env)
            .map_err(|e| ConfigError(e.to_string()))?;
        if is_tui(cli) {
            project = trust_prompt::ask_about_unreviewed(&files, project)?;
        }
        let loaded = settings::load_with(&files, &project, process_env, &overrides(cli))
            .map_err(|e| ConfigError(e.to_string()))?;
        for warning in &loaded.warnings {
            eprintln!("corvid: warning: {warning}");
        }
        let mut settings = loaded.settings;
        if is_tui(cli) {
            settings = crate::hooks_trust::ask_before_ui(settings, &cwd)?;
        }
        Ok(Self { cwd, settings })
    }

    /// A new session's agent configuration.
    pub fn agent_config(&self, session_id: &str) -> Result<AgentConfig, ConfigError> {
        settings::agent_config(&self.settings, process_env, &self.cwd, session_id)
            .map_err(|e| ConfigError(e.to_string()))
    }
}

/// `--cwd` (else the current directory), absolute and checked to be a directory.
pub fn resolve_cwd(cli: &Cli) -> Result<PathBuf, ConfigError> {
    let cwd = match &cli.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()
            .map_err(|e| ConfigError(format!("cannot read the current directory: {e}")))?,
    };
    let cwd = cwd.canonicalize().map_err(|e| {
        ConfigError(format!(
            "the working directory {} is not usable: {e}",
            cwd.display()
        ))
    })?;
    if !cwd.is_dir() {
        return Err(ConfigError(format!("{} is not a directory", cwd.display())));
    }
    Ok(cwd)
}

/// The command-line flags that override settings.
pub fn overrides(cli: &Cli) -> Overrides {
    let provider = if cli.demo {
        Some(ProviderKind::Demo)
    } else {
        cli.provider.map(|p| match p {
            ProviderArg::Openai => ProviderKind::Openai,
            ProviderArg::OpenaiResponses => ProviderKind::OpenaiResponses,
            ProviderArg::Anthropic => ProviderKind::Anthropic,
            ProviderArg::Gemini => ProviderKind::Gemini,
            ProviderArg::Demo => ProviderKind::Demo,
        })
    };
    let approval_mode = if cli.yolo {
        Some(ApprovalMode::Yolo)
    } else {
        cli.approval_mode.map(|m| match m {
            ApprovalModeArg::Default => ApprovalMode::Default,
            ApprovalModeArg::Auto => ApprovalMode::Auto,
            ApprovalModeArg::AutoEdit => ApprovalMode::AutoEdit,
            ApprovalModeArg::Yolo => ApprovalMode::Yolo,
            ApprovalModeArg::Plan => ApprovalMode::Plan,
        })
    };
    Overrides {
        provider,
        model: cli.model.clone(),
        fast_model: cli.fast_model.clone(),
        approval_mode,
        compact_mode: cli.compact.then_some(true),
        reasoning_effort: cli.reasoning_effort.map(|e| match e {
            ReasoningEffortArg::Minimal => ReasoningEffort::Minimal,
            ReasoningEffortArg::Low => ReasoningEffort::Low,
            ReasoningEffortArg::Medium => ReasoningEffort::Medium,
            ReasoningEffortArg::High => ReasoningEffort::High,
            ReasoningEffortArg::Xhigh => ReasoningEffort::Xhigh,
        }),
    }
}

/// What `--trust` grants for this run. A run that reads its configuration once (headless,
/// terminal UI) trusts its working folder as it is; `--trust DIR` and every `--acp` run
/// (which opens sessions for as long as it runs, in any folder the client names) trust only
/// the named folders, or the folder corvid is started in, with the configuration files they
/// hold now.
pub fn trust_grant(cli: &Cli) -> Result<TrustGrant, ConfigError> {
    if cli.trust.is_empty() {
        return Ok(TrustGrant::Remembered);
    }
    if !cli.acp && cli.trust.iter().all(String::is_empty) {
        return Ok(TrustGrant::ThisRun);
    }
    let started_in = resolve_cwd(cli)?;
    let dirs: Vec<PathBuf> = cli
        .trust
        .iter()
        .map(|dir| {
            if dir.is_empty() {
                return Ok(started_in.clone());
            }
            match std::fs::canonicalize(dir) {
                Ok(real) if real.is_dir() => Ok(real),
                Ok(_) => Err(ConfigError(format!("--trust {dir}: not a folder"))),
                Err(e) => Err(ConfigError(format!(
                    "--trust {dir}: not a usable folder: {e}"
                ))),
            }
        })
        .collect::<Result<_, _>>()?;
    settings::grant_folders(&dirs, process_env).map_err(|e| ConfigError(format!("--trust: {e}")))
}

/// Whether this invocation starts the terminal UI (the only mode that asks about trust).
fn is_tui(cli: &Cli) -> bool {
    cli.prompt.is_none() && !cli.acp && cli.command.is_none()
}

/// A fresh session id.
pub fn new_session_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Reads the headless prompt: the flag's value, or all of stdin for `-p -`.
pub fn read_prompt(flag: &str) -> anyhow::Result<String> {
    if flag != "-" {
        return Ok(flag.to_owned());
    }
    let mut prompt = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut prompt)
        .context("cannot read the prompt from stdin")?;
    Ok(prompt)
}
