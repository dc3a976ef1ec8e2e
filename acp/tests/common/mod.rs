//! In-process ACP harness: corvid's server and a client built with the same crate, talking
//! newline-delimited JSON over a `tokio::io::duplex` pipe, with a real core driven by a
//! scripted provider.

#![allow(dead_code, unused_imports, clippy::unwrap_used, clippy::expect_used)]

mod driving;
mod frames;
pub mod raw;

pub use frames::*;

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, ContentBlock, FileSystemCapabilities, InitializeRequest,
    LoadSessionRequest, LoadSessionResponse, NewSessionRequest, PermissionOptionId, PromptRequest,
    PromptResponse, ReadTextFileRequest, ReadTextFileResponse, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, SelectedPermissionOutcome,
    WriteTextFileRequest, WriteTextFileResponse,
};
use agent_client_protocol::{Agent, ByteStreams, Client, Error, ErrorCode, UntypedMessage};
use corvid_acp::{AgentFactory, FactoryError, SessionSpec};
use corvid_core::agent::AgentConfig;
use corvid_core::retry::RetryPolicy;
use corvid_core::session::SessionStore;
use corvid_core::summary::SummaryConfig;
use corvid_protocol::{
    ApprovalMode, Completion, ErrorInfo, ErrorKind, FinishReason, ModelRequest, StreamEvent,
    StreamItem, ToolCall, Usage,
};
use corvid_providers::{EventStream, Provider};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

/// A guard against a hung test, never a timing assertion.
const PATIENCE: Duration = Duration::from_secs(20);

/// One step of a scripted model response.
#[derive(Clone)]
pub enum Step {
    Event(StreamEvent),
    Fail(ErrorInfo),
    /// The stream stalls here until the consumer drops it (cancellation).
    Hang,
}

pub fn text(t: &str) -> Step {
    Step::Event(StreamEvent::Text { text: t.into() })
}
pub fn preparing(id: &str, name: &str) -> Step {
    Step::Event(StreamEvent::ToolPreparing {
        call_id: id.into(),
        tool_name: name.into(),
    })
}
pub fn call(id: &str, name: &str, args: Value) -> Step {
    Step::Event(StreamEvent::ToolCall(ToolCall {
        call_id: id.into(),
        name: name.into(),
        args,
    }))
}
pub fn usage(input: u64, output: u64) -> Step {
    Step::Event(StreamEvent::Usage(Usage {
        input_tokens: input,
        output_tokens: output,
        total_tokens: input + output,
        ..Usage::default()
    }))
}
pub fn finish(reason: FinishReason) -> Step {
    Step::Event(StreamEvent::Finished { reason })
}
pub fn cut() -> Step {
    Step::Fail(ErrorInfo::new(
        ErrorKind::StreamTruncated,
        "the stream ended before the response finished",
    ))
}
/// A text-only answer that ends the task.
pub fn answer(t: &str) -> Vec<Step> {
    vec![text(t), finish(FinishReason::Stop)]
}

/// A provider replaying one script per model request, in order.
#[derive(Default)]
pub struct ScriptedProvider {
    scripts: Mutex<VecDeque<Vec<Step>>>,
    requests: Mutex<Vec<ModelRequest>>,
    /// The fast model's answer for summaries.
    label: Mutex<Option<String>>,
    /// What `list_models` answers.
    models: Mutex<Vec<String>>,
}

impl ScriptedProvider {
    pub fn new(scripts: Vec<Vec<Step>>) -> Arc<Self> {
        Arc::new(Self {
            scripts: Mutex::new(scripts.into()),
            ..Self::default()
        })
    }

    pub fn with_label(self: Arc<Self>, label: &str) -> Arc<Self> {
        *self.label.lock().unwrap() = Some(label.to_owned());
        self
    }

    pub fn with_models(self: Arc<Self>, models: &[&str]) -> Arc<Self> {
        *self.models.lock().unwrap() = models.iter().map(|m| (*m).to_owned()).collect();
        self
    }

    /// The streamed (main model) requests received so far.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().unwrap().clone()
    }
}

impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        "scripted"
    }

    fn stream(&self, request: ModelRequest) -> EventStream {
        self.requests.lock().unwrap().push(request);
        let script = self.scripts.lock().unwrap().pop_front().unwrap_or_else(|| {
            vec![Step::Fail(ErrorInfo::new(
                ErrorKind::BadRequest,
                "the test script has no response left",
            ))]
        });
        let mut items: Vec<StreamItem> = Vec::new();
        let mut hang = false;
        for step in script {
            match step {
                Step::Event(e) => items.push(Ok(e)),
                Step::Fail(e) => {
                    items.push(Err(e));
                    break;
                }
                Step::Hang => {
                    hang = true;
                    break;
                }
            }
        }
        let head = futures::stream::iter(items);
        if hang {
            Box::pin(futures::StreamExt::chain(head, futures::stream::pending()))
        } else {
            Box::pin(head)
        }
    }

    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ErrorInfo>> {
        let models = self.models.lock().unwrap().clone();
        futures::future::ready(Ok(models)).boxed()
    }

    fn complete(
        &self,
        _request: ModelRequest,
    ) -> BoxFuture<'static, Result<Completion, ErrorInfo>> {
        let label = self.label.lock().unwrap().clone();
        async move {
            match label {
                Some(text) => Ok(Completion {
                    text,
                    finish_reason: Some(FinishReason::Stop),
                    ..Completion::default()
                }),
                None => Err(ErrorInfo::new(
                    ErrorKind::BadRequest,
                    "no fast model scripted",
                )),
            }
        }
        .boxed()
    }
}

/// Builds sessions on the scripted provider with the real built-in tools.
pub struct TestFactory {
    pub provider: Arc<ScriptedProvider>,
    pub summaries: bool,
    pub mode: ApprovalMode,
    /// Where sessions are recorded; `None` records nothing.
    pub store: Option<SessionStore>,
    /// `$CORVID_HOME` for caches (the model listings); `None` caches nothing.
    pub home: Option<std::path::PathBuf>,
    /// A real provider (over loopback HTTP) used instead of the scripted one.
    pub real: Option<Arc<dyn Provider>>,
}

impl TestFactory {
    pub fn new(provider: Arc<ScriptedProvider>) -> Arc<Self> {
        Arc::new(Self {
            provider,
            summaries: false,
            mode: ApprovalMode::Default,
            store: None,
            home: None,
            real: None,
        })
    }

    /// Sessions on `provider` (a real one, talking to a mock server).
    pub fn real(provider: Arc<dyn Provider>) -> Arc<Self> {
        Arc::new(Self {
            provider: ScriptedProvider::new(Vec::new()),
            summaries: false,
            mode: ApprovalMode::Default,
            store: None,
            home: None,
            real: Some(provider),
        })
    }
}

impl AgentFactory for TestFactory {
    fn check_provider(&self) -> Result<(), FactoryError> {
        Ok(())
    }

    fn build(&self, spec: SessionSpec) -> Result<AgentConfig, FactoryError> {
        let provider: Arc<dyn Provider> = match &self.real {
            Some(real) => Arc::clone(real),
            None => self.provider.clone(),
        };
        Ok(AgentConfig {
            session_id: spec.session_id,
            provider: provider.clone(),
            model: "scripted-main".into(),
            fallback_model: None,
            max_output_tokens: None,
            system_prompt: "You are a test.".into(),
            cwd: spec.cwd,
            tools: corvid_tools::builtin_tools(),
            fs: spec.fs,
            approval_mode: self.mode,
            retry: RetryPolicy {
                max_attempts: 3,
                initial_delay: Duration::from_millis(1),
                max_delay: Duration::from_millis(1),
            },
            shell_timeout: Duration::from_secs(10),
            summaries: self.summaries.then(|| SummaryConfig {
                provider,
                model: "scripted-fast".into(),
            }),
            history: Vec::new(),
            policy: corvid_core::policy::SessionPolicy {
                shell: corvid_tools::shell::ShellPolicy {
                    background: Some(Arc::new(corvid_tools::shell::BackgroundProcesses::new(
                        Default::default(),
                    ))),
                    ..Default::default()
                },
                ..Default::default()
            },
            instructions: Default::default(),
        })
    }

    fn session_store(&self) -> Option<SessionStore> {
        self.store.clone()
    }

    fn corvid_home(&self) -> Option<std::path::PathBuf> {
        self.home.clone()
    }
}

/// How the test client answers `session/request_permission`.
#[derive(Clone, Debug)]
pub enum PermissionPolicy {
    Select(&'static str),
    /// Never answer; when the agent abandons the request, log it and answer `cancelled`.
    Hold,
    /// Answer `cancelled` at once (the user cancelled the turn from the question).
    Cancelled,
}

/// The test client: everything it receives lands in one ordered log.
pub struct TestClient {
    pub cx: ConnectionTo<Agent>,
    /// Ends the client's side of the connection (see [`Self::close`]).
    close: Option<tokio::sync::oneshot::Sender<()>>,
    server: tokio::task::JoinHandle<anyhow::Result<()>>,
    log: mpsc::UnboundedReceiver<Value>,
    pub seen: Vec<Value>,
    pub files: Arc<Mutex<HashMap<PathBuf, String>>>,
    pub policy: Arc<Mutex<PermissionPolicy>>,
}

impl TestClient {
    /// Starts corvid's server and a client on a duplex pipe and initializes the connection.
    pub async fn start(factory: Arc<dyn AgentFactory>, fs: FileSystemCapabilities) -> Self {
        Self::start_with(factory, ClientCapabilities::new().fs(fs)).await
    }

    /// [`Self::start`] for a client that also asks for `_corvid/tool_use_summary`.
    pub async fn start_opted_in(factory: Arc<dyn AgentFactory>) -> Self {
        let mut meta = serde_json::Map::new();
        meta.insert("corvid".into(), json!({"toolUseSummaryNotification": true}));
        Self::start_with(factory, ClientCapabilities::new().meta(meta)).await
    }

    /// Starts the pair, initializing with these client capabilities.
    pub async fn start_with(factory: Arc<dyn AgentFactory>, caps: ClientCapabilities) -> Self {
        let (agent_io, client_io) = tokio::io::duplex(1 << 16);
        let (agent_read, agent_write) = tokio::io::split(agent_io);
        let (client_read, client_write) = tokio::io::split(client_io);
        let server = tokio::spawn(corvid_acp::serve(
            factory,
            corvid_acp::line_transport(agent_read, agent_write).unwrap(),
        ));
        let (close_tx, close_rx) = tokio::sync::oneshot::channel::<()>();

        let (log_tx, log) = mpsc::unbounded_channel::<Value>();
        let files: Arc<Mutex<HashMap<PathBuf, String>>> = Arc::default();
        let policy = Arc::new(Mutex::new(PermissionPolicy::Select("allow_once")));
        let (cx_tx, cx_rx) = tokio::sync::oneshot::channel();

        let (l1, l2, l3, l4) = (log_tx.clone(), log_tx.clone(), log_tx.clone(), log_tx);
        let (f1, f2) = (files.clone(), files.clone());
        let p1 = policy.clone();
        let client = Client
            .v1()
            .on_receive_request(
                async move |req: RequestPermissionRequest, responder, _cx| {
                    l1.send(json!({"request": "session/request_permission", "params": req}))
                        .unwrap();
                    let policy = p1.lock().unwrap().clone();
                    match policy {
                        PermissionPolicy::Select(id) => responder.respond(
                            RequestPermissionResponse::new(RequestPermissionOutcome::Selected(
                                SelectedPermissionOutcome::new(PermissionOptionId::new(id)),
                            )),
                        ),
                        PermissionPolicy::Cancelled => responder.respond(
                            RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled),
                        ),
                        PermissionPolicy::Hold => {
                            let log = l1.clone();
                            tokio::spawn(async move {
                                responder.cancellation().cancelled().await;
                                log.send(json!({"abandoned": "session/request_permission"}))
                                    .unwrap();
                                let _ = responder.respond(RequestPermissionResponse::new(
                                    RequestPermissionOutcome::Cancelled,
                                ));
                            });
                            Ok(())
                        }
                    }
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |req: ReadTextFileRequest, responder, _cx| {
                    l2.send(json!({"request": "fs/read_text_file", "params": req}))
                        .unwrap();
                    let content = f1.lock().unwrap().get(&req.path).cloned();
                    match content {
                        Some(c) => responder.respond(ReadTextFileResponse::new(c)),
                        // As the official Python client does: a plain -32603, no hint that the
                        // file is missing.
                        None => responder.respond_with_error(Error::internal_error()),
                    }
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |req: WriteTextFileRequest, responder, _cx| {
                    l3.send(json!({"request": "fs/write_text_file", "params": req}))
                        .unwrap();
                    f2.lock()
                        .unwrap()
                        .insert(req.path.clone(), req.content.clone());
                    responder.respond(WriteTextFileResponse::new())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_notification(
                async move |n: UntypedMessage, _cx| {
                    l4.send(json!({"method": n.method, "params": n.params}))
                        .unwrap();
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            );
        tokio::spawn(client.connect_with(
            ByteStreams::new(client_write.compat_write(), client_read.compat()),
            async move |cx: ConnectionTo<Agent>| {
                let _ = cx_tx.send(cx);
                let _ = close_rx.await;
                Ok(())
            },
        ));
        let cx = cx_rx.await.expect("client connection starts");
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1).client_capabilities(caps))
            .block_task()
            .await
            .expect("initialize");
        Self {
            cx,
            close: Some(close_tx),
            server,
            log,
            seen: Vec::new(),
            files,
            policy,
        }
    }

    pub async fn new_session(&self, cwd: &Path) -> String {
        let resp = self
            .cx
            .send_request(NewSessionRequest::new(cwd))
            .block_task()
            .await
            .expect("session/new");
        resp.session_id.0.to_string()
    }

    /// Closes the connection as an editor quitting does, and waits until the server is done.
    pub async fn close(mut self) {
        if let Some(close) = self.close.take() {
            let _ = close.send(());
        }
        tokio::time::timeout(PATIENCE, &mut self.server)
            .await
            .expect("the server did not end after the client left")
            .unwrap()
            .unwrap();
    }

    /// `session/load` of a session a closed connection had open: its agent lets go of the
    /// recording shortly after the connection ends, so "in use" is retried for a while.
    pub async fn load_released(
        &self,
        session_id: &str,
        cwd: &Path,
    ) -> Result<LoadSessionResponse, Error> {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            match self.load_session(session_id, cwd).await {
                Err(e)
                    if e.message.contains("in use") && tokio::time::Instant::now() < deadline =>
                {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                other => return other,
            }
        }
    }

    /// `session/load`; the replayed frames are in the log when it returns.
    pub async fn load_session(
        &self,
        session_id: &str,
        cwd: &Path,
    ) -> Result<LoadSessionResponse, Error> {
        self.cx
            .send_request(LoadSessionRequest::new(session_id.to_owned(), cwd))
            .block_task()
            .await
    }

    /// Sends a prompt; the answer arrives on the returned task.
    pub fn prompt(
        &self,
        session_id: &str,
        text: &str,
    ) -> tokio::task::JoinHandle<Result<PromptResponse, Error>> {
        let sent = self.cx.send_request(PromptRequest::new(
            session_id.to_owned(),
            vec![ContentBlock::from(text.to_owned())],
        ));
        tokio::spawn(sent.block_task())
    }

    /// The next message the client received.
    pub async fn next(&mut self) -> Value {
        let msg = tokio::time::timeout(PATIENCE, self.log.recv())
            .await
            .expect("the agent went silent")
            .expect("client log closed");
        self.seen.push(msg.clone());
        msg
    }

    /// Reads messages until one satisfies `pred`; returns it.
    pub async fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let msg = self.next().await;
            if pred(&msg) {
                return msg;
            }
        }
    }

    /// Reads whatever already arrived, without waiting.
    pub fn drain(&mut self) {
        while let Ok(msg) = self.log.try_recv() {
            self.seen.push(msg);
        }
    }

    /// The `update` of every `session/update` seen so far, in order, without the
    /// `available_commands_update` each session starts with (see [`Self::command_lists`]),
    /// the context fill (`usage_update`, see [`Self::context_fills`]) and the tool-use labels, which arrive whenever they are ready (see [`Self::labels`]).
    pub fn updates(&self) -> Vec<Value> {
        self.seen
            .iter()
            .filter(|m| m["method"] == "session/update")
            .map(|m| m["params"]["update"].clone())
            .filter(|u| u["sessionUpdate"] != "available_commands_update")
            .filter(|u| u["sessionUpdate"] != "usage_update")
            .filter(|u| u["_meta"]["toolUseSummary"].is_null())
            .collect()
    }

    /// Every `usage_update` seen so far: (tokens used, window size).
    pub fn context_fills(&self) -> Vec<(u64, u64)> {
        self.seen
            .iter()
            .filter(|m| m["params"]["update"]["sessionUpdate"] == "usage_update")
            .map(|m| {
                let u = &m["params"]["update"];
                (u["used"].as_u64().unwrap(), u["size"].as_u64().unwrap())
            })
            .collect()
    }

    /// Every tool-use label seen so far: (call id, `_meta.toolUseSummary`).
    pub fn labels(&self) -> Vec<(String, Value)> {
        self.seen
            .iter()
            .filter(|m| m["method"] == "session/update")
            .map(|m| &m["params"]["update"])
            .filter(|u| !u["_meta"]["toolUseSummary"].is_null())
            .map(|u| {
                (
                    u["toolCallId"].as_str().unwrap().to_owned(),
                    u["_meta"]["toolUseSummary"].clone(),
                )
            })
            .collect()
    }

    /// Waits for the next tool-use label.
    pub async fn until_label(&mut self) -> Value {
        self.until(|m| !m["params"]["update"]["_meta"]["toolUseSummary"].is_null())
            .await
    }

    /// Every `available_commands_update` seen so far: (session id, command names).
    pub fn command_lists(&self) -> Vec<(String, Vec<String>)> {
        self.seen
            .iter()
            .filter(|m| m["params"]["update"]["sessionUpdate"] == "available_commands_update")
            .map(|m| {
                let names = m["params"]["update"]["availableCommands"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c["name"].as_str().unwrap().to_owned())
                    .collect();
                (m["params"]["sessionId"].as_str().unwrap().to_owned(), names)
            })
            .collect()
    }

    /// Tool-card frames only (`tool_call` / `tool_call_update`).
    pub fn cards(&self) -> Vec<Value> {
        self.updates()
            .into_iter()
            .filter(|u| {
                u["sessionUpdate"] == "tool_call" || u["sessionUpdate"] == "tool_call_update"
            })
            .collect()
    }

    /// SPEC §5.2 #2: every card seen ended completed or failed.
    pub fn assert_no_card_left_pending(&self) {
        let mut last: Vec<(String, String)> = Vec::new();
        for card in self.cards() {
            let id = card["toolCallId"].as_str().unwrap().to_owned();
            if let Some(status) = card["status"].as_str() {
                match last.iter_mut().find(|(i, _)| *i == id) {
                    Some(entry) => entry.1 = status.to_owned(),
                    None => last.push((id, status.to_owned())),
                }
            }
        }
        let open: Vec<_> = last
            .iter()
            .filter(|(_, s)| s != "completed" && s != "failed")
            .collect();
        assert!(open.is_empty(), "cards left open: {open:?}");
    }
}

pub fn fs_caps(read: bool, write: bool) -> FileSystemCapabilities {
    FileSystemCapabilities::new()
        .read_text_file(read)
        .write_text_file(write)
}
