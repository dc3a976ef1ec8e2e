//! Helpers for the approval-policy tests: a temp workspace with the real file tools, a fake
//! command tool (so the tests do not depend on the shell's sandbox), tools whose planning
//! refuses or escalates, and the permission requests a run made.

use std::path::Path;
use std::sync::{Arc, Mutex};

use corvid_core::agent::{AgentConfig, AgentHandle, spawn_agent};
use corvid_protocol::{
    ApprovalDecision, ApprovalMode, ApprovalPreview, CoreEvent, FinishReason, ToolDisplay,
    ToolKind, ToolOutput, ToolStatus,
};
use corvid_tools::{ApprovalNeed, Tool, ToolContext, ToolError};
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::scripted::{ScriptedProvider, Step, answer, call, finish};
use super::{collect_task_deciding, prompt, test_config};

/// One permission request as the user saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    pub call_id: String,
    pub reason: Option<String>,
    pub always_scope: Option<String>,
}

/// Every permission request of `events`, in order.
pub fn asked(events: &[CoreEvent]) -> Vec<Asked> {
    events
        .iter()
        .filter_map(|ev| match ev {
            CoreEvent::PermissionRequested {
                call_id,
                reason,
                always_scope,
                ..
            } => Some(Asked {
                call_id: call_id.clone(),
                reason: reason.clone(),
                always_scope: always_scope.clone(),
            }),
            _ => None,
        })
        .collect()
}

/// A request without a reason.
pub fn plain(call_id: &str, scope: &str) -> Asked {
    Asked {
        call_id: call_id.to_owned(),
        reason: None,
        always_scope: Some(scope.to_owned()),
    }
}

/// How each call ended: `(call id, status, output text)`.
pub fn finished(events: &[CoreEvent]) -> Vec<(String, ToolStatus, String)> {
    events
        .iter()
        .filter_map(|ev| match ev {
            CoreEvent::ToolFinished {
                call_id,
                status,
                output,
                ..
            } => Some((call_id.clone(), *status, output.text.clone())),
            _ => None,
        })
        .collect()
}

/// The ids of the calls that completed.
pub fn completed(events: &[CoreEvent]) -> Vec<String> {
    finished(events)
        .into_iter()
        .filter(|(_, status, _)| *status == ToolStatus::Completed)
        .map(|(id, _, _)| id)
        .collect()
}

/// A model turn making one call.
pub fn one_call(id: &str, tool: &str, args: Value) -> Vec<Step> {
    vec![call(id, tool, args), finish(FinishReason::ToolCalls)]
}

/// A `write_file` turn.
pub fn write(id: &str, path: &str, content: &str) -> Vec<Step> {
    one_call(
        id,
        "write_file",
        json!({"file_path": path, "content": content}),
    )
}

/// A command turn for [`FakeShell`].
pub fn shell(id: &str, command: &str) -> Vec<Step> {
    one_call(id, "run_shell_command", json!({"command": command}))
}

/// A provider making these turns, one call each, then answering `done`.
pub fn turns(turns: Vec<Vec<Step>>) -> ScriptedProvider {
    let mut script = turns;
    script.push(answer("done"));
    ScriptedProvider::new(script)
}

/// A session in `workspace` with the built-in tools on the local disk (the shell replaced by
/// [`FakeShell`] recording into `ran`) in `mode`.
pub fn workspace_config(
    provider: &ScriptedProvider,
    workspace: &Path,
    mode: ApprovalMode,
    ran: &Ran,
) -> AgentConfig {
    let mut config = test_config(Arc::new(provider.clone()), Vec::new());
    config.tools = tools_with_fake_shell(ran);
    config.fs = Arc::new(corvid_tools::LocalFs);
    config.cwd = workspace.to_owned();
    config.approval_mode = mode;
    config
}

/// The built-in tools with the shell replaced by [`FakeShell`].
pub fn tools_with_fake_shell(ran: &Ran) -> corvid_tools::ToolRegistry {
    tools_with_shell(ran, false)
}

/// The built-in tools with the shell replaced by a [`FakeShell`] whose commands the sandbox
/// confines (`confined`) or not.
pub fn tools_with_shell(ran: &Ran, confined: bool) -> corvid_tools::ToolRegistry {
    let mut tools: Vec<Arc<dyn Tool>> = corvid_tools::builtin_tools()
        .iter()
        .filter(|t| t.name() != "run_shell_command")
        .collect();
    tools.push(Arc::new(FakeShell {
        ran: ran.clone(),
        confined,
    }));
    corvid_tools::ToolRegistry::new(tools)
}

/// Runs one prompt to the end, answering every request with `decide(call_id)`.
pub async fn run(
    config: AgentConfig,
    decide: impl Fn(&str) -> ApprovalDecision,
) -> (AgentHandle, Vec<CoreEvent>) {
    let mut handle = spawn_agent(config);
    prompt(&handle, "go");
    let events = collect_task_deciding(&mut handle, decide).await;
    (handle, events)
}

/// What fake tools executed (command lines, or tool names).
#[derive(Clone, Default)]
pub struct Ran(Arc<Mutex<Vec<String>>>);

impl Ran {
    pub fn all(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
    pub fn push(&self, what: String) {
        self.0.lock().unwrap().push(what);
    }
}

/// A `run_shell_command` look-alike that previews its command and only records it.
pub struct FakeShell {
    pub ran: Ran,
    /// Plans its commands as sandboxed ([`ApprovalNeed::Sandboxed`]).
    pub confined: bool,
}

impl Tool for FakeShell {
    fn name(&self) -> &'static str {
        "run_shell_command"
    }
    fn display_name(&self) -> &'static str {
        "Shell"
    }
    fn description(&self) -> &'static str {
        "records commands"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"command": {"type": "string"}}})
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }
    fn mutates(&self) -> bool {
        true
    }
    fn display(&self, args: &Value, _ctx: &ToolContext) -> ToolDisplay {
        ToolDisplay {
            title: format!("Run {}", command_of(args)),
            kind: ToolKind::Execute,
            locations: Vec::new(),
        }
    }
    fn approval(&self, args: &Value, _ctx: &ToolContext) -> BoxFuture<'static, ApprovalNeed> {
        let preview = ApprovalPreview::Command {
            command: command_of(args),
        };
        let need = if self.confined {
            ApprovalNeed::Sandboxed(preview)
        } else {
            ApprovalNeed::Execute(preview)
        };
        Box::pin(async move { need })
    }
    fn execute(
        &self,
        args: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let ran = self.ran.clone();
        Box::pin(async move {
            ran.push(command_of(&args));
            Ok(ToolOutput::text("ran"))
        })
    }
}

fn command_of(args: &Value) -> String {
    args["command"].as_str().unwrap_or("").to_owned()
}

/// How a [`FixedNeed`] tool plans its call.
pub enum Planning {
    /// Answers this need at once (`Refuse`: planning failed; `Escalated`).
    Answers(ApprovalNeed),
    /// Panics while planning.
    Panics,
    /// Never finishes planning; notifies when it began.
    NeverEnds(Arc<tokio::sync::Notify>),
}

/// A mutating tool whose planning is fixed; `execute` records that it ran.
pub struct FixedNeed {
    pub name: &'static str,
    pub plan: Planning,
    pub ran: Ran,
}

impl Tool for FixedNeed {
    fn name(&self) -> &'static str {
        self.name
    }
    fn display_name(&self) -> &'static str {
        "Fixed"
    }
    fn description(&self) -> &'static str {
        "a tool with a fixed approval need"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }
    fn mutates(&self) -> bool {
        true
    }
    fn display(&self, _args: &Value, _ctx: &ToolContext) -> ToolDisplay {
        ToolDisplay {
            title: self.name.to_owned(),
            kind: ToolKind::Edit,
            locations: Vec::new(),
        }
    }
    fn approval(&self, _args: &Value, _ctx: &ToolContext) -> BoxFuture<'static, ApprovalNeed> {
        match &self.plan {
            Planning::Answers(need) => {
                let need = need.clone();
                Box::pin(async move { need })
            }
            Planning::Panics => Box::pin(async { panic!("planning blew up") }),
            Planning::NeverEnds(planning) => {
                let planning = planning.clone();
                Box::pin(async move {
                    planning.notify_one();
                    std::future::pending().await
                })
            }
        }
    }
    fn execute(
        &self,
        _args: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let ran = self.ran.clone();
        let name = self.name.to_owned();
        Box::pin(async move {
            ran.push(name);
            Ok(ToolOutput::text("executed"))
        })
    }
}
