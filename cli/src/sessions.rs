//! Recorded sessions in the binary (SPEC §9): every session is started recorded, `--resume` /
//! `--continue` go on with one, and `corvid sessions list|show` read them back.

use std::io::Write;
use std::path::{Path, PathBuf};

use corvid_core::agent::{AgentConfig, AgentHandle};
use corvid_core::session::{
    LoadedSession, SessionStore, replay_events, spawn_recorded, spawn_resumed,
};
use corvid_core::settings::{corvid_home, process_env};
use corvid_protocol::{CoreEvent, TodoStatus, ToolStatus};
use corvid_tools::ToolContext;
use tokio_util::sync::CancellationToken;

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
            let handle = spawn_recorded(config, &store).map_err(|e| {
                ConfigError(format!(
                    "{e}; set CORVID_HOME to a writable directory to record sessions"
                ))
            })?;
            return Ok(Started {
                handle,
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

/// `corvid sessions list`: this project's sessions, newest first.
pub fn list(cwd: &Path, out: &mut impl Write) -> Result<(), ConfigError> {
    let sessions = store()?.list(cwd).map_err(|e| ConfigError(e.to_string()))?;
    let io = |e: std::io::Error| ConfigError(format!("cannot write: {e}"));
    if sessions.is_empty() {
        eprintln!("corvid: no recorded sessions for {}", cwd.display());
    }
    for s in sessions {
        let prompt: String = s
            .first_prompt
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(60)
            .collect();
        writeln!(
            out,
            "{}  {}  {}  {}",
            s.id,
            utc_minutes(s.started_at_ms),
            s.model,
            prompt
        )
        .map_err(io)?;
    }
    Ok(())
}

/// `corvid sessions show ID`: one session as a readable transcript.
pub fn show(cwd: &Path, id: &str, out: &mut impl Write) -> Result<(), ConfigError> {
    let loaded = load(&store()?, cwd, id)?;
    let ctx = ToolContext {
        cwd: PathBuf::from(cwd),
        fs: std::sync::Arc::new(corvid_tools::LocalFs),
        cancel: CancellationToken::new(),
        shell_timeout: std::time::Duration::from_secs(1),
    };
    let events = replay_events(&loaded, &corvid_tools::builtin_tools(), &ctx);
    let io = |e: std::io::Error| ConfigError(format!("cannot write: {e}"));
    writeln!(
        out,
        "session {} · {} · started {}",
        loaded.header.session_id,
        loaded.header.model,
        utc_minutes(loaded.header.started_at_ms)
    )
    .map_err(io)?;
    let mut text_open = false;
    for ev in &events {
        let line = match ev {
            CoreEvent::TaskStarted { prompt, .. } => Some(format!("\n› {prompt}")),
            CoreEvent::TextDelta { text } => {
                write!(out, "{}{text}", if text_open { "" } else { "\n" }).map_err(io)?;
                text_open = true;
                None
            }
            CoreEvent::ToolStarted { display, .. } => Some(format!("● {}", display.title)),
            CoreEvent::ToolFinished { status, output, .. } => (*status == ToolStatus::Failed)
                .then(|| format!("  ✗ {}", output.text.lines().next().unwrap_or(""))),
            CoreEvent::ToolUseSummary { summary, .. } => Some(format!("● {summary}")),
            CoreEvent::Plan { todos } => Some(
                todos
                    .iter()
                    .map(|t| {
                        let mark = match t.status {
                            TodoStatus::Completed => "[x]",
                            TodoStatus::InProgress => "[~]",
                            TodoStatus::Pending => "[ ]",
                        };
                        format!("  {mark} {}", t.content)
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            _ => None,
        };
        if let Some(line) = line {
            if text_open {
                writeln!(out).map_err(io)?;
                text_open = false;
            }
            writeln!(out, "{line}").map_err(io)?;
        }
    }
    if text_open {
        writeln!(out).map_err(io)?;
    }
    Ok(())
}

/// `YYYY-MM-DD HH:MM` (UTC) for milliseconds since the epoch.
fn utc_minutes(ms: u64) -> String {
    let secs = ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let (h, m) = ((secs % 86_400) / 3600, (secs % 3600) / 60);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{m:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_minutes_formats_known_instants() {
        assert_eq!(utc_minutes(0), "1970-01-01 00:00");
        assert_eq!(utc_minutes(951_782_400_000), "2000-02-29 00:00");
        assert_eq!(utc_minutes(1_796_036_400_000), "2026-11-30 11:00");
    }
}
