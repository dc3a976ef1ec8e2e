//! The ACP request handlers. Handlers run inside the connection's dispatch loop, so none of
//! them waits on the client: prompts are answered later by the session's event pump.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthMethod, AuthMethodAgent, AuthenticateRequest, AuthenticateResponse,
    CancelNotification, ContentBlock, EmbeddedResourceResource, FileSystemCapabilities,
    Implementation, InitializeRequest, InitializeResponse, LoadSessionRequest, LoadSessionResponse,
    McpServer, NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest,
    PromptResponse, SessionId, SessionMode, SessionModeState, SetSessionModeRequest,
    SetSessionModeResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, ConnectTo, Error, ErrorCode, UntypedMessage};
use corvid_core::agent::{AgentHandle, spawn_agent};
use corvid_core::session::{SessionError, spawn_recorded, spawn_resumed};
use corvid_protocol::ApprovalMode;

use corvid_tools::LocalFs;

use crate::fs::ClientFs;
use crate::mapping::Mapper;
use crate::session::{AGENT_GONE, Session};
use crate::{AgentFactory, FactoryError, LOAD_SESSION, SessionSpec};

/// The one authentication method: a provider configured through env or settings.
const AUTH_METHOD_ID: &str = "corvid-provider";

/// Connection-wide state.
struct Server {
    factory: Arc<dyn AgentFactory>,
    fs_caps: Mutex<FileSystemCapabilities>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
}

impl Server {
    fn session(&self, id: &SessionId) -> Result<Arc<Session>, Error> {
        lock(&self.sessions)
            .get(id.0.as_ref())
            .cloned()
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::RESOURCE_NOT_FOUND,
                    format!("unknown session `{}`; create one with session/new", id.0),
                )
            })
    }
}

/// Runs the ACP agent on `transport` until the client goes away.
pub(crate) async fn serve(
    factory: Arc<dyn AgentFactory>,
    transport: impl ConnectTo<Agent> + 'static,
) -> Result<(), Error> {
    let server = Arc::new(Server {
        factory,
        fs_caps: Mutex::new(FileSystemCapabilities::default()),
        sessions: Mutex::new(HashMap::new()),
    });
    let (s1, s2, s3, s4, s5, s6, s7) = (
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server,
    );
    Agent
        .v1()
        .name("corvid")
        .on_receive_request(
            async move |req: InitializeRequest, responder: Responder<InitializeResponse>, _cx| {
                *lock(&s1.fs_caps) = req.client_capabilities.fs.clone();
                responder.respond(initialize_response())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_req: AuthenticateRequest,
                        responder: Responder<AuthenticateResponse>,
                        _cx| {
                match s2.factory.check_provider() {
                    Ok(()) => responder.respond(AuthenticateResponse::new()),
                    Err(e) => responder.respond_with_error(factory_error(e)),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionRequest,
                        responder: Responder<NewSessionResponse>,
                        cx: ConnectionTo<Client>| {
                responder.respond_with_result(new_session(&s3, req, cx))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest,
                        responder: Responder<LoadSessionResponse>,
                        cx: ConnectionTo<Client>| {
                responder.respond_with_result(load_session(&s7, req, cx))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest, responder: Responder<PromptResponse>, _cx| {
                start_prompt(&s4, req, responder)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: SetSessionModeRequest,
                        responder: Responder<SetSessionModeResponse>,
                        _cx| { responder.respond_with_result(set_mode(&s5, req)) },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: CancelNotification, _cx| {
                match s6.session(&n.session_id) {
                    Ok(session) => session.cancel(),
                    Err(e) => tracing::debug!(error = %e.message, "cancel for an unknown session"),
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport)
        .await
}

/// corvid speaks protocol v1 only, which is what ACP asks an agent to answer with whatever
/// version the client requested (the client then decides whether it can go on).
fn initialize_response() -> InitializeResponse {
    let auth = AuthMethodAgent::new(AUTH_METHOD_ID, "Model provider key").description(
        "Set OPENAI_API_KEY or ANTHROPIC_API_KEY (or model.apiKeyEnv in ~/.corvid/settings.json) \
         in the environment corvid is started with.",
    );
    InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(LOAD_SESSION)
                .prompt_capabilities(PromptCapabilities::new().embedded_context(true)),
        )
        .auth_methods(vec![AuthMethod::Agent(auth)])
        .agent_info(Implementation::new("corvid", env!("CARGO_PKG_VERSION")))
}

fn new_session(
    server: &Server,
    req: NewSessionRequest,
    cx: ConnectionTo<Client>,
) -> Result<NewSessionResponse, Error> {
    require_absolute(&req.cwd)?;
    let session_id = SessionId::new(uuid::Uuid::new_v4().to_string());
    let spec = session_spec(server, &session_id, &req.cwd, &req.mcp_servers, &cx);
    let config = server.factory.build(spec.clone()).map_err(factory_error)?;
    let mode = config.approval_mode;
    let handle = match server.factory.session_store() {
        Some(store) => {
            let recorded = spawn_recorded(config, &store);
            if let Some(e) = recorded.not_recorded {
                tracing::warn!(session = %session_id.0, "this session is not recorded: {e}");
            }
            recorded.handle
        }
        None => spawn_agent(config),
    };
    let mapper = Mapper::new(session_id.clone(), req.cwd);
    open_session(server, &session_id, handle, mode, mapper, cx);
    Ok(NewSessionResponse::new(session_id).modes(modes(mode)))
}

/// Resumes a recorded session (SPEC §9): its transcript is replayed as `session/update` frames
/// (and summary notifications) before the answer, then prompts go on with the full history.
fn load_session(
    server: &Server,
    req: LoadSessionRequest,
    cx: ConnectionTo<Client>,
) -> Result<LoadSessionResponse, Error> {
    require_absolute(&req.cwd)?;
    let id = req.session_id.0.to_string();
    if lock(&server.sessions).contains_key(&id) {
        return Err(Error::new(
            ErrorCode::INVALID_REQUEST,
            format!("session `{id}` is already open on this connection"),
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
    let config = server.factory.build(spec).map_err(factory_error)?;
    let mode = config.approval_mode;
    let resumed = spawn_resumed(config, &store, &loaded).map_err(|e| load_error(&id, e))?;
    let mapper = Mapper::new(req.session_id.clone(), req.cwd);
    for event in &resumed.transcript {
        for frame in mapper.replay_frames(event) {
            cx.send_notification(UntypedMessage::new(frame.method, frame.params)?)?;
        }
    }
    open_session(server, &req.session_id, resumed.handle, mode, mapper, cx);
    Ok(LoadSessionResponse::new().modes(modes(mode)))
}

/// What the factory needs to build a session's agent; file access goes through the client
/// when it offers `fs/*`.
fn session_spec(
    server: &Server,
    session_id: &SessionId,
    cwd: &Path,
    mcp_servers: &[McpServer],
    cx: &ConnectionTo<Client>,
) -> SessionSpec {
    let caps = lock(&server.fs_caps).clone();
    SessionSpec {
        session_id: session_id.0.to_string(),
        cwd: cwd.to_path_buf(),
        fs: ClientFs::for_session(cx.clone(), session_id.clone(), &caps, Arc::new(LocalFs)),
        mcp_servers: mcp_servers
            .iter()
            .filter_map(|s| serde_json::to_value(s).ok())
            .collect(),
    }
}

/// Starts pumping the agent's events to the client and makes the session reachable.
fn open_session(
    server: &Server,
    session_id: &SessionId,
    handle: AgentHandle,
    mode: ApprovalMode,
    mapper: Mapper,
    cx: ConnectionTo<Client>,
) {
    let (ops, events) = handle.split();
    let session = Session::start(ops, events, mode, mapper, cx);
    lock(&server.sessions).insert(session_id.0.to_string(), session);
}

fn require_absolute(cwd: &Path) -> Result<(), Error> {
    if cwd.is_absolute() {
        Ok(())
    } else {
        Err(Error::new(
            ErrorCode::INVALID_PARAMS,
            format!("cwd must be an absolute path, got `{}`", cwd.display()),
        ))
    }
}

/// A session that cannot be loaded, named in the message; an unknown id is "not found".
fn load_error(id: &str, error: SessionError) -> Error {
    let code = match &error {
        SessionError::NotFound { .. } => ErrorCode::RESOURCE_NOT_FOUND,
        SessionError::Ambiguous { .. } => ErrorCode::INVALID_PARAMS,
        SessionError::Io { .. } | SessionError::Corrupt { .. } => ErrorCode::INTERNAL_ERROR,
    };
    Error::new(code, format!("cannot load session `{id}`: {error}"))
}

/// The approval modes, offered as ACP session modes.
fn modes(current: ApprovalMode) -> SessionModeState {
    let available = [
        (
            ApprovalMode::Default,
            "Default",
            "Ask before edits and shell commands",
        ),
        (
            ApprovalMode::AutoEdit,
            "Auto edit",
            "Edit files freely; ask before shell commands",
        ),
        (ApprovalMode::Yolo, "YOLO", "Never ask"),
    ]
    .into_iter()
    .map(|(mode, name, description)| {
        SessionMode::new(mode.as_str(), name).description(description.to_owned())
    })
    .collect();
    SessionModeState::new(current.as_str(), available)
}

fn start_prompt(
    server: &Server,
    req: PromptRequest,
    responder: Responder<PromptResponse>,
) -> Result<(), Error> {
    let session = match server.session(&req.session_id) {
        Ok(session) => session,
        Err(e) => return responder.respond_with_error(e),
    };
    let cancellation = responder.cancellation();
    if let Some(done) = session.prompt(prompt_text(&req.prompt), responder) {
        // A JSON-RPC `$/cancel_request` of the prompt means the same as `session/cancel`.
        tokio::spawn(async move {
            tokio::select! {
                () = cancellation.cancelled() => session.cancel(),
                () = done.cancelled() => {}
            }
        });
    }
    Ok(())
}

fn set_mode(server: &Server, req: SetSessionModeRequest) -> Result<SetSessionModeResponse, Error> {
    let session = server.session(&req.session_id)?;
    let mode = ApprovalMode::parse(&req.mode_id.0).ok_or_else(|| {
        Error::new(
            ErrorCode::INVALID_PARAMS,
            format!(
                "unknown mode `{}`; use default, auto-edit or yolo",
                req.mode_id.0
            ),
        )
    })?;
    if session.mode() != mode && !session.set_mode(mode) {
        return Err(Error::new(ErrorCode::INTERNAL_ERROR, AGENT_GONE));
    }
    Ok(SetSessionModeResponse::new())
}

/// The prompt as the model sees it: text as is, resources as context the user attached.
fn prompt_text(blocks: &[ContentBlock]) -> String {
    let mut parts = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(text) => parts.push(text.text.clone()),
            ContentBlock::ResourceLink(link) => {
                parts.push(format!("@{} ({})", link.name, path_or_uri(&link.uri)));
            }
            ContentBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::TextResourceContents(contents) => parts.push(format!(
                    "<context ref=\"{}\">\n{}\n</context>",
                    path_or_uri(&contents.uri),
                    contents.text
                )),
                other => {
                    tracing::debug!(?other, "binary embedded resource ignored");
                }
            },
            other => tracing::debug!(?other, "unsupported prompt content ignored"),
        }
    }
    parts.join("\n")
}

/// `file:///x/y` as the path `/x/y` (what the file tools accept); other URIs unchanged.
fn path_or_uri(uri: &str) -> String {
    uri.strip_prefix("file://")
        .map(|p| PathBuf::from(p).display().to_string())
        .unwrap_or_else(|| uri.to_owned())
}

fn factory_error(error: FactoryError) -> Error {
    match error {
        FactoryError::NoProvider(message) => Error::new(ErrorCode::AUTH_REQUIRED, message),
        FactoryError::Invalid(message) => Error::new(ErrorCode::INTERNAL_ERROR, message),
    }
}

/// Locks connection state; each critical section is one map or field update, so a poisoned
/// lock still holds consistent data.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
