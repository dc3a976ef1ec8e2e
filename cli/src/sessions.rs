//! Recorded sessions in the binary (SPEC §9): every session is started recorded, and
//! `--resume` / `--continue` go on with one (`corvid sessions list|show` is `sessions_cmd`).

use std::path::Path;

use corvid_core::agent::{AgentConfig, AgentHandle};
use corvid_core::session::{LoadedSession, SessionStore, spawn_recorded, spawn_resumed};
use corvid_core::settings::{corvid_home, process_env};
use corvid_protocol::CoreEvent;

use crate::wiring::ConfigError;

/// Which session an invocation works in.
pub enum Which<'a> {
    /// A new session.
    Fresh,
    /// `--resume ID` (an id or unique prefix).
    Id(&'a str),
    /// `--continue`, or `--resume` without an id: this project's latest session.
    Latest,
}

impl<'a> Which<'a> {
    /// From `--resume [ID]` and `--continue`.
    pub fn from_flags(resume: Option<&'a str>, continue_session: bool) -> Self {
        match resume {
            Some("") => Self::Latest,
            Some(id) => Self::Id(id),
            None if continue_session => Self::Latest,
            None => Self::Fresh,
        }
    }
}

/// A started agent and the earlier transcript of a resumed session (empty when fresh).
pub struct Started {
    pub handle: AgentHandle,
    pub transcript: Vec<CoreEvent>,
}

/// The session store under `$CORVID_HOME`.
pub fn store() -> Result<SessionStore, ConfigError> {
    corvid_home(process_env)
        .map(|home| SessionStore::new(&home))
        .ok_or_else(|| ConfigError("no home directory: set CORVID_HOME".into()))
}

/// Starts the agent: a new recorded session, or going on with a recorded one.
pub fn start(config: AgentConfig, which: Which<'_>) -> Result<Started, ConfigError> {
    let store = store()?;
    let loaded = match which {
        Which::Fresh => {
            let recorded = spawn_recorded(config, &store);
            if let Some(e) = recorded.not_recorded {
                eprintln!(
                    "corvid: warning: this session is not recorded ({e}); set CORVID_HOME to a writable directory to record it"
                );
            }
            return Ok(Started {
                handle: recorded.handle,
                transcript: Vec::new(),
            });
        }
        Which::Id(id) => load(&store, &config.cwd, id)?,
        Which::Latest => store
            .latest(&config.cwd)
            .map_err(|e| ConfigError(e.to_string()))?
            .ok_or_else(|| {
                ConfigError(format!(
                    "no recorded session for {}; start one without --continue",
                    config.cwd.display()
                ))
            })?,
    };
    let resumed = spawn_resumed(config, &store, &loaded).map_err(|e| ConfigError(e.to_string()))?;
    Ok(Started {
        handle: resumed.handle,
        transcript: resumed.transcript,
    })
}

fn load(store: &SessionStore, cwd: &Path, id: &str) -> Result<LoadedSession, ConfigError> {
    let loaded = store
        .load(cwd, id)
        .map_err(|e| ConfigError(e.to_string()))?;
    for warning in &loaded.warnings {
        eprintln!("corvid: warning: {}: {warning}", loaded.path.display());
    }
    Ok(loaded)
}
