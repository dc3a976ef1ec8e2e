//! `session/load` (SPEC §9): a recorded session resumed in a new agent, or one already open
//! on this connection re-attached; either way its transcript is replayed as frames first.

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{LoadSessionRequest, LoadSessionResponse};
use agent_client_protocol::{Client, Error, ErrorCode};
use corvid_core::session::{SessionError, is_session_id, replay_events, spawn_resumed};
use corvid_core::usage::UsageStats;
use corvid_protocol::CoreEvent;
use corvid_tools::ToolContext;
use tokio_util::sync::CancellationToken;

use super::{
    Server, factory_error, install_terminals, listed_models, lock, mapper, modes, open_session,
    require_absolute, session_spec,
};
use crate::mapping::Mapper;
use crate::output::Output;
use crate::session::Start;

/// Whether the client is sent the recorded conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum History {
    /// `session/load`: replayed as frames before the answer.
    Replay,
    /// `session/resume`: the client kept its own copy.
    Skip,
}

/// Resumes a recorded session (SPEC §9): its transcript is replayed as `session/update` frames
/// (and summary notifications) before the answer unless `history` skips it, then prompts go
/// on with the full history.
pub(super) async fn load_session(
    server: &Server,
    req: LoadSessionRequest,
    cx: ConnectionTo<Client>,
    history: History,
) -> Result<LoadSessionResponse, Error> {
    require_absolute(&req.cwd)?;
    let id = req.session_id.0.to_string();
    if !is_session_id(&id) {
        // A path-shaped id is refused before anything on disk is touched.
        return Err(Error::new(
            ErrorCode::INVALID_PARAMS,
            format!("cannot load session: {}", SessionError::InvalidId { id }),
        ));
    }
    let store = server.factory.session_store().ok_or_else(|| {
        Error::new(
            ErrorCode::INTERNAL_ERROR,
            format!(
                "cannot load session `{id}`: this corvid records no sessions \
                 (no home directory; set CORVID_HOME)"
            ),
        )
    })?;
    let loaded = store.load(&req.cwd, &id).map_err(|e| load_error(&id, e))?;
    // Editors hold full ids; a prefix would key a second agent onto the same recording.
    if loaded.header.session_id != id {
        return Err(Error::new(
            ErrorCode::INVALID_PARAMS,
            format!(
                "session/load needs the full session id; `{id}` is a prefix of `{}`",
                loaded.header.session_id
            ),
        ));
    }
    for warning in &loaded.warnings {
        tracing::warn!(session = %id, "{warning}");
    }
    let spec = session_spec(server, &req.session_id, &req.cwd, &req.mcp_servers, &cx);
    let mut config = server.factory.build(spec).map_err(factory_error)?;
    let mapper = mapper(server, &req.session_id, req.cwd.clone());
    install_terminals(server, &mut config, &mapper, &req.session_id, &cx);
    // Open here already (a client re-attaching after its UI reconnected): replay the recording
    // and keep the running agent, never a second one on the same file.
    let open = lock(&server.sessions).get(&id).cloned();
    if let Some(session) = open {
        let ctx = ToolContext {
            call_id: String::new(),
            cwd: req.cwd.clone(),
            fs: config.fs.clone(),
            cancel: CancellationToken::new(),
            shell_timeout: config.shell_timeout,
            shell: Default::default(),
            live_output: None,
        };
        if history == History::Replay {
            let transcript = replay_events(&loaded, &config.tools, &ctx);
            replay(&mapper, &transcript, &server.output).await?;
        }
        return Ok(LoadSessionResponse::new()
            .modes(modes(session.mode()))
            .config_options(session.config_options()));
    }
    let other_models = config.fallback_model.iter().cloned().collect();
    let commands = config.policy.commands.clone();
    let listed = listed_models(server, &config).await;
    let efforts = corvid_core::models::Efforts::new(config.provider.clone());
    let resumed = spawn_resumed(config, &store, &loaded).map_err(|e| load_error(&id, e))?;
    if history == History::Replay {
        replay(&mapper, &resumed.transcript, &server.output).await?;
    }
    // The recorded mode and model, as the agent resumed them (issue 14 defect 12).
    let mut start = Start {
        mode: resumed.approval_mode,
        model: resumed.model.clone(),
        other_models,
        stats: UsageStats::default(),
        checkpoints: None,
        background: None,
        store: None,
        listed,
        efforts,
        commands,
    };
    for event in &resumed.transcript {
        start.stats.observe(event);
    }
    // A transcript holds no turn starts; `/stats` counts the recorded model turns.
    start.stats.turns = loaded.model_turns();
    let mode = start.mode;
    let session = open_session(server, &req.session_id, resumed.handle, start, mapper, cx);
    Ok(LoadSessionResponse::new()
        .modes(modes(mode))
        .config_options(session.config_options()))
}

/// Sends a recorded transcript as the frames a client rebuilds the session from, straight to
/// the output and never more than its bound ahead of the client, so a long session is not
/// queued whole. They are all out before the answer, which goes through the crate after them.
async fn replay(mapper: &Mapper, transcript: &[CoreEvent], output: &Output) -> Result<(), Error> {
    for event in transcript {
        for frame in mapper.replay_frames(event) {
            output
                .send(frame.method, &frame.params)
                .await
                .map_err(|e| {
                    Error::new(
                        ErrorCode::INTERNAL_ERROR,
                        format!("cannot replay the session: {e}"),
                    )
                })?;
        }
    }
    Ok(())
}

/// A session that cannot be loaded, named in the message; an unknown id is "not found".
fn load_error(id: &str, error: SessionError) -> Error {
    let code = match &error {
        SessionError::NotFound { .. } => ErrorCode::RESOURCE_NOT_FOUND,
        SessionError::Ambiguous { .. }
        | SessionError::InvalidId { .. }
        | SessionError::NotFullId { .. } => ErrorCode::INVALID_PARAMS,
        SessionError::InUse { .. } => ErrorCode::INVALID_REQUEST,
        SessionError::Io { .. }
        | SessionError::Corrupt { .. }
        | SessionError::WriteFailed { .. }
        | SessionError::RecordingStopped { .. } => ErrorCode::INTERNAL_ERROR,
    };
    Error::new(code, format!("cannot load session `{id}`: {error}"))
}
