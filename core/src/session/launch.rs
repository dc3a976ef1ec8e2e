//! Starting an agent whose session is recorded: fresh, or resumed from a recording. Every front
//! end starts sessions through here, so recording and resuming behave the same everywhere.

use std::sync::Arc;

use corvid_protocol::{ApprovalMode, CoreEvent};
use corvid_tools::ToolContext;
use tokio_util::sync::CancellationToken;

use super::load::LoadedSession;
use super::replay::replay_events;
use super::store::{SessionError, SessionStore};
use crate::agent::{AgentConfig, AgentHandle, spawn_agent, spawn_agent_observed};

/// A new session's agent, and why it is not being recorded when recording failed.
pub struct Recorded {
    pub handle: AgentHandle,
    /// Set when the recording could not be created: the session runs anyway (only resuming it
    /// later is lost), and the front end tells the user.
    pub not_recorded: Option<SessionError>,
}

/// Spawns the agent of a new session, recorded under `store` as `config.session_id`, with
/// the configured secrets (`config.policy.recorded_secrets`) replaced in the recording.
/// Recording is best effort: a session never fails because its file cannot be written.
pub fn spawn_recorded(config: AgentConfig, store: &SessionStore) -> Recorded {
    match store.create(&config.cwd, &config.session_id, &config.model) {
        Ok(recorder) => Recorded {
            handle: {
                if let Some(hooks) = &config.policy.hooks {
                    hooks.attach(&config.session_id, Some(recorder.path()));
                }
                let recorder = recorder.redacting(&config.policy.recorded_secrets);
                spawn_agent_observed(config, Arc::new(recorder))
            },
            not_recorded: None,
        },
        Err(e) => Recorded {
            handle: spawn_agent(config),
            not_recorded: Some(e),
        },
    }
}

/// A resumed session: its agent, and its transcript as core events for the front end to show.
pub struct Resumed {
    pub handle: AgentHandle,
    /// The earlier transcript, to render before any live event.
    pub transcript: Vec<CoreEvent>,
    /// The model the agent goes on with: the last one recorded, else the configured one.
    pub model: String,
    /// The approval mode the agent starts in: the last one recorded, else the configured one
    /// (ACP `session/load` reports it as the current mode).
    pub approval_mode: ApprovalMode,
}

/// Spawns an agent that goes on with `loaded`: same session id, the recorded history restored
/// exactly (tool calls paired with results, thought signatures intact), the last recorded model
/// and approval mode applied, appending to the same file.
///
/// Fails with [`SessionError::InUse`] while another process records this session, and also
/// while an earlier agent of it in this process is still shutting down (its recorder holds the
/// lock until its event stream ends: read it to the end first).
pub fn spawn_resumed(
    mut config: AgentConfig,
    store: &SessionStore,
    loaded: &LoadedSession,
) -> Result<Resumed, SessionError> {
    let ctx = ToolContext {
        call_id: String::new(),
        cwd: config.cwd.clone(),
        fs: config.fs.clone(),
        cancel: CancellationToken::new(),
        shell_timeout: config.shell_timeout,
        shell: config.policy.shell.clone(),
        live_output: None,
    };
    let transcript = replay_events(loaded, &config.tools, &ctx);
    let recorder = store
        .reopen(loaded)?
        .redacting(&config.policy.recorded_secrets);
    config.session_id = loaded.header.session_id.clone();
    if let Some(hooks) = &config.policy.hooks {
        hooks.attach(&config.session_id, Some(recorder.path()));
    }
    config.history = loaded.history();
    if let Some(model) = loaded.recorded_model() {
        config.model = model.to_owned();
    }
    if let Some(mode) = loaded.recorded_approval_mode() {
        config.approval_mode = mode;
    }
    let (model, approval_mode) = (config.model.clone(), config.approval_mode);
    Ok(Resumed {
        handle: spawn_agent_observed(config, Arc::new(recorder)),
        transcript,
        model,
        approval_mode,
    })
}
