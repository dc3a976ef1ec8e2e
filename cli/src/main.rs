//! The `corvid` binary: argument parsing and wiring of the front ends.
//!
//! Exit codes (SPEC §1.1): 0 success, 1 task failed, 2 usage or configuration error,
//! 130 cancelled.

// The binary owns the terminal: stderr carries progress and errors, stdout the mode's output.
#![allow(clippy::print_stderr)]

mod acp_factory;
mod args;
mod commands_cmd;
mod headless;
mod hooks_cmd;
mod hooks_trust;
mod logging;
mod mcp_cmd;
mod replay;
mod rewind_cmd;
mod sessions;
mod sessions_cmd;
mod sessions_delete;
mod sessions_list;
mod shutdown;
mod telemetry;
mod trust_prompt;
mod wiring;

use corvid_core::session::Titling;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;

use crate::args::{
    Cli, Command, CommandsCommand, DebugCommand, HooksCommand, McpCommand, SessionsCommand,
};
use crate::wiring::{ConfigError, Setup};

/// A usage or configuration error.
const EXIT_CONFIG: u8 = 2;

fn main() -> ExitCode {
    // Before anything reads a key: a non-dumpable process's `/proc/PID/environ`, `mem` and
    // the like are closed to other processes of the user (commands, MCP servers), and
    // sandboxed commands lose the capabilities root would need to read them anyway. Children
    // are dumpable again after their exec.
    #[cfg(target_os = "linux")]
    if let Err(e) = nix::sys::prctl::set_dumpable(false) {
        eprintln!("corvid: warning: cannot hide this process's memory from others: {e}");
    }
    let cli = Cli::parse();
    if let Some(Command::Debug {
        command: DebugCommand::ReplaySse(args),
    }) = &cli.command
    {
        return replay::run(args);
    }
    // reqwest is built without a default crypto provider; a second install is harmless.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let interactive = cli.prompt.is_none() && !cli.acp;
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("corvid: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (layers, telemetry) = telemetry::start().unzip();
    logging::init(interactive, layers.unwrap_or_default());
    let code = runtime.block_on(run(cli));
    // Do not wait for stragglers (a blocked stdin reader, a summary past its use). Stopping
    // drops every task, so a task cut short (a signal, a client gone) ends its spans here,
    // in time for the last export (which runs on a runtime of its own).
    runtime.shutdown_timeout(Duration::from_millis(100));
    if let Some(telemetry) = telemetry {
        telemetry.flush();
    }
    code
}

async fn run(cli: Cli) -> ExitCode {
    if let Some(Command::Sessions { command }) = &cli.command {
        let cwd = match wiring::resolve_cwd(&cli) {
            Ok(cwd) => cwd,
            Err(e) => return config_error(&e),
        };
        let store = match sessions::store() {
            Ok(store) => store,
            Err(e) => return config_error(&e),
        };
        let mut out = std::io::stdout().lock();
        let done = match command {
            SessionsCommand::List { output_format } => {
                sessions_list::list_sessions(&store, &cwd, *output_format, &mut out)
            }
            SessionsCommand::Show { id } => sessions_cmd::show_session(&store, &cwd, id, &mut out),
            SessionsCommand::Delete { id, yes } => sessions_delete::delete_session(
                &store,
                &cwd,
                id,
                *yes,
                sessions_delete::ask_on_terminal,
                &mut out,
            ),
        };
        return match done {
            Ok(()) => ExitCode::SUCCESS,
            // `corvid sessions show ID | head` closes the pipe early; that is not an error.
            Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
            Err(e) => config_error(&ConfigError(format!("{e:#}"))),
        };
    }
    if let Some(Command::Mcp {
        command: McpCommand::List,
    }) = &cli.command
    {
        let setup = match Setup::load(&cli) {
            Ok(setup) => setup,
            Err(e) => return config_error(&e),
        };
        return match mcp_cmd::list(&setup, &mut std::io::stdout().lock()).await {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::FAILURE,
            Err(e) => config_error(&e),
        };
    }
    if let Some(Command::Commands { command }) = &cli.command {
        let setup = match Setup::load(&cli) {
            Ok(setup) => setup,
            Err(e) => return config_error(&e),
        };
        let mut out = std::io::stdout().lock();
        let done = match command {
            CommandsCommand::List => commands_cmd::list(&setup, &mut out),
            CommandsCommand::Show { name, args } => {
                commands_cmd::show(&setup, name, args, &mut out)
            }
        };
        return match done {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => config_error(&e),
        };
    }
    if let Some(Command::Hooks { command }) = &cli.command {
        let setup = match Setup::load(&cli) {
            Ok(setup) => setup,
            Err(e) => return config_error(&e),
        };
        let mut out = std::io::stdout().lock();
        let done = match command {
            HooksCommand::List => hooks_cmd::list(&setup, &mut out),
            HooksCommand::Test { event, tool, input } => {
                hooks_cmd::test(&setup, event, tool.as_deref(), input, &mut out).await
            }
            HooksCommand::Trust { list, all, hashes } => {
                hooks_trust::trust(&setup, *list, *all, hashes, &mut out)
            }
        };
        return match done {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => config_error(&e),
        };
    }
    if let Some(Command::Rewind(args)) = &cli.command {
        return match Setup::load(&cli) {
            Ok(setup) => rewind_cmd::rewind(&setup, args),
            Err(e) => config_error(&e),
        };
    }
    if let Some(Command::Checkpoints { command }) = &cli.command {
        let setup = match Setup::load(&cli) {
            Ok(setup) => setup,
            Err(e) => return config_error(&e),
        };
        return match rewind_cmd::checkpoints(&setup, command) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => config_error(&e),
        };
    }
    if cli.acp {
        let grant = match wiring::trust_grant(&cli) {
            Ok(grant) => grant,
            Err(e) => return config_error(&e),
        };
        let factory = acp_factory::SettingsFactory::new(wiring::overrides(&cli), grant);
        let serve = async {
            match corvid_acp::run(Arc::new(factory)).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("corvid: ACP server failed: {e:#}");
                    ExitCode::FAILURE
                }
            }
        };
        return shutdown::until_stopped(serve, shutdown::AlsoStopOn::Interrupt).await;
    }
    let setup = match Setup::load(&cli) {
        Ok(setup) => setup,
        Err(e) => return config_error(&e),
    };
    let config = match setup.agent_config(&wiring::new_session_id()) {
        Ok(config) => config,
        Err(e) => return config_error(&e),
    };
    let which = sessions::Which::from_flags(cli.resume.as_deref(), cli.continue_session);
    match &cli.prompt {
        Some(flag) => {
            let prompt = match wiring::read_prompt(flag) {
                Ok(p) if !p.trim().is_empty() => p,
                Ok(_) => {
                    return config_error(&ConfigError(
                        "the prompt is empty; pass it with -p \"...\" or on stdin with -p -".into(),
                    ));
                }
                Err(e) => return config_error(&ConfigError(format!("{e:#}"))),
            };
            let answers = match cli.answers.as_deref().map(headless::Answers::load) {
                None => None,
                Some(Ok(answers)) => Some((answers, cli.answers.clone().unwrap_or_default())),
                Some(Err(e)) => return config_error(&ConfigError(e)),
            };
            // Nobody can answer a question in a headless run unless the file does.
            let config = match answers {
                Some(_) => config,
                None => config.without_questions(),
            };
            let sigint = match headless::listen_for_sigint() {
                Ok(sigint) => sigint,
                Err(e) => {
                    eprintln!("corvid: cannot listen for Ctrl+C: {e}");
                    return ExitCode::FAILURE;
                }
            };
            // `system/init` lists the MCP tools too: wait for them as boundedly as the first
            // request would (`mcp.startupTimeoutMs`), so this costs the run no extra time.
            config.tools.settled().await;
            let mut init = headless::init_info(&config);
            let started = match sessions::start(
                config,
                which,
                cli.fork,
                &wiring::overrides(&cli),
                Titling::Off,
            ) {
                Ok(started) => started,
                Err(e) => return config_error(&e),
            };
            init.session_id = started.handle.session_id().to_owned();
            init.model = started.model.clone();
            init.approval_mode = started.approval_mode.as_str().to_owned();
            let task = headless::run(
                started.handle,
                init,
                headless::Job { prompt, answers },
                cli.output_format,
                cli.include_partial_messages,
                sigint,
                std::io::stdout().lock(),
            );
            shutdown::until_stopped(task, shutdown::AlsoStopOn::Nothing).await
        }
        None => {
            let compact = setup.settings.ui.compact_mode;
            let theme = setup.settings.ui.theme;
            let models = corvid_core::models::ModelListing::new(
                config.provider.clone(),
                corvid_core::settings::corvid_home(corvid_core::settings::process_env).as_deref(),
            );
            let started = match sessions::start(
                config,
                which,
                cli.fork,
                &wiring::overrides(&cli),
                Titling::ByFastModel,
            ) {
                Ok(started) => started,
                Err(e) => return config_error(&e),
            };
            let (model, approval_mode) = (started.model.clone(), started.approval_mode);
            // Without a session store `start` failed above, so this only fails in theory;
            // the UI then says `/resume` is unavailable.
            let launcher = sessions::store()
                .map(|store| store.titling(Titling::ByFastModel))
                .ok()
                .map(|store| sessions::Launcher::new(setup, store));
            let options = corvid_tui::TuiOptions {
                compact,
                model,
                approval_mode,
                no_color: std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()),
                transcript: started.transcript,
                sessions: launcher.map(|l| Arc::new(l) as Arc<dyn corvid_tui::SessionLauncher>),
                models: Some(models),
                theme,
            };
            match corvid_tui::run(started.handle, options).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("corvid: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

/// Whether `e` is stdout closing under us (`corvid ... | head`): the reader chose to stop,
/// so corvid stops quietly instead of reporting an error.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn config_error(e: &ConfigError) -> ExitCode {
    eprintln!("corvid: {e}");
    ExitCode::from(EXIT_CONFIG)
}
