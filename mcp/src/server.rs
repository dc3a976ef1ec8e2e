//! One configured server: its connection, its tools and its status, with a restart on next use
//! (and backoff) after it crashed. Every error names the server.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use corvid_protocol::ToolOutput;
use corvid_tools::{Tool, ToolError};
use rmcp::ServiceError;
use rmcp::model::CallToolRequestParams;
use serde_json::Value;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::ServerConfig;
use crate::connect::{Connection, Launch, connect};
use crate::names::tool_names;
use crate::servers::left_out_notice;
use crate::tool::McpTool;

/// The longest wait between restarts of a server that keeps crashing.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Where a server is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// `enabled: false`: never started.
    Disabled,
    /// Starting or listing its tools.
    Starting,
    /// Connected, with its tools listed.
    Ready,
    /// Could not start, or stopped; the message says why (and names the server).
    Failed(String),
}

/// A server of the session.
pub struct Server {
    pub config: ServerConfig,
    /// The unique, sanitized id in its tools' names.
    pub id: String,
    launch: Launch,
    /// The most tools of this server offered to the model (`mcp.maxToolsPerServer`).
    max_tools: usize,
    state: Mutex<State>,
    /// `true` once the first start finished, either way.
    started: watch::Sender<bool>,
    tools_changed: Arc<AtomicBool>,
    /// Held while a call restarts the server, so concurrent calls wait for that one restart.
    restarting: tokio::sync::Mutex<()>,
}

struct State {
    status: Status,
    connection: Option<Arc<Connection>>,
    tools: Vec<Arc<dyn Tool>>,
    /// A start failure not yet shown to the user.
    unreported: Option<String>,
    /// Tools left out by the per-server cap, not yet told to the user.
    cut: Option<String>,
    /// Consecutive failed starts, and when the next start may be tried.
    failures: u32,
    retry_at: Option<Instant>,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Server {
    pub(crate) fn new(
        config: ServerConfig,
        id: String,
        launch: Launch,
        max_tools: usize,
    ) -> Arc<Self> {
        let status = if config.enabled {
            Status::Starting
        } else {
            Status::Disabled
        };
        let (started, _) = watch::channel(!config.enabled);
        Arc::new(Self {
            config,
            id,
            launch,
            max_tools,
            state: Mutex::new(State {
                status,
                connection: None,
                tools: Vec::new(),
                unreported: None,
                cut: None,
                failures: 0,
                retry_at: None,
            }),
            started,
            tools_changed: Arc::new(AtomicBool::new(false)),
            restarting: tokio::sync::Mutex::new(()),
        })
    }

    /// The current status.
    pub fn status(&self) -> Status {
        lock(&self.state).status.clone()
    }

    /// The tools listed by the running server (none while it is not running).
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        lock(&self.state).tools.clone()
    }

    /// What the user has not been told about yet (a start failure, tools left out), once.
    pub(crate) fn take_notices(&self) -> Vec<String> {
        let mut state = lock(&self.state);
        state
            .unreported
            .take()
            .into_iter()
            .chain(state.cut.take())
            .collect()
    }

    /// Resolves once the first start has finished, either way.
    pub(crate) async fn wait_started(&self) {
        let mut rx = self.started.subscribe();
        let _ = rx.wait_for(|started| *started).await;
    }

    /// Connects and lists the tools; on failure the status says why.
    pub(crate) async fn start(self: &Arc<Self>) {
        lock(&self.state).status = Status::Starting;
        let result = match connect(&self.config, &self.launch, self.tools_changed.clone()).await {
            Ok(connection) => {
                let connection = Arc::new(connection);
                self.list(&connection)
                    .await
                    .map(|tools| (connection, tools))
            }
            Err(e) => Err(self.error(&format!("could not start: {e}"))),
        };
        {
            let mut state = lock(&self.state);
            match result {
                Ok((connection, tools)) => {
                    tracing::info!(server = %self.config.name, tools = tools.len(), "MCP server ready");
                    state.status = Status::Ready;
                    state.connection = Some(connection);
                    state.tools = tools;
                    state.failures = 0;
                    state.retry_at = None;
                }
                Err(message) => {
                    tracing::warn!("{message}");
                    state.failures += 1;
                    let backoff = Duration::from_secs(1 << state.failures.min(5)).min(MAX_BACKOFF);
                    state.retry_at = Some(Instant::now() + backoff);
                    // A failed restart is told by the call that tried it.
                    if !*self.started.borrow() {
                        state.unreported = Some(message.clone());
                    }
                    state.status = Status::Failed(message);
                    // Tools listed before a crash stay offered: calling one restarts the server.
                    state.connection = None;
                }
            }
        }
        self.started.send_replace(true);
    }

    /// Lists the tools again if the server said they changed.
    pub(crate) async fn refresh_if_changed(self: &Arc<Self>) {
        if !self.tools_changed.swap(false, Ordering::AcqRel) {
            return;
        }
        let Some(connection) = lock(&self.state).connection.clone() else {
            return;
        };
        match self.list(&connection).await {
            Ok(tools) => lock(&self.state).tools = tools,
            Err(message) => tracing::warn!("{message}"),
        }
    }

    /// The server's tools (after `includeTools`/`excludeTools`) as corvid tools.
    async fn list(self: &Arc<Self>, connection: &Connection) -> Result<Vec<Arc<dyn Tool>>, String> {
        let listed = tokio::time::timeout(self.config.timeout, connection.list_all_tools())
            .await
            .map_err(|_| self.error("did not list its tools within its timeout"))?
            .map_err(|e| self.error(&format!("could not list its tools: {e}")))?;
        let wanted: Vec<_> = listed
            .iter()
            .filter(|t| {
                let name = t.name.as_ref();
                self.config
                    .include_tools
                    .as_ref()
                    .is_none_or(|inc| inc.iter().any(|i| i == name))
                    && !self.config.exclude_tools.iter().any(|e| e == name)
            })
            .collect();
        let mut wanted = wanted;
        if wanted.len() > self.max_tools {
            let left_out: Vec<String> = wanted
                .split_off(self.max_tools)
                .iter()
                .map(|t| t.name.to_string())
                .collect();
            let notice = left_out_notice(
                &format!(
                    "MCP server `{}` lists {} tools; corvid offers its first {} \
                     (`mcp.maxToolsPerServer`; its `includeTools` picks which)",
                    self.config.name,
                    self.max_tools + left_out.len(),
                    self.max_tools
                ),
                &left_out,
            );
            tracing::warn!(left_out = %left_out.join(", "), "{notice}");
            lock(&self.state).cut = Some(notice);
        }
        let names = tool_names(&self.id, wanted.iter().map(|t| t.name.as_ref()));
        Ok(wanted
            .into_iter()
            .zip(names)
            .map(|(tool, name)| Arc::new(McpTool::new(name, tool, self)) as Arc<dyn Tool>)
            .collect())
    }

    /// Calls `tool`; a stopped server is restarted first (no sooner than its backoff allows).
    pub(crate) async fn call(
        self: &Arc<Self>,
        tool: &str,
        args: Value,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let connection = self.connection().await?;
        let Value::Object(arguments) = args else {
            return Err(ToolError::new(
                self.error("the arguments must be a JSON object"),
            ));
        };
        let request = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let call = tokio::time::timeout(self.config.timeout, connection.call_tool(request));
        let answer = tokio::select! {
            answer = call => answer,
            _ = cancel.cancelled() => return Err(ToolError::new("cancelled by the user")),
        };
        match answer {
            Ok(Ok(result)) => crate::content::to_output(&self.config.name, tool, &result),
            Ok(Err(e)) => Err(ToolError::new(self.call_failed(tool, &connection, e))),
            Err(_) => Err(ToolError::new(self.error(&format!(
                "tool `{tool}` did not answer within {} ms (the server's `timeout`)",
                self.config.timeout.as_millis()
            )))),
        }
    }

    /// The live connection, restarting a stopped server when its backoff has passed.
    async fn connection(self: &Arc<Self>) -> Result<Arc<Connection>, ToolError> {
        if let Some(connection) = self.live_connection() {
            return Ok(connection);
        }
        let _restart = self.restarting.lock().await;
        let (connection, retry_at, status) = {
            let state = lock(&self.state);
            (
                state.connection.clone(),
                state.retry_at,
                state.status.clone(),
            )
        };
        if let Some(connection) = connection.filter(|c| !c.is_closed()) {
            return Ok(connection);
        }
        match status {
            Status::Disabled => return Err(ToolError::new(self.error("is disabled"))),
            Status::Starting => return Err(ToolError::new(self.error("is still starting"))),
            Status::Ready | Status::Failed(_) => {}
        }
        if let Some(at) = retry_at.filter(|at| *at > Instant::now()) {
            let wait = at.saturating_duration_since(Instant::now()).as_secs() + 1;
            return Err(ToolError::new(self.error(&format!(
                "is not running; corvid restarts it in about {wait} s"
            ))));
        }
        self.start().await;
        let state = lock(&self.state);
        match (&state.connection, &state.status) {
            (Some(connection), _) => Ok(connection.clone()),
            (None, Status::Failed(message)) => Err(ToolError::new(message.clone())),
            (None, _) => Err(ToolError::new(self.error("is not running"))),
        }
    }

    fn live_connection(&self) -> Option<Arc<Connection>> {
        let state = lock(&self.state);
        state.connection.clone().filter(|c| !c.is_closed())
    }

    /// The error of a failed call; a closed connection means the server stopped, so it is
    /// marked for a restart on next use.
    fn call_failed(&self, tool: &str, connection: &Arc<Connection>, e: ServiceError) -> String {
        let message = match &e {
            ServiceError::McpError(data) => {
                return self.error(&format!("tool `{tool}` failed: {}", data.message));
            }
            _ => self.error(&format!(
                "stopped during the call to `{tool}` ({e}); it is restarted on next use"
            )),
        };
        let mut state = lock(&self.state);
        if state
            .connection
            .as_ref()
            .is_some_and(|c| Arc::ptr_eq(c, connection))
        {
            state.connection = None;
            state.status = Status::Failed(message.clone());
        }
        message
    }

    /// A message naming this server.
    fn error(&self, what: &str) -> String {
        format!("MCP server `{}` {what}", self.config.name)
    }
}
