//! The agent: a queue pair (operations in, core events out) around the task/turn loop.
//!
//! One actor per session owns the history and runs at most one task at a time; the lifecycle
//! rules of SPEC §5 (preparing, discarding, suppression, call ids) are decided here and
//! nowhere else, and reach front ends as explicit [`CoreEvent`]s.
//!
//! What a front end can rely on, per call id (checked by `core/tests/common/invariants.rs` on
//! every fault-injection case):
//! - `ToolPreparing` at most once per attempt, then exactly one of: `PreparationDiscarded`
//!   (the call never runs: remove the card) or the call's later events below.
//! - A call that runs: [`PermissionRequested` → `PermissionResolved`] → `ToolStarted` (complete
//!   arguments, `was_prepared` tells whether a preparing card exists) → `ToolFinished`.
//! - Rejected in a prompt (or the prompt was cancelled): `PermissionRequested` →
//!   `PermissionResolved` → `ToolFinished` (failed), without `ToolStarted`.
//! - Refused without a prompt (unknown tool, arguments not an object, a tool rejected "always"
//!   earlier): `ToolStarted` → `ToolFinished` (failed).
//! - Tools whose `shows_card()` is false (`todo_write`) get none of these; a successful one
//!   yields `Plan`.
//! - Nothing is pending at `TaskFinished`; summaries counted in its `pending_summaries` settle
//!   later as one `ToolUseSummary` or `SummaryDropped` each.

mod approval;
mod attempt;
mod bulk;
mod command;
mod compact;
mod exec;
mod ids;
mod live_feed;
mod plan_mode;
mod prompt;
mod questions;
mod rewind;
mod schemas;
mod session;
mod steer;
mod subagent;
mod summaries;
mod task;
mod user_shell;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use corvid_protocol::{ApprovalMode, CoreEvent, Message, Op};
use tokio::sync::mpsc;

pub use prompt::default_system_prompt;
pub use subagent::TASK_TOOL;

/// Everything a session needs: the model, the tools, the settings and (when resuming) the
/// history so far.
pub struct AgentConfig {
    /// The session's id, echoed by [`AgentHandle::session_id`] and used in recordings.
    pub session_id: String,
    /// The provider serving the main model (and the fallback model).
    pub provider: Arc<dyn corvid_providers::Provider>,
    /// The main model's name.
    pub model: String,
    /// Used once per task when the main model keeps failing (SPEC §3.4).
    pub fallback_model: Option<String>,
    /// Output token limit sent with every main-model request.
    pub max_output_tokens: Option<u32>,
    /// The system prompt of every main-model request.
    pub system_prompt: String,
    /// The working directory every tool path resolves in.
    pub cwd: PathBuf,
    /// The tools offered to the model.
    pub tools: corvid_tools::ToolRegistry,
    /// Where file tools read and write.
    pub fs: Arc<dyn corvid_tools::FileSystem>,
    /// The approval mode at start (changed later with [`Op::SetApprovalMode`]).
    pub approval_mode: ApprovalMode,
    /// How failing model requests are retried.
    pub retry: crate::retry::RetryPolicy,
    /// How long a shell command may run.
    pub shell_timeout: Duration,
    /// Tool-use summaries with the fast model; `None` turns them off.
    pub summaries: Option<crate::summary::SummaryConfig>,
    /// History restored when resuming (empty for a new session).
    pub history: Vec<Message>,
    /// Permission rules, protected paths, limits and shell confinement.
    pub policy: crate::policy::SessionPolicy,
    /// The instructions files whose text `system_prompt` holds, and the warnings about them
    /// (emitted as the session's first events).
    pub instructions: crate::context::instructions::ProjectInstructions,
}

/// Starts the session actor on the current tokio runtime and returns its queue pair.
pub fn spawn_agent(config: AgentConfig) -> AgentHandle {
    start(config, None)
}

/// Receives every message the agent appends to the session's history, in order (user prompts,
/// complete assistant content, tool results), so sessions can be recorded (SPEC §9).
///
/// Both methods may return a notice for the user (recording stopped on a full disk), which the
/// agent emits as a [`CoreEvent::Warning`] so every front end shows it.
pub trait HistoryObserver: Send + Sync {
    /// Called once per appended message, before the next model request uses it.
    fn message_appended(&self, message: &Message) -> Option<String>;

    /// Called for every core event before front ends receive it (summaries, usage, model and
    /// mode changes, started calls are recorded from here).
    fn event_emitted(&self, _event: &CoreEvent) -> Option<String> {
        None
    }

    /// Called once per message a subagent appends to its own history (run by the `task`
    /// call `parent_call_id`), so its transcript is kept beside the session's.
    fn subagent_message_appended(
        &self,
        _parent_call_id: &str,
        _message: &Message,
    ) -> Option<String> {
        None
    }
}

/// [`spawn_agent`] with an observer of the history (the session recorder).
pub fn spawn_agent_observed(
    config: AgentConfig,
    observer: Arc<dyn HistoryObserver>,
) -> AgentHandle {
    start(config, Some(observer))
}

fn start(mut config: AgentConfig, observer: Option<Arc<dyn HistoryObserver>>) -> AgentHandle {
    let (op_tx, op_rx) = mpsc::unbounded_channel();
    let (ev_tx, ev_rx) = mpsc::unbounded_channel();
    let session_id = config.session_id.clone();
    let instructions = std::mem::take(&mut config.instructions);
    let agent_files = match &config.policy.subagents {
        crate::policy::Subagents::On { types, .. } => types.warnings.as_slice(),
        crate::policy::Subagents::Off => &[],
    };
    for message in instructions.warnings.iter().chain(agent_files) {
        let _ = ev_tx.send(CoreEvent::Warning {
            message: message.clone(),
        });
    }
    let tools = config.tools.clone();
    let commands = config.policy.commands.clone();
    let checkpoints = config.policy.checkpoints.clone();
    let background = config.policy.shell.background.clone();
    let hook = Arc::new(OnceLock::new());
    crate::telemetry::session_started();
    tokio::spawn(session::run_session(
        config,
        observer,
        op_rx,
        ev_tx,
        hook.clone(),
    ));
    AgentHandle {
        session_id,
        instructions: instructions.files,
        tools,
        commands,
        checkpoints,
        background,
        ops: OpSender { tx: op_tx },
        events: EventReceiver { rx: ev_rx, hook },
    }
}

/// The agent has shut down: its operation queue or event stream is closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the agent has shut down")]
pub struct AgentClosed;

/// A front end's connection to one session: submit operations, read core events.
pub struct AgentHandle {
    session_id: String,
    instructions: Vec<crate::context::instructions::InstructionsFile>,
    tools: corvid_tools::ToolRegistry,
    commands: Option<Arc<crate::commands::Library>>,
    checkpoints: Option<Arc<crate::checkpoints::SessionCheckpoints>>,
    background: Option<Arc<corvid_tools::shell::BackgroundProcesses>>,
    ops: OpSender,
    events: EventReceiver,
}

impl AgentHandle {
    /// The id of the session this handle drives.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The session's tools, for what the front end shows of them (`/mcp`).
    pub fn tools(&self) -> &corvid_tools::ToolRegistry {
        &self.tools
    }

    /// The session's custom commands and skills (for `/help` and `/skills`).
    pub fn commands(&self) -> Option<&Arc<crate::commands::Library>> {
        self.commands.as_ref()
    }

    /// The instructions files loaded into the system prompt at start (for `/memory`).
    pub fn instructions(&self) -> &[crate::context::instructions::InstructionsFile] {
        &self.instructions
    }

    /// The session's checkpoints (`None` when off), for `/undo` and `/rewind`: list the
    /// turns and preview a rewind here, then carry it out with [`Op::Rewind`].
    pub fn checkpoints(&self) -> Option<Arc<crate::checkpoints::SessionCheckpoints>> {
        self.checkpoints.clone()
    }

    /// The session's background processes (`None` when it runs none), for `/tasks` and the
    /// status line's count.
    pub fn background(&self) -> Option<Arc<corvid_tools::shell::BackgroundProcesses>> {
        self.background.clone()
    }

    /// Queues an operation for the agent.
    pub fn submit(&self, op: Op) -> Result<(), AgentClosed> {
        self.ops.submit(op)
    }

    /// Waits for the next core event; `AgentClosed` once the agent ended and all events were read.
    pub async fn next_event(&mut self) -> Result<CoreEvent, AgentClosed> {
        self.events.next_event().await
    }

    /// Another sender for this session's operations (e.g. for a signal handler that cancels).
    pub fn sender(&self) -> OpSender {
        self.ops.clone()
    }

    /// Separates the two halves so operations can be sent while events are being read.
    pub fn split(self) -> (OpSender, EventReceiver) {
        (self.ops, self.events)
    }
}

/// The operation half of the queue pair. The agent ends once every `OpSender` is dropped
/// (a running task is still allowed to finish; approvals nobody can answer resolve as cancelled).
#[derive(Clone)]
pub struct OpSender {
    tx: mpsc::UnboundedSender<Op>,
}

impl OpSender {
    /// Queues an operation for the agent.
    pub fn submit(&self, op: Op) -> Result<(), AgentClosed> {
        self.tx.send(op).map_err(|_| AgentClosed)
    }
}

/// The event half of the queue pair: the ordered core events of the session.
pub struct EventReceiver {
    rx: mpsc::UnboundedReceiver<CoreEvent>,
    hook: Arc<OnceLock<EventHook>>,
}

/// Called by whichever task emitted an event, right after it was queued, for every event but
/// text and thought deltas. A front end whose own task would otherwise be woken to read the
/// event can take it at once: with 100 sessions busy on two cores, a woken task waited in the
/// runtime's queue for 6 ms at the median (`cargo bench -p corvid-cli --bench acp_sessions --
/// --keep-alive`, issue 16). Deltas are left to the reader's task, which takes a burst of them
/// in one go. The hook must not block, and may run on any thread the agent emits from.
pub type EventHook = Arc<dyn Fn() + Send + Sync>;

impl EventReceiver {
    /// Waits for the next core event; `AgentClosed` once the agent ended and all events were read.
    pub async fn next_event(&mut self) -> Result<CoreEvent, AgentClosed> {
        self.rx.recv().await.ok_or(AgentClosed)
    }

    /// The next core event if one is waiting; `None` if none is, `AgentClosed` once the agent
    /// ended and all events were read.
    pub fn try_next_event(&mut self) -> Option<Result<CoreEvent, AgentClosed>> {
        match self.rx.try_recv() {
            Ok(event) => Some(Ok(event)),
            Err(mpsc::error::TryRecvError::Empty) => None,
            Err(mpsc::error::TryRecvError::Disconnected) => Some(Err(AgentClosed)),
        }
    }

    /// [`Self::next_event`] as a poll, for a reader that keeps the receiver behind a lock it
    /// must not hold while waiting.
    pub fn poll_next_event(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<CoreEvent, AgentClosed>> {
        self.rx.poll_recv(cx).map(|event| event.ok_or(AgentClosed))
    }

    /// Sets the session's [`EventHook`]; only the first one set is kept (false for a later one).
    pub fn set_hook(&self, hook: EventHook) -> bool {
        self.hook.set(hook).is_ok()
    }
}
