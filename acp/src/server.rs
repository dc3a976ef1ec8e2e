//! The ACP request handlers. Handlers run inside the connection's dispatch loop, so none of
//! them waits on the client: prompts are answered later by the session's event pump.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthMethod, AuthMethodAgent, AuthenticateRequest, AuthenticateResponse,
    CancelNotification, FileSystemCapabilities, Implementation, InitializeRequest,
    InitializeResponse, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest,
    LoadSessionResponse, McpCapabilities, McpServer, NewSessionRequest, NewSessionResponse,
    PromptCapabilities, PromptRequest, PromptResponse, ResumeSessionRequest, ResumeSessionResponse,
    SessionCapabilities, SessionId, SessionListCapabilities, SessionMode, SessionModeState,
    SessionResumeCapabilities, SetSessionConfigOptionRequest, SetSessionConfigOptionResponse,
    SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Error, ErrorCode};
use corvid_core::agent::{AgentConfig, AgentHandle, spawn_agent};
use corvid_core::models::{CurrentModels, Efforts, ModelListing};
use corvid_core::session::spawn_recorded;
use corvid_core::usage::UsageStats;
use corvid_protocol::ApprovalMode;
use corvid_tools::LocalFs;

use crate::config_options::{self, Requested};
use crate::fs::ClientFs;
use crate::mapping::Mapper;
use crate::output::Output;
use crate::session::{AGENT_GONE, ModeSetThrough, Session, Start};
use crate::terminal::ClientTerminals;
use crate::{AgentFactory, FactoryError, LOAD_SESSION, LineTransport, SessionSpec};
use crate::{commands, listing};

mod load;
use load::{History, load_session};

/// How long `session/new` and `session/load` wait for the provider's model list when none
/// is cached yet, so a client picking a model right away finds it offered.
const FIRST_MODEL_LIST_WAIT: std::time::Duration = std::time::Duration::from_millis(1500);

/// The one authentication method: a provider configured through env or settings.
const AUTH_METHOD_ID: &str = "corvid-provider";

/// Connection-wide state.
struct Server {
    factory: Arc<dyn AgentFactory>,
    fs_caps: Mutex<FileSystemCapabilities>,
    /// The client offers `terminal/*` (see [`crate::terminal`]).
    client_terminals: Mutex<bool>,
    /// How `ask_user` questions reach the client (form elicitation when it offers it).
    questions: Mutex<crate::questions::QuestionChannel>,
    /// The client opted in to `_corvid/tool_use_summary` (SPEC §6).
    summary_notification: Mutex<bool>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// Where session frames are written, bypassing the crate's outgoing queue.
    output: Output,
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
    transport: LineTransport,
) -> Result<(), Error> {
    let LineTransport { lines, output } = transport;
    let server = Arc::new(Server {
        factory,
        fs_caps: Mutex::new(FileSystemCapabilities::default()),
        client_terminals: Mutex::new(false),
        questions: Mutex::default(),
        summary_notification: Mutex::new(false),
        sessions: Mutex::new(HashMap::new()),
        output,
    });
    let (s1, s2, s3, s4, s5, s6, s7, s8, s9, s10) = (
        server.clone(),
        server.clone(),
        server.clone(),
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
                *lock(&s1.client_terminals) = req.client_capabilities.terminal;
                *lock(&s1.questions) = question_channel(&req);
                *lock(&s1.summary_notification) = wants_summary_notification(&req);
                responder.respond(initialize_response(s1.factory.accepts_images()))
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
                match new_session(&s3, req, cx.clone()).await {
                    Ok(response) => {
                        let id = response.session_id.clone();
                        responder.respond(response)?;
                        offer_provider_models(&s3, &id);
                        commands::announce(s3.session(&id).ok(), id, &cx)
                    }
                    Err(e) => responder.respond_with_error(e),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest,
                        responder: Responder<LoadSessionResponse>,
                        cx: ConnectionTo<Client>| {
                let id = req.session_id.clone();
                // Waits while the replay is ahead of the client by the output's bound; the
                // writer does not need the dispatch loop, so this cannot deadlock.
                match load_session(&s7, req, cx.clone(), History::Replay).await {
                    Ok(response) => {
                        responder.respond(response)?;
                        offer_provider_models(&s7, &id);
                        commands::announce(s7.session(&id).ok(), id, &cx)
                    }
                    Err(e) => responder.respond_with_error(e),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ResumeSessionRequest,
                        responder: Responder<ResumeSessionResponse>,
                        cx: ConnectionTo<Client>| {
                let id = req.session_id.clone();
                let load = LoadSessionRequest::new(req.session_id, req.cwd)
                    .mcp_servers(req.mcp_servers)
                    .meta(req.meta);
                // The client keeps its own copy of the conversation: nothing is replayed.
                match load_session(&s10, load, cx.clone(), History::Skip).await {
                    Ok(loaded) => {
                        responder.respond(
                            ResumeSessionResponse::new()
                                .modes(loaded.modes)
                                .config_options(loaded.config_options),
                        )?;
                        offer_provider_models(&s10, &id);
                        commands::announce(s10.session(&id).ok(), id, &cx)
                    }
                    Err(e) => responder.respond_with_error(e),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ListSessionsRequest,
                        responder: Responder<ListSessionsResponse>,
                        _cx| {
                responder
                    .respond_with_result(listing::list_sessions(s8.factory.session_store(), &req))
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
        .on_receive_request(
            async move |req: SetSessionConfigOptionRequest,
                        responder: Responder<SetSessionConfigOptionResponse>,
                        _cx| {
                responder.respond_with_result(set_config_option(&s9, req))
            },
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
        .connect_to(lines)
        .await
}

/// Once the client knows the session, asks its provider for the models it serves and offers
/// them in the `model` option.
fn offer_provider_models(server: &Server, id: &SessionId) {
    if let Ok(session) = server.session(id) {
        session.offer_provider_models();
    }
}

/// Form elicitation for a client that advertises it, else permission requests.
fn question_channel(req: &InitializeRequest) -> crate::questions::QuestionChannel {
    let form = req
        .client_capabilities
        .elicitation
        .as_ref()
        .is_some_and(|e| e.supports_form());
    if form {
        crate::questions::QuestionChannel::Elicitation
    } else {
        crate::questions::QuestionChannel::Permission
    }
}

/// Whether the client asked for the summary notification with
/// `clientCapabilities._meta.corvid.toolUseSummaryNotification: true`.
fn wants_summary_notification(req: &InitializeRequest) -> bool {
    req.client_capabilities
        .meta
        .as_ref()
        .and_then(|meta| meta.get("corvid"))
        .and_then(|corvid| corvid.get("toolUseSummaryNotification"))
        == Some(&serde_json::Value::Bool(true))
}

/// corvid speaks protocol v1 only, which is what ACP asks an agent to answer with whatever
/// version the client requested (the client then decides whether it can go on).
fn initialize_response(accepts_images: bool) -> InitializeResponse {
    let auth = AuthMethodAgent::new(AUTH_METHOD_ID, "Model provider key").description(
        "Set OPENAI_API_KEY or ANTHROPIC_API_KEY (or model.apiKeyEnv in ~/.corvid/settings.json) \
         in the environment corvid is started with.",
    );
    InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(LOAD_SESSION)
                // Editors' stdio and streamable HTTP servers start with the session.
                .mcp_capabilities(McpCapabilities::new().http(true))
                .session_capabilities(
                    SessionCapabilities::new()
                        .list(SessionListCapabilities::new())
                        .resume(SessionResumeCapabilities::new()),
                )
                .prompt_capabilities(
                    PromptCapabilities::new()
                        .embedded_context(true)
                        .image(accepts_images),
                ),
        )
        .auth_methods(vec![AuthMethod::Agent(auth)])
        .agent_info(Implementation::new("corvid", env!("CARGO_PKG_VERSION")))
}

async fn new_session(
    server: &Server,
    req: NewSessionRequest,
    cx: ConnectionTo<Client>,
) -> Result<NewSessionResponse, Error> {
    require_absolute(&req.cwd)?;
    let session_id = SessionId::new(uuid::Uuid::new_v4().to_string());
    let spec = session_spec(server, &session_id, &req.cwd, &req.mcp_servers, &cx);
    let mut config = server.factory.build(spec.clone()).map_err(factory_error)?;
    let mapper = mapper(server, &session_id, req.cwd);
    install_terminals(server, &mut config, &mapper, &session_id, &cx);
    let start = Start {
        mode: config.approval_mode,
        model: config.model.clone(),
        other_models: config.fallback_model.iter().cloned().collect(),
        stats: UsageStats::default(),
        checkpoints: None,
        background: None,
        store: None,
        listed: listed_models(server, &config).await,
        efforts: Efforts::new(config.provider.clone()),
        commands: config.policy.commands.clone(),
    };
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
    let mode = start.mode;
    let session = open_session(server, &session_id, handle, start, mapper, cx);
    Ok(NewSessionResponse::new(session_id)
        .modes(modes(mode))
        .config_options(session.config_options()))
}

/// The provider's models for the session's `model` option: the cached listing at once, or,
/// the first time, a fresh one if it comes within [`FIRST_MODEL_LIST_WAIT`] (this handler
/// holds the connection's other requests meanwhile, which only a first session ever pays).
async fn listed_models(server: &Server, config: &AgentConfig) -> CurrentModels {
    let home = server.factory.corvid_home();
    ModelListing::new(config.provider.clone(), home.as_deref())
        .current(FIRST_MODEL_LIST_WAIT)
        .await
}

/// Unconfined shell commands run in the client's terminals when it offers them.
fn install_terminals(
    server: &Server,
    config: &mut AgentConfig,
    mapper: &Mapper,
    session_id: &SessionId,
    cx: &ConnectionTo<Client>,
) {
    config.policy.shell.host = ClientTerminals::for_session(
        *lock(&server.client_terminals),
        cx.clone(),
        session_id.clone(),
        mapper.terminals().clone(),
    );
}

/// The session's frame builder, with the connection's summary opt-in.
fn mapper(server: &Server, session_id: &SessionId, cwd: PathBuf) -> Mapper {
    Mapper::new(session_id.clone(), cwd)
        .with_summary_notification(*lock(&server.summary_notification))
        .with_question_channel(*lock(&server.questions))
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
    mut start: Start,
    mapper: Mapper,
    cx: ConnectionTo<Client>,
) -> Arc<Session> {
    start.checkpoints = handle.checkpoints();
    start.background = handle.background();
    start.store = server.factory.session_store();
    let (ops, events) = handle.split();
    let session = Session::start(ops, events, start, mapper, cx, server.output.clone());
    lock(&server.sessions).insert(session_id.0.to_string(), session.clone());
    session
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

/// The approval modes, offered as ACP session modes (and as the `mode` config option).
fn modes(current: ApprovalMode) -> SessionModeState {
    let available = config_options::MODES
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
    let input = match crate::prompt::convert(&req.prompt) {
        Ok(input) => input,
        Err(e) => return responder.respond_with_error(e),
    };
    let cancellation = responder.cancellation();
    if let Some(done) = session.prompt(input, responder) {
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

fn set_config_option(
    server: &Server,
    req: SetSessionConfigOptionRequest,
) -> Result<SetSessionConfigOptionResponse, Error> {
    let session = server.session(&req.session_id)?;
    match config_options::requested(&req)? {
        Requested::Model(model) => {
            if !session.switch_model(&model) {
                return Err(Error::new(ErrorCode::INTERNAL_ERROR, AGENT_GONE));
            }
        }
        Requested::Effort(effort) => session.set_effort(effort)?,
        Requested::Mode(mode) => {
            if session.mode() != mode {
                if !session.set_mode(mode) {
                    return Err(Error::new(ErrorCode::INTERNAL_ERROR, AGENT_GONE));
                }
                session.mode_set_by_client(ModeSetThrough::ConfigOption);
            }
        }
    }
    Ok(SetSessionConfigOptionResponse::new(
        session.config_options(),
    ))
}

fn set_mode(server: &Server, req: SetSessionModeRequest) -> Result<SetSessionModeResponse, Error> {
    let session = server.session(&req.session_id)?;
    let mode = ApprovalMode::parse(&req.mode_id.0)
        .ok_or_else(|| config_options::unknown_mode(&req.mode_id.0))?;
    if session.mode() != mode {
        if !session.set_mode(mode) {
            return Err(Error::new(ErrorCode::INTERNAL_ERROR, AGENT_GONE));
        }
        session.mode_set_by_client(ModeSetThrough::SetMode);
    }
    Ok(SetSessionModeResponse::new())
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
