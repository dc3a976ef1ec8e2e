//! The tools of a case: the fakes behind racing points, and an MCP tool whose server answers,
//! errs, crashes or hangs, failing with the messages `corvid-mcp`'s adapter gives (a real
//! server process per case would be far too slow for thousands of cases).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use corvid_protocol::{ApprovalPreview, Provenance, ToolDisplay, ToolKind, ToolOutput};
use corvid_tools::{ApprovalNeed, Tool, ToolContext, ToolError};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::MCP_TOOL;
use crate::common::fake_tools::{Behavior, ExecLog, Execution, FakeTool, Needs};
use crate::common::scripted::Yields;

/// A tool whose approval and run start at racing points.
pub struct Yielding {
    tool: Arc<dyn Tool>,
    yields: Yields,
}

impl Tool for Yielding {
    fn name(&self) -> &str {
        self.tool.name()
    }
    fn display_name(&self) -> &str {
        self.tool.display_name()
    }
    fn description(&self) -> &str {
        self.tool.description()
    }
    fn parameters(&self) -> Value {
        self.tool.parameters()
    }
    fn kind(&self) -> ToolKind {
        self.tool.kind()
    }
    fn provenance(&self) -> Provenance {
        self.tool.provenance()
    }
    fn mutates(&self) -> bool {
        self.tool.mutates()
    }
    fn mutates_call(&self, args: &Value) -> bool {
        self.tool.mutates_call(args)
    }
    fn allowed_in_plan_mode(&self) -> bool {
        self.tool.allowed_in_plan_mode()
    }
    fn shows_card(&self) -> bool {
        self.tool.shows_card()
    }
    fn display(&self, args: &Value, ctx: &ToolContext) -> ToolDisplay {
        self.tool.display(args, ctx)
    }
    fn approval(&self, args: &Value, ctx: &ToolContext) -> BoxFuture<'static, ApprovalNeed> {
        let need = self.tool.approval(args, ctx);
        let yields = self.yields.clone();
        Box::pin(async move {
            yields.point().await;
            need.await
        })
    }
    fn execute(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let run = self.tool.execute(args, ctx);
        let yields = self.yields.clone();
        Box::pin(async move {
            yields.point().await;
            run.await
        })
    }
}

/// The tools of a case; `ms` scales their running time; `fates` gives each MCP call's fate.
pub fn tools(
    log: &ExecLog,
    ms: u64,
    yields: &Yields,
    fates: HashMap<String, McpFate>,
) -> Vec<Arc<dyn Tool>> {
    let tools: Vec<Arc<dyn Tool>> = vec![
        FakeTool::reader("read", 7 * ms, log),
        FakeTool::writer("write", 5 * ms, log),
        Arc::new(FakeTool {
            name: "shell",
            display_name: "Shell",
            kind: ToolKind::Execute,
            mutates: true,
            shows_card: true,
            needs: Needs::Execute,
            behavior: Behavior::Sleep(Duration::from_millis(40 * ms)),
            log: log.clone(),
        }),
        FakeTool::todo(log),
        Arc::new(McpLike {
            fates: Arc::new(fates),
            log: log.clone(),
            ms,
            timeout: if ms == 0 {
                MCP_TIMEOUT_REAL
            } else {
                MCP_TIMEOUT
            },
        }),
    ];
    tools
        .into_iter()
        .map(|tool| {
            Arc::new(Yielding {
                tool,
                yields: yields.clone(),
            }) as Arc<dyn Tool>
        })
        .collect()
}

/// What the MCP server does with one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpFate {
    /// Answers after a while.
    Answers,
    /// Answers the call with a JSON-RPC error (the tool failed, the server lives on).
    Errs,
    /// Exits during the call: the connection closes.
    Crashes,
    /// Never answers: only the server's `timeout` or a cancel ends the call.
    Hangs,
    /// Crashed before and is within its restart backoff.
    Down,
}

impl McpFate {
    pub fn of(fate: u8) -> Self {
        match fate % 5 {
            0 => Self::Answers,
            1 => Self::Errs,
            2 => Self::Crashes,
            3 => Self::Hangs,
            _ => Self::Down,
        }
    }
}

/// The MCP server's name and the tool's own name, as the adapter's messages quote them.
pub const MCP_SERVER: &str = "srv";
const MCP_REMOTE: &str = "lookup";
/// The server's `timeout` (the adapter's default, 120 s) on the paused clock; on worker
/// threads, where time is real, a case cannot wait that long.
pub const MCP_TIMEOUT: Duration = Duration::from_secs(120);
const MCP_TIMEOUT_REAL: Duration = Duration::from_millis(50);

/// `corvid_mcp`'s tool of an untrusted server (asks before each call), its failures worded as
/// `corvid_mcp::server::Server::call` words them.
struct McpLike {
    fates: Arc<HashMap<String, McpFate>>,
    log: ExecLog,
    ms: u64,
    timeout: Duration,
}

impl Tool for McpLike {
    fn name(&self) -> &str {
        MCP_TOOL
    }
    fn display_name(&self) -> &str {
        "lookup (srv)"
    }
    fn description(&self) -> &str {
        "The `lookup` tool of the MCP server `srv`."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"tag": {"type": "string"}}})
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }
    fn provenance(&self) -> Provenance {
        Provenance::Mcp {
            server_id: MCP_SERVER.into(),
        }
    }
    fn mutates(&self) -> bool {
        true
    }
    fn display(&self, _args: &Value, _ctx: &ToolContext) -> ToolDisplay {
        ToolDisplay {
            title: self.display_name().into(),
            kind: ToolKind::Other,
            locations: Vec::new(),
        }
    }
    fn approval(&self, args: &Value, _ctx: &ToolContext) -> BoxFuture<'static, ApprovalNeed> {
        let need = ApprovalNeed::Execute(ApprovalPreview::Text {
            text: format!("Call `{MCP_REMOTE}` on the MCP server `{MCP_SERVER}` with {args}"),
        });
        Box::pin(async move { need })
    }
    fn execute(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let fate = self
            .fates
            .get(&ctx.call_id)
            .copied()
            .unwrap_or(McpFate::Answers);
        let log = self.log.clone();
        let ms = self.ms;
        let timeout = self.timeout;
        Box::pin(async move {
            let started = Instant::now();
            let server = |what: String| ToolError::new(format!("MCP server `{MCP_SERVER}` {what}"));
            let result = if fate == McpFate::Down {
                Err(server(
                    "is not running; corvid restarts it in about 2 s".into(),
                ))
            } else {
                let answer = async {
                    match fate {
                        McpFate::Hangs => std::future::pending().await,
                        _ => tokio::time::sleep(Duration::from_millis(11 * ms)).await,
                    }
                };
                let timed = tokio::time::timeout(timeout, answer);
                tokio::select! {
                    answer = timed => match (answer, fate) {
                        (Err(_), _) => Err(server(format!(
                            "tool `{MCP_REMOTE}` did not answer within {} ms (the server's `timeout`)",
                            timeout.as_millis()
                        ))),
                        (Ok(()), McpFate::Errs) => Err(server(format!(
                            "tool `{MCP_REMOTE}` failed: no entry for {args}"
                        ))),
                        (Ok(()), McpFate::Crashes) => Err(server(format!(
                            "stopped during the call to `{MCP_REMOTE}` (Transport closed); it is \
                             restarted on next use"
                        ))),
                        (Ok(()), _) => Ok(ToolOutput::new(format!("found {args}"), Value::Null)),
                    },
                    _ = ctx.cancel.cancelled() => Err(ToolError::new("cancelled by the user")),
                }
            };
            log.record(Execution {
                tool: MCP_TOOL.into(),
                args,
                started,
                ended: Instant::now(),
                cancelled: ctx.cancel.is_cancelled(),
            });
            result
        })
    }
}
