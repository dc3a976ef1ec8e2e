//! Subagents: the `task` tool runs a focused child agent on the session's machinery (same
//! provider and settings, a fresh history, the tools its type allows) and answers with the
//! child's final message. The child's events reach front ends tagged with the `task` call's id
//! ([`corvid_protocol::CoreEvent::Subagent`]); its usage counts under the `subagent` prompt id.

mod run;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use corvid_protocol::{ToolDisplay, ToolKind, ToolOutput};
use corvid_tools::{ApprovalNeed, Tool, ToolContext, ToolError, ToolRegistry};
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::session::{Emitter, Shared, Static, lock};
use crate::agents::{AgentType, DEFAULT_TYPE, child_system_prompt};
use crate::policy::{MaxTurns, SubagentCaps};

/// The name the model calls.
pub const TASK_TOOL: &str = "task";

/// When a child stops unfinished, and how many run.
#[derive(Clone, Copy)]
pub(super) struct Limits {
    pub turns: MaxTurns,
    pub time: Duration,
    pub caps: SubagentCaps,
}

/// The session's `tools` plus the `task` tool, whose children get `stat`'s settings (without
/// tool-use summaries: their batches are summed up by the parent) and stop at `limits`.
pub(super) fn with_task_tool(
    stat: &Static,
    shared: &Arc<Shared>,
    events: &Emitter,
    limits: Limits,
    types: Vec<AgentType>,
) -> ToolRegistry {
    let mut base = stat.clone();
    base.summaries = None;
    base.policy.max_turns = limits.turns;
    let tool = TaskTool {
        description: tool_description(&types),
        env: Arc::new(ChildEnv {
            base,
            shared: shared.clone(),
            events: events.clone(),
            time_limit: limits.time,
            types,
            caps: limits.caps,
            slots: Arc::new(tokio::sync::Semaphore::new(limits.caps.concurrent.max(1))),
            this_turn: Mutex::new((0, 0)),
        }),
    };
    stat.tools.clone().with_tool(Arc::new(tool))
}

/// What every child of the session starts from.
struct ChildEnv {
    /// The session's settings, with the session's tools (no `task`).
    base: Static,
    /// The parent's state (approval mode, approvals, current model).
    shared: Arc<Shared>,
    /// The session's event stream.
    events: Emitter,
    /// How long a child may work.
    time_limit: Duration,
    types: Vec<AgentType>,
    caps: SubagentCaps,
    /// One permit per child running at once.
    slots: Arc<tokio::sync::Semaphore>,
    /// The parent's batch being counted, and how many children it started.
    this_turn: Mutex<(u64, u32)>,
}

impl ChildEnv {
    /// Counts a child of the parent's current batch, or refuses it past the per-turn cap.
    fn count_child(&self) -> Result<(), ToolError> {
        let batch = self.shared.batches_started.load(Ordering::Acquire);
        let mut this_turn = lock(&self.this_turn);
        if this_turn.0 != batch {
            *this_turn = (batch, 0);
        }
        if this_turn.1 >= self.caps.per_turn {
            return Err(ToolError::new(format!(
                "refused: one model turn may start at most {} subagents \
                 (agent.maxSubagentsPerTurn); do this one yourself or ask for it in a later turn",
                self.caps.per_turn
            )));
        }
        this_turn.1 += 1;
        Ok(())
    }

    fn agent_type(&self, name: &str) -> Result<&AgentType, ToolError> {
        self.types.iter().find(|t| t.name == name).ok_or_else(|| {
            let known: Vec<&str> = self.types.iter().map(|t| t.name.as_str()).collect();
            ToolError::new(format!(
                "unknown subagent_type `{name}`; the types are: {}",
                known.join(", ")
            ))
        })
    }

    /// The settings of a child of type `agent`.
    fn child_static(&self, agent: &AgentType) -> Static {
        let choice = agent.tools.clone();
        Static {
            tools: self.base.tools.filtered(move |t| choice.allows(t)),
            system_prompt: child_system_prompt(agent, &self.base.cwd),
            ..self.base.clone()
        }
    }
}

/// The `task` tool.
struct TaskTool {
    description: String,
    env: Arc<ChildEnv>,
}

/// The arguments of a `task` call.
#[derive(serde::Deserialize)]
struct TaskArgs {
    description: String,
    prompt: String,
    #[serde(default)]
    subagent_type: Option<String>,
}

fn parse(args: &Value) -> Result<TaskArgs, ToolError> {
    let parsed: TaskArgs = serde_json::from_value(args.clone()).map_err(|e| {
        ToolError::new(format!(
            "invalid `task` arguments ({e}); pass description, prompt and optionally \
             subagent_type"
        ))
    })?;
    if parsed.prompt.trim().is_empty() {
        return Err(ToolError::new(
            "the `task` prompt is empty; say what the subagent should do",
        ));
    }
    Ok(parsed)
}

fn tool_description(types: &[AgentType]) -> String {
    let mut text = "Hands a self-contained job to a subagent with a fresh context and returns \
                    its final report. Use it for broad searches or work whose details the \
                    conversation does not need. The subagent sees only your prompt: include \
                    every detail it needs and say what to report. Several read-only tasks in \
                    one turn run in parallel. Types (subagent_type):"
        .to_owned();
    for t in types {
        text.push_str(&format!("\n- {}: {}", t.name, t.description));
    }
    text
}

impl Tool for TaskTool {
    fn name(&self) -> &str {
        TASK_TOOL
    }

    fn display_name(&self) -> &str {
        "Task"
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        let names: Vec<&str> = self.env.types.iter().map(|t| t.name.as_str()).collect();
        json!({
            "type": "object",
            "properties": {
                "description": {
                    "type": "string",
                    "description": "What the task does, in 3-7 words (shown to the user)"
                },
                "prompt": {
                    "type": "string",
                    "description": "The complete job for the subagent"
                },
                "subagent_type": {
                    "type": "string",
                    "enum": names,
                    "description": format!("The kind of subagent (default {DEFAULT_TYPE})")
                }
            },
            "required": ["description", "prompt"]
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Think
    }

    /// Conservative without arguments: `general` children edit and run commands.
    fn mutates(&self) -> bool {
        true
    }

    /// A task mutates when its type offers a tool that does.
    fn mutates_call(&self, args: &Value) -> bool {
        let name = args
            .get("subagent_type")
            .and_then(Value::as_str)
            .unwrap_or(DEFAULT_TYPE);
        match self.env.agent_type(name) {
            Ok(agent) => self
                .env
                .child_static(agent)
                .tools
                .iter()
                .any(|t| t.mutates()),
            // Refused at once without touching anything.
            Err(_) => false,
        }
    }

    /// The child's own calls are refused in plan mode when they would change something.
    fn allowed_in_plan_mode(&self) -> bool {
        true
    }

    fn display(&self, args: &Value, _ctx: &ToolContext) -> ToolDisplay {
        let title = args
            .get("description")
            .and_then(Value::as_str)
            .filter(|d| !d.trim().is_empty())
            .unwrap_or("Task");
        ToolDisplay {
            title: title.to_owned(),
            kind: ToolKind::Other,
            locations: Vec::new(),
        }
    }

    /// Starting a child needs no approval; its own calls are asked about as usual.
    fn approval(&self, _args: &Value, _ctx: &ToolContext) -> BoxFuture<'static, ApprovalNeed> {
        Box::pin(async { ApprovalNeed::None })
    }

    fn execute(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let env = self.env.clone();
        Box::pin(async move {
            let args = parse(&args)?;
            let name = args.subagent_type.as_deref().unwrap_or(DEFAULT_TYPE);
            let agent = env.agent_type(name)?.clone();
            env.count_child()?;
            // At most `caps.concurrent` children at once; the others wait for a slot.
            // Biased: a cancel that came with a free slot starts nothing (and replays alike).
            let _slot = tokio::select! {
                biased;
                () = ctx.cancel.cancelled() => {
                    return Err(ToolError::new("cancelled before the subagent started"));
                }
                slot = env.slots.clone().acquire_owned() => slot.map_err(|_| {
                    ToolError::new("the session is shutting down; no subagent was started")
                })?,
            };
            run::run_child(&env, &agent, &args.description, args.prompt, ctx).await
        })
    }
}
