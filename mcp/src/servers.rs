//! The MCP servers of one session: all started at once in the background, their tools offered
//! to the core as a [`ToolSource`], all stopped when the session lets go of them.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use corvid_tools::{Tool, ToolSource};
use futures::FutureExt;
use futures::future::{BoxFuture, join_all};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::config::ServerConfig;
use crate::connect::Launch;
use crate::names::server_ids;
use crate::server::{Server, Status};

/// How long the first model request waits for tool lists when `mcp.startupTimeoutMs` is unset.
pub const DEFAULT_STARTUP_WAIT: Duration = Duration::from_secs(3);

/// How many MCP tools go out with a request: every tool's name, description and schema ride
/// in every request, so one server listing thousands would crowd out the conversation (and
/// steer the model with their descriptions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolLimits {
    /// `mcp.maxToolsPerServer`: the most tools of one server (its first ones, as listed).
    pub per_server: usize,
    /// `mcp.maxTools`: the most tools of all servers together (servers in order).
    pub total: usize,
}

impl Default for ToolLimits {
    fn default() -> Self {
        Self {
            per_server: 100,
            total: 300,
        }
    }
}

/// How many left-out tools a notice names; the log names them all.
const NAMED_IN_NOTICE: usize = 20;

/// `what`, then the left-out tools by name (the first few; the rest counted).
pub(crate) fn left_out_notice(what: &str, left_out: &[String]) -> String {
    let named = left_out
        .iter()
        .take(NAMED_IN_NOTICE)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    let more = left_out.len().saturating_sub(NAMED_IN_NOTICE);
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!("{what}; left out: {named}{more}")
}

/// A session's servers. Dropping the last clone stops them all (child processes are killed).
#[derive(Clone)]
pub struct McpServers {
    inner: Arc<Inner>,
}

struct Inner {
    servers: Vec<Arc<Server>>,
    /// Model requests stop waiting for servers still starting at this moment.
    startup_deadline: Instant,
    starts: Vec<JoinHandle<()>>,
    /// `mcp.maxTools`.
    max_tools: usize,
    /// The tools the total cap left out when last told, and a notice not yet shown.
    cut: Mutex<(Vec<String>, Option<String>)>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for start in &self.starts {
            start.abort();
        }
    }
}

/// What `corvid mcp list` shows of a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerReport {
    pub name: String,
    /// `stdio: npx -y pkg` or `http: https://…` (no header or environment values).
    pub target: String,
    pub status: Status,
    pub tools: Vec<String>,
}

impl McpServers {
    /// Starts every enabled server in the background (on the current tokio runtime) and
    /// returns at once; `startup_wait` bounds how long model requests wait for their tools,
    /// and `limits` how many of them are offered.
    pub fn start(
        configs: Vec<ServerConfig>,
        launch: Launch,
        startup_wait: Duration,
        limits: ToolLimits,
    ) -> Self {
        let ids = server_ids(configs.iter().map(|c| c.name.as_str()));
        let servers: Vec<Arc<Server>> = configs
            .into_iter()
            .zip(ids)
            .map(|(config, id)| Server::new(config, id, launch.clone(), limits.per_server))
            .collect();
        let starts = servers
            .iter()
            .filter(|s| s.config.enabled)
            .map(|s| {
                let server = s.clone();
                tokio::spawn(async move { server.start().await })
            })
            .collect();
        Self {
            inner: Arc::new(Inner {
                servers,
                startup_deadline: Instant::now() + startup_wait,
                starts,
                max_tools: limits.total,
                cut: Mutex::default(),
            }),
        }
    }

    /// Whether any server is configured.
    pub fn is_empty(&self) -> bool {
        self.inner.servers.is_empty()
    }

    /// Waits until every server finished starting (each bounded by its own timeout).
    pub async fn wait_started(&self) {
        join_all(self.inner.servers.iter().map(|s| s.wait_started())).await;
    }

    /// Each server's status and tools, in configuration order.
    pub fn reports(&self) -> Vec<ServerReport> {
        self.inner
            .servers
            .iter()
            .map(|s| ServerReport {
                name: s.config.name.clone(),
                target: target(&s.config),
                status: s.status(),
                tools: s.tools().iter().map(|t| t.name().to_owned()).collect(),
            })
            .collect()
    }
}

fn target(config: &ServerConfig) -> String {
    match &config.transport {
        crate::config::Transport::Stdio { command, args, .. } => {
            format!(
                "stdio: {}",
                std::iter::once(command)
                    .chain(args)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        }
        crate::config::Transport::Http { url, .. } => format!("http: {url}"),
    }
}

impl ToolSource for McpServers {
    /// Every server's tools, in server order, up to `mcp.maxTools`; the ones left out are
    /// told to the user once (again whenever the set left out changes).
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut tools: Vec<Arc<dyn Tool>> =
            self.inner.servers.iter().flat_map(|s| s.tools()).collect();
        let left_out: Vec<String> = if tools.len() > self.inner.max_tools {
            tools
                .split_off(self.inner.max_tools)
                .iter()
                .map(|t| t.name().to_owned())
                .collect()
        } else {
            Vec::new()
        };
        let mut cut = self
            .inner
            .cut
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if cut.0 != left_out {
            if !left_out.is_empty() {
                let notice = left_out_notice(
                    &format!(
                        "the MCP servers list {} tools together; corvid offers the first {} \
                         (`mcp.maxTools`)",
                        self.inner.max_tools + left_out.len(),
                        self.inner.max_tools
                    ),
                    &left_out,
                );
                tracing::warn!(left_out = %left_out.join(", "), "{notice}");
                cut.1 = Some(notice);
            }
            cut.0 = left_out;
        }
        tools
    }

    fn settled(&self) -> BoxFuture<'static, ()> {
        let inner = self.inner.clone();
        async move {
            let all = join_all(inner.servers.iter().map(|s| s.wait_started()));
            if tokio::time::timeout_at(inner.startup_deadline, all)
                .await
                .is_err()
            {
                tracing::info!(
                    "some MCP servers are still starting; their tools join a later turn"
                );
            }
            join_all(inner.servers.iter().map(|s| s.refresh_if_changed())).await;
        }
        .boxed()
    }

    fn take_notices(&self) -> Vec<String> {
        let mut notices: Vec<String> = self
            .inner
            .servers
            .iter()
            .flat_map(|s| s.take_notices())
            .collect();
        let cut = self
            .inner
            .cut
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .1
            .take();
        notices.extend(cut);
        notices
    }

    fn status_report(&self) -> String {
        describe(&self.reports())
    }
}

/// Servers as `corvid mcp list` and `/mcp` show them: per server its name, status, tool
/// count and target, then its error and its tools' names.
pub fn describe(reports: &[ServerReport]) -> String {
    let mut out = String::new();
    for report in reports {
        let status = match &report.status {
            Status::Disabled => "disabled",
            Status::Starting => "starting",
            Status::Ready => "ready",
            Status::Failed(_) => "failed",
        };
        let count = report.tools.len();
        let tools = if count == 1 { "tool" } else { "tools" };
        out.push_str(&format!(
            "{}  {status}  {count} {tools}  ({})\n",
            report.name, report.target
        ));
        if let Status::Failed(message) = &report.status {
            out.push_str(&format!("  error: {message}\n"));
        }
        if !report.tools.is_empty() {
            out.push_str(&format!("  {}\n", report.tools.join(", ")));
        }
    }
    out
}
