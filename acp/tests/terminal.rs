//! Shell commands in the client's terminals (issue 14 item 15): `terminal/create` with the
//! filtered environment, the card embedding the terminal, the output given to the model, and
//! kill + release on cancellation and timeout; locally without the capability.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ContentBlock, CreateTerminalRequest,
    CreateTerminalResponse, InitializeRequest, KillTerminalRequest, KillTerminalResponse,
    NewSessionRequest, PermissionOptionId, PromptRequest, PromptResponse, ReleaseTerminalRequest,
    ReleaseTerminalResponse, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, StopReason, TerminalExitStatus,
    TerminalOutputRequest, TerminalOutputResponse, WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
};
use agent_client_protocol::{Agent, ByteStreams, Client, Error, UntypedMessage};
use common::*;
use corvid_acp::{AgentFactory, FactoryError, SessionSpec};
use corvid_core::agent::AgentConfig;
use corvid_core::session::SessionStore;
use corvid_protocol::{ApprovalMode, FinishReason, Part};
use corvid_tools::shell::SandboxLevel;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::sync::{Notify, mpsc, watch};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

const PATIENCE: Duration = Duration::from_secs(20);

/// The environment commands start from: one secret-looking variable, one provider key.
fn base_env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ("DEPLOY_TOKEN", "hunter2"),
        ("OPENAI_API_KEY", "sk-test"),
        ("LANG", "C.UTF-8"),
    ]
}

/// Sessions with a chosen sandbox level and a fixed base environment, in yolo mode.
struct Factory {
    inner: Arc<TestFactory>,
    sandbox: SandboxLevel,
}

impl AgentFactory for Factory {
    fn check_provider(&self) -> Result<(), FactoryError> {
        Ok(())
    }

    fn build(&self, spec: SessionSpec) -> Result<AgentConfig, FactoryError> {
        let mut config = self.inner.build(spec)?;
        config.policy.shell.sandbox = self.sandbox;
        config.policy.shell.base_env = Some(Arc::new(
            base_env()
                .into_iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v)))
                .collect(),
        ));
        Ok(config)
    }

    fn session_store(&self) -> Option<SessionStore> {
        None
    }
}

fn factory(provider: Arc<ScriptedProvider>, sandbox: SandboxLevel) -> Arc<Factory> {
    let inner = Arc::new(TestFactory {
        provider,
        summaries: false,
        mode: ApprovalMode::Yolo,
        store: None,
        home: None,
        real: None,
    });
    Arc::new(Factory { inner, sandbox })
}

/// One terminal of the test client: a real process, as editors run it.
struct Term {
    output: Arc<Mutex<String>>,
    exit: watch::Receiver<Option<TerminalExitStatus>>,
    kill: Arc<Notify>,
}

type Terms = Arc<Mutex<HashMap<String, Term>>>;

fn unknown(id: &str) -> Error {
    // What real clients answer for a terminal they do not know: a plain JSON-RPC error.
    Error::invalid_params().data(json!(format!("unknown terminal {id}")))
}

fn spawn_term(req: &CreateTerminalRequest) -> Term {
    let mut cmd = tokio::process::Command::new(&req.command);
    cmd.args(&req.args)
        .env_clear()
        .envs(req.env.iter().map(|v| (v.name.clone(), v.value.clone())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(cwd) = &req.cwd {
        cmd.current_dir(cwd);
    }
    let mut child = cmd.spawn().unwrap();
    let output = Arc::new(Mutex::new(String::new()));
    for mut pipe in [
        Box::new(child.stdout.take().unwrap()) as Box<dyn tokio::io::AsyncRead + Unpin + Send>,
        Box::new(child.stderr.take().unwrap()),
    ] {
        let output = output.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                output
                    .lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
    }
    let (tx, exit) = watch::channel(None);
    let kill = Arc::new(Notify::new());
    let k = kill.clone();
    tokio::spawn(async move {
        let status = tokio::select! {
            status = child.wait() => status.unwrap(),
            () = k.notified() => {
                child.kill().await.unwrap();
                child.wait().await.unwrap()
            }
        };
        use std::os::unix::process::ExitStatusExt;
        let mut exit = TerminalExitStatus::new();
        exit.exit_code = status.code().map(|c| c as u32);
        exit.signal = status.signal().map(|s| format!("signal {s}"));
        let _ = tx.send(Some(exit));
    });
    Term { output, exit, kill }
}

/// A client offering (or not) `terminal/*`; every request and notification is logged.
struct TermClient {
    cx: ConnectionTo<Agent>,
    log: mpsc::UnboundedReceiver<Value>,
    seen: Vec<Value>,
    _close: tokio::sync::oneshot::Sender<()>,
}

macro_rules! logged {
    ($log:expr, $method:expr, $req:expr) => {
        $log.send(json!({"request": $method, "params": $req})).unwrap()
    };
}

impl TermClient {
    async fn start(factory: Arc<dyn AgentFactory>, terminal: bool) -> Self {
        Self::start_gated(factory, terminal, None).await
    }

    /// A client that answers `terminal/create` only once `gate` is notified.
    async fn start_gated(
        factory: Arc<dyn AgentFactory>,
        terminal: bool,
        gate: Option<Arc<Notify>>,
    ) -> Self {
        let (agent_io, client_io) = tokio::io::duplex(1 << 16);
        let (agent_read, agent_write) = tokio::io::split(agent_io);
        let (client_read, client_write) = tokio::io::split(client_io);
        tokio::spawn(corvid_acp::serve(
            factory,
            corvid_acp::line_transport(agent_read, agent_write).unwrap(),
        ));
        let (log_tx, log) = mpsc::unbounded_channel::<Value>();
        let terms: Terms = Arc::default();
        let (l1, l2, l3, l4, l5, l6, l7) = (
            log_tx.clone(),
            log_tx.clone(),
            log_tx.clone(),
            log_tx.clone(),
            log_tx.clone(),
            log_tx.clone(),
            log_tx,
        );
        let (t1, t2, t3, t4, t5) = (
            terms.clone(),
            terms.clone(),
            terms.clone(),
            terms.clone(),
            terms,
        );
        let client = Client
            .v1()
            .on_receive_request(
                async move |req: RequestPermissionRequest, responder, _cx| {
                    logged!(l1, "session/request_permission", req);
                    responder.respond(RequestPermissionResponse::new(
                        RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
                            PermissionOptionId::new("allow_once"),
                        )),
                    ))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |req: CreateTerminalRequest, responder, _cx| {
                    logged!(l2, "terminal/create", req);
                    let id = format!("term-{}", t1.lock().unwrap().len() + 1);
                    let term = spawn_term(&req);
                    t1.lock().unwrap().insert(id.clone(), term);
                    match gate.clone() {
                        // Answered from a task: the dispatch loop must stay free.
                        Some(gate) => {
                            tokio::spawn(async move {
                                gate.notified().await;
                                let _ = responder.respond(CreateTerminalResponse::new(id));
                            });
                            Ok(())
                        }
                        None => responder.respond(CreateTerminalResponse::new(id)),
                    }
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |req: WaitForTerminalExitRequest, responder, _cx| {
                    logged!(l3, "terminal/wait_for_exit", req);
                    let exit = t2
                        .lock()
                        .unwrap()
                        .get(req.terminal_id.0.as_ref())
                        .map(|t| t.exit.clone());
                    let Some(mut exit) = exit else {
                        return responder.respond_with_error(unknown(&req.terminal_id.0));
                    };
                    // Answered from a task: the dispatch loop must stay free for kill.
                    tokio::spawn(async move {
                        let status = exit.wait_for(Option::is_some).await.unwrap().clone();
                        let _ =
                            responder.respond(WaitForTerminalExitResponse::new(status.unwrap()));
                    });
                    Ok(())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |req: TerminalOutputRequest, responder, _cx| {
                    logged!(l4, "terminal/output", req);
                    let terms = t3.lock().unwrap();
                    match terms.get(req.terminal_id.0.as_ref()) {
                        Some(t) => {
                            let text = t.output.lock().unwrap().clone();
                            responder.respond(
                                TerminalOutputResponse::new(text, false)
                                    .exit_status(t.exit.borrow().clone()),
                            )
                        }
                        None => responder.respond_with_error(unknown(&req.terminal_id.0)),
                    }
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |req: KillTerminalRequest, responder, _cx| {
                    logged!(l5, "terminal/kill", req);
                    let kill = t4
                        .lock()
                        .unwrap()
                        .get(req.terminal_id.0.as_ref())
                        .map(|t| t.kill.clone());
                    match kill {
                        Some(kill) => {
                            kill.notify_one();
                            responder.respond(KillTerminalResponse::new())
                        }
                        None => responder.respond_with_error(unknown(&req.terminal_id.0)),
                    }
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |req: ReleaseTerminalRequest, responder, _cx| {
                    logged!(l6, "terminal/release", req);
                    match t5.lock().unwrap().remove(req.terminal_id.0.as_ref()) {
                        Some(t) => {
                            t.kill.notify_one();
                            responder.respond(ReleaseTerminalResponse::new())
                        }
                        None => responder.respond_with_error(unknown(&req.terminal_id.0)),
                    }
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_notification(
                async move |n: UntypedMessage, _cx| {
                    l7.send(json!({"method": n.method, "params": n.params}))
                        .unwrap();
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            );
        let (close_tx, close_rx) = tokio::sync::oneshot::channel::<()>();
        let (cx_tx, cx_rx) = tokio::sync::oneshot::channel();
        tokio::spawn(client.connect_with(
            ByteStreams::new(client_write.compat_write(), client_read.compat()),
            async move |cx: ConnectionTo<Agent>| {
                let _ = cx_tx.send(cx);
                let _ = close_rx.await;
                Ok(())
            },
        ));
        let cx = cx_rx.await.unwrap();
        cx.send_request(
            InitializeRequest::new(ProtocolVersion::V1)
                .client_capabilities(ClientCapabilities::new().terminal(terminal)),
        )
        .block_task()
        .await
        .unwrap();
        Self {
            cx,
            log,
            seen: Vec::new(),
            _close: close_tx,
        }
    }

    async fn new_session(&self, cwd: &Path) -> String {
        let resp = self
            .cx
            .send_request(NewSessionRequest::new(cwd))
            .block_task()
            .await
            .unwrap();
        resp.session_id.0.to_string()
    }

    fn prompt(&self, sid: &str) -> tokio::task::JoinHandle<Result<PromptResponse, Error>> {
        let sent = self.cx.send_request(PromptRequest::new(
            sid.to_owned(),
            vec![ContentBlock::from("run it".to_owned())],
        ));
        tokio::spawn(sent.block_task())
    }

    async fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let msg = tokio::time::timeout(PATIENCE, self.log.recv())
                .await
                .expect("the agent went silent")
                .unwrap();
            self.seen.push(msg.clone());
            if pred(&msg) {
                return msg;
            }
        }
    }

    fn drain(&mut self) {
        while let Ok(msg) = self.log.try_recv() {
            self.seen.push(msg);
        }
    }

    /// The terminal requests, in order, as (method, terminal id or command).
    fn terminal_requests(&self) -> Vec<String> {
        self.seen
            .iter()
            .filter_map(|m| m["request"].as_str())
            .filter(|r| r.starts_with("terminal/"))
            .map(str::to_owned)
            .collect()
    }

    fn request(&self, method: &str) -> Value {
        self.seen
            .iter()
            .find(|m| m["request"] == method)
            .unwrap_or_else(|| panic!("no {method} in {:#?}", self.seen))["params"]
            .clone()
    }

    /// The tool card updates of one call.
    fn card(&self, call_id: &str) -> Vec<Value> {
        self.seen
            .iter()
            .filter(|m| m["method"] == "session/update")
            .map(|m| m["params"]["update"].clone())
            .filter(|u| u["toolCallId"] == call_id)
            .collect()
    }
}

fn shell(id: &str, args: Value) -> Vec<Step> {
    vec![
        call(id, "run_shell_command", args),
        finish(FinishReason::ToolCalls),
    ]
}

/// The text of the tool result the model received in its second request.
fn tool_result_text(provider: &ScriptedProvider) -> String {
    let requests = provider.requests();
    let last = requests.last().unwrap();
    last.messages
        .iter()
        .flat_map(|m| m.parts.iter())
        .find_map(|p| match p {
            Part::ToolResult(result) => Some(result.output.clone()),
            _ => None,
        })
        .expect("a tool result")
}

async fn settle(prompt: tokio::task::JoinHandle<Result<PromptResponse, Error>>) -> PromptResponse {
    tokio::time::timeout(PATIENCE, prompt)
        .await
        .expect("the prompt never ended")
        .unwrap()
        .unwrap()
}

#[tokio::test]
async fn a_shell_call_runs_in_the_client_terminal_whose_card_embeds_it_and_the_model_gets_its_output()
 {
    let dir = project();
    let provider = ScriptedProvider::new(vec![
        shell(
            "call_t",
            json!({"command": "echo hello from the terminal; exit 3"}),
        ),
        answer("Done."),
    ]);
    let mut client = TermClient::start(factory(provider.clone(), SandboxLevel::Off), true).await;
    let sid = client.new_session(dir.path()).await;
    let response = settle(client.prompt(&sid)).await;
    client.drain();

    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(
        client.terminal_requests(),
        vec![
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/output",
            "terminal/release"
        ]
    );
    // The secret-looking variable and the provider key never leave corvid.
    assert_eq!(
        client.request("terminal/create"),
        json!({
            "sessionId": sid,
            "command": "bash",
            "args": ["-c", "echo hello from the terminal; exit 3"],
            "env": [
                {"name": "PATH", "value": "/usr/local/bin:/usr/bin:/bin"},
                {"name": "LANG", "value": "C.UTF-8"},
            ],
            "cwd": dir.path(),
            "outputByteLimit": 32768,
        })
    );
    let card = client.card("call_t");
    let statuses: Vec<Value> = card.iter().map(|u| u["status"].clone()).collect();
    assert_eq!(
        statuses,
        vec![json!("in_progress"), Value::Null, json!("completed")],
        "{card:#?}"
    );
    let terminal = json!({"type": "terminal", "terminalId": "term-1"});
    assert_eq!(card[1]["content"], json!([terminal]));
    let text = "Exit code: 3\n\nOutput:\nhello from the terminal";
    assert_eq!(
        card[2]["content"],
        json!([terminal, {"type": "content", "content": {"type": "text", "text": text}}])
    );
    assert_eq!(tool_result_text(&provider), text);
}

#[tokio::test]
async fn cancelling_while_waiting_for_exit_kills_and_releases_the_client_terminal() {
    let dir = project();
    let provider = ScriptedProvider::new(vec![shell("call_c", json!({"command": "sleep 30"}))]);
    let mut client = TermClient::start(factory(provider, SandboxLevel::Off), true).await;
    let sid = client.new_session(dir.path()).await;
    let prompt = client.prompt(&sid);
    client
        .until(|m| m["request"] == "terminal/wait_for_exit")
        .await;
    client
        .cx
        .send_notification(CancelNotification::new(sid.clone()))
        .unwrap();
    let response = settle(prompt).await;
    client.until(|m| m["request"] == "terminal/release").await;

    assert_eq!(response.stop_reason, StopReason::Cancelled);
    assert_eq!(
        client.terminal_requests(),
        vec![
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/kill",
            "terminal/release"
        ]
    );
    let target = json!({"sessionId": sid, "terminalId": "term-1"});
    assert_eq!(client.request("terminal/kill"), target);
    assert_eq!(client.request("terminal/release"), target);
}

#[tokio::test]
async fn a_timeout_kills_the_client_terminal_and_tells_the_model() {
    let dir = project();
    let provider = ScriptedProvider::new(vec![
        shell("call_s", json!({"command": "sleep 30", "timeout_ms": 300})),
        answer("It hung."),
    ]);
    let mut client = TermClient::start(factory(provider.clone(), SandboxLevel::Off), true).await;
    let sid = client.new_session(dir.path()).await;
    let response = settle(client.prompt(&sid)).await;
    client.drain();

    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(
        client.terminal_requests(),
        vec![
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/kill",
            "terminal/output",
            "terminal/release"
        ]
    );
    assert_eq!(
        tool_result_text(&provider),
        "Timed out after 300 ms; the command was killed in the editor's terminal.\n\n(no output)"
    );
}

#[tokio::test]
async fn a_client_without_the_terminal_capability_runs_the_command_locally() {
    let dir = project();
    let provider = ScriptedProvider::new(vec![
        shell("call_l", json!({"command": "echo local"})),
        answer("Done."),
    ]);
    let mut client = TermClient::start(factory(provider.clone(), SandboxLevel::Off), false).await;
    let sid = client.new_session(dir.path()).await;
    settle(client.prompt(&sid)).await;
    client.drain();

    assert_eq!(client.terminal_requests(), Vec::<String>::new());
    assert_eq!(
        tool_result_text(&provider),
        "Exit code: 0\n\nStdout:\nlocal"
    );
}

#[tokio::test]
async fn a_sandboxed_command_stays_local_even_when_the_client_offers_terminals() {
    let dir = project();
    let provider = ScriptedProvider::new(vec![
        shell("call_b", json!({"command": "echo boxed"})),
        answer("Done."),
    ]);
    let mut client = TermClient::start(
        factory(provider.clone(), SandboxLevel::WorkspaceWrite),
        true,
    )
    .await;
    let sid = client.new_session(dir.path()).await;
    settle(client.prompt(&sid)).await;
    client.drain();

    match corvid_sandbox::supported() {
        // The sandbox works here: the command runs in it, not in the editor.
        Ok(()) => {
            assert_eq!(client.terminal_requests(), Vec::<String>::new());
            assert_eq!(
                tool_result_text(&provider),
                "Exit code: 0\n\nStdout:\nboxed"
            );
        }
        // No sandbox: the command would run unconfined anyway, so it goes to the editor, but
        // only after the escalated question (asked even in yolo).
        Err(_) => {
            let asked = client.request("session/request_permission");
            assert!(
                asked["toolCall"]["content"][0]["content"]["text"]
                    .as_str()
                    .unwrap()
                    .contains("sandbox is not available"),
                "{asked:#?}"
            );
            assert_eq!(client.terminal_requests()[0], "terminal/create");
        }
    }
}

#[tokio::test]
async fn a_terminal_created_after_the_call_was_cancelled_is_killed_released_and_never_shown() {
    let dir = project();
    let provider = ScriptedProvider::new(vec![shell("call_g", json!({"command": "sleep 30"}))]);
    let gate = Arc::new(Notify::new());
    let mut client = TermClient::start_gated(
        factory(provider, SandboxLevel::Off),
        true,
        Some(gate.clone()),
    )
    .await;
    let sid = client.new_session(dir.path()).await;
    let prompt = client.prompt(&sid);
    client.until(|m| m["request"] == "terminal/create").await;
    client
        .cx
        .send_notification(CancelNotification::new(sid.clone()))
        .unwrap();
    let response = settle(prompt).await;
    // The editor answers the create only now, after the call ended.
    gate.notify_one();
    client.until(|m| m["request"] == "terminal/release").await;

    assert_eq!(response.stop_reason, StopReason::Cancelled);
    assert_eq!(
        client.terminal_requests(),
        vec!["terminal/create", "terminal/kill", "terminal/release"]
    );
    let shown: Vec<Value> = client
        .card("call_g")
        .into_iter()
        .filter(|u| u.to_string().contains("\"terminal\""))
        .collect();
    assert_eq!(shown, Vec::<Value>::new());
}
