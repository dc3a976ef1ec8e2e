//! Starting an agent whose session is recorded: fresh, or resumed from a recording. Every front
//! end starts sessions through here, so recording and resuming behave the same everywhere.

use std::sync::Arc;

use corvid_protocol::{ApprovalMode, CoreEvent, ReasoningEffort};
use corvid_tools::ToolContext;
use tokio_util::sync::CancellationToken;

use super::load::LoadedSession;
use super::record::Record;
use super::recorder::SessionRecorder;
use super::replay::replay_events;
use super::store::{SessionError, SessionStore};
use super::titled::TitledRecorder;
use crate::agent::{AgentConfig, AgentHandle, HistoryObserver, spawn_agent, spawn_agent_observed};

/// Whether a session without a title gets one from the fast model after its first answer.
/// Interactive front ends ask for it (the `/resume` picker shows it); a one-shot `-p` run
/// does not spend a request on a title nobody picks from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Titling {
    ByFastModel,
    Off,
}

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
                let observer = observer(recorder, &config, store.titles());
                spawn_agent_observed(config, observer)
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
    /// The reasoning effort the recording last set and the resumed model takes, now asked for
    /// by the provider; `None`: the configured one stands.
    pub reasoning_effort: Option<ReasoningEffort>,
}

/// Spawns an agent that goes on with `loaded`: same session id, the recorded history restored
/// exactly (tool calls paired with results, thought signatures intact), the last recorded model,
/// reasoning effort and approval mode applied, appending to the same file.
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
    attach_checkpoints(&mut config);
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
    // An effort the resumed model does not take (the provider changed since) is left out,
    // as `Op::SetReasoningEffort` would leave it.
    let reasoning_effort = loaded.recorded_reasoning_effort().filter(|effort| {
        config
            .provider
            .reasoning_efforts(&config.model)
            .contains(effort)
    });
    if let Some(effort) = reasoning_effort {
        config.provider.set_reasoning_effort(effort);
    }
    let (model, approval_mode) = (config.model.clone(), config.approval_mode);
    let titled = loaded
        .records
        .iter()
        .any(|r| matches!(r, Record::Title { .. }));
    let titling = if titled { Titling::Off } else { store.titles() };
    let observer = observer(recorder, &config, titling);
    Ok(Resumed {
        handle: spawn_agent_observed(config, observer),
        transcript,
        model,
        approval_mode,
        reasoning_effort,
    })
}

/// Points the session's checkpoints at the resumed session's own journal (they were opened
/// under the id the config was made with, before the session to go on with was known). When
/// that fails the session goes on without checkpoints, and so without `auto`'s unasked edits.
fn attach_checkpoints(config: &mut AgentConfig) {
    let Some(checkpoints) = &config.policy.checkpoints else {
        return;
    };
    if let Err(e) = checkpoints.attach(&config.session_id) {
        tracing::warn!(session = %config.session_id, error = %e, "checkpoints are off");
        config.policy.checkpoints = None;
        config.policy.undo = crate::policy::unasked::Undo::from_enabled(false);
    }
}

/// The recorder as the agent's observer; it also titles the session when asked to and a fast
/// model is configured.
fn observer(
    recorder: SessionRecorder,
    config: &AgentConfig,
    titling: Titling,
) -> Arc<dyn HistoryObserver> {
    match (&config.summaries, titling) {
        (Some(fast), Titling::ByFastModel) => Arc::new(TitledRecorder::new(recorder, fast.clone())),
        _ => Arc::new(recorder),
    }
}
