//! Fake tools that record when they ran, so tests can check what executed and how calls
//! overlapped (timestamps are `tokio::time::Instant`, deterministic with paused time).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use corvid_protocol::{ApprovalPreview, Location, ToolDisplay, ToolKind, ToolOutput};
use corvid_tools::{ApprovalNeed, FileSystem, Tool, ToolContext, ToolError};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::time::Instant;

/// One execution of a fake tool.
#[derive(Debug, Clone)]
pub struct Execution {
    pub tool: String,
    pub args: Value,
    pub started: Instant,
    pub ended: Instant,
    pub cancelled: bool,
}

/// Shared record of executions, in the order they ended.
#[derive(Clone, Default)]
pub struct ExecLog(Arc<Mutex<Vec<Execution>>>);

impl ExecLog {
    pub fn all(&self) -> Vec<Execution> {
        self.0.lock().unwrap().clone()
    }
    /// Records an execution of a tool that is not a [`FakeTool`].
    pub fn record(&self, execution: Execution) {
        self.0.lock().unwrap().push(execution);
    }
    /// The `tag` argument of every execution, in the order they ended.
    pub fn tags(&self) -> Vec<String> {
        self.all()
            .iter()
            .filter_map(|e| e.args.get("tag").and_then(Value::as_str).map(String::from))
            .collect()
    }
}

/// What a fake tool does when executed.
#[derive(Clone)]
pub enum Behavior {
    /// Sleeps, then returns `ok <tag>`.
    Sleep(Duration),
    /// Runs until cancelled, like a long shell command; then reports it was killed.
    UntilCancelled,
    /// Fails with this message.
    Fail(String),
    /// Returns a todo plan in `raw` (like `todo_write`).
    Plan,
    /// Panics (a buggy tool).
    Panic,
    /// Reports an edit of `<cwd>/<tag>` as a diff (like `edit`).
    Edits,
}

/// Which approval a fake tool asks for.
#[derive(Clone, Copy, PartialEq)]
pub enum Needs {
    Nothing,
    Edit,
    Execute,
}

pub struct FakeTool {
    pub name: &'static str,
    pub display_name: &'static str,
    pub kind: ToolKind,
    pub mutates: bool,
    pub shows_card: bool,
    pub needs: Needs,
    pub behavior: Behavior,
    pub log: ExecLog,
}

impl FakeTool {
    /// A read-only tool that sleeps `ms`.
    pub fn reader(name: &'static str, ms: u64, log: &ExecLog) -> Arc<dyn Tool> {
        Arc::new(Self {
            name,
            display_name: "Reader",
            kind: ToolKind::Read,
            mutates: false,
            shows_card: true,
            needs: Needs::Nothing,
            behavior: Behavior::Sleep(Duration::from_millis(ms)),
            log: log.clone(),
        })
    }
    /// A mutating tool that sleeps `ms` and asks for edit approval.
    pub fn writer(name: &'static str, ms: u64, log: &ExecLog) -> Arc<dyn Tool> {
        Arc::new(Self {
            name,
            display_name: "Writer",
            kind: ToolKind::Edit,
            mutates: true,
            shows_card: true,
            needs: Needs::Edit,
            behavior: Behavior::Sleep(Duration::from_millis(ms)),
            log: log.clone(),
        })
    }
    /// A mutating tool that reports an edit of the file its `tag` names, as a diff.
    pub fn editor(name: &'static str, log: &ExecLog) -> Arc<dyn Tool> {
        Arc::new(Self {
            name,
            display_name: "Editor",
            kind: ToolKind::Edit,
            mutates: true,
            shows_card: true,
            needs: Needs::Edit,
            behavior: Behavior::Edits,
            log: log.clone(),
        })
    }
    /// A shell-like tool: asks for execute approval and runs until cancelled.
    pub fn shell(name: &'static str, log: &ExecLog) -> Arc<dyn Tool> {
        Arc::new(Self {
            name,
            display_name: "Shell",
            kind: ToolKind::Execute,
            mutates: true,
            shows_card: true,
            needs: Needs::Execute,
            behavior: Behavior::UntilCancelled,
            log: log.clone(),
        })
    }
    /// A `todo_write` look-alike: no card, returns a plan.
    pub fn todo(log: &ExecLog) -> Arc<dyn Tool> {
        Arc::new(Self {
            name: "todo_write",
            display_name: "TodoWrite",
            kind: ToolKind::Think,
            mutates: false,
            shows_card: false,
            needs: Needs::Nothing,
            behavior: Behavior::Plan,
            log: log.clone(),
        })
    }
}

impl Tool for FakeTool {
    fn name(&self) -> &'static str {
        self.name
    }
    fn display_name(&self) -> &'static str {
        self.display_name
    }
    fn description(&self) -> &'static str {
        "a fake tool for tests"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"tag": {"type": "string"}}})
    }
    fn kind(&self) -> ToolKind {
        self.kind
    }
    fn mutates(&self) -> bool {
        self.mutates
    }
    fn shows_card(&self) -> bool {
        self.shows_card
    }
    fn display(&self, args: &Value, ctx: &ToolContext) -> ToolDisplay {
        let tag = args.get("tag").and_then(Value::as_str).unwrap_or("?");
        ToolDisplay {
            title: format!("{} {tag}", self.display_name),
            kind: self.kind,
            locations: vec![Location {
                path: ctx.cwd.join(tag),
                line: None,
            }],
        }
    }
    fn approval(&self, args: &Value, _ctx: &ToolContext) -> BoxFuture<'static, ApprovalNeed> {
        let preview = ApprovalPreview::Text {
            text: args.to_string(),
        };
        let need = match self.needs {
            Needs::Nothing => ApprovalNeed::None,
            Needs::Edit => ApprovalNeed::Edit(preview),
            Needs::Execute => ApprovalNeed::Execute(preview),
        };
        Box::pin(async move { need })
    }
    fn execute(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let behavior = self.behavior.clone();
        let log = self.log.clone();
        let tool = self.name.to_owned();
        Box::pin(async move {
            let started = Instant::now();
            let tag = args
                .get("tag")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_owned();
            let mut cancelled = false;
            let result = match behavior {
                Behavior::Sleep(d) => {
                    tokio::select! {
                        _ = tokio::time::sleep(d) => Ok(out(format!("ok {tag}"), Value::Null)),
                        _ = ctx.cancel.cancelled() => { cancelled = true; Err(ToolError::new("killed")) }
                    }
                }
                Behavior::UntilCancelled => {
                    ctx.cancel.cancelled().await;
                    cancelled = true;
                    Err(ToolError::new("command killed by cancellation"))
                }
                Behavior::Fail(message) => Err(ToolError::new(message)),
                Behavior::Panic => panic!("the fake tool panics"),
                Behavior::Edits => Ok(ToolOutput {
                    text: format!("edited {tag}"),
                    diffs: vec![corvid_protocol::FileDiff {
                        path: ctx.cwd.join(&tag),
                        old_text: Some("old".into()),
                        new_text: "new".into(),
                    }],
                    raw: Value::Null,
                    ..Default::default()
                }),
                Behavior::Plan => Ok(out(
                    "plan updated".into(),
                    json!({"todos": [{"id": "1", "content": tag, "status": "in_progress"}]}),
                )),
            };
            log.0.lock().unwrap().push(Execution {
                tool,
                args,
                started,
                ended: Instant::now(),
                cancelled,
            });
            result
        })
    }
}

fn out(text: String, raw: Value) -> ToolOutput {
    ToolOutput::new(text, raw)
}

/// A file system the fake tools never touch.
pub struct NoFs;

impl FileSystem for NoFs {
    fn read_text(&self, _path: std::path::PathBuf) -> BoxFuture<'static, std::io::Result<String>> {
        Box::pin(async { Err(std::io::Error::other("no file system in this test")) })
    }
    fn write_text(
        &self,
        _root: std::path::PathBuf,
        _path: std::path::PathBuf,
        _content: String,
    ) -> BoxFuture<'static, std::io::Result<()>> {
        Box::pin(async { Err(std::io::Error::other("no file system in this test")) })
    }
}
