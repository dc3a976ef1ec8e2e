//! Core events: the ordered lifecycle stream every front end consumes (SPEC §4).
//! The lifecycle rules are decided once, in the core; front ends only translate these.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    ApprovalDecision, ApprovalMode, ApprovalPreview, ErrorInfo, Provenance, Todo, ToolDisplay,
    ToolKind, ToolOutput, Usage,
};

/// One event of the agent's output stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CoreEvent {
    /// A task began for a user prompt.
    TaskStarted { task_id: String, prompt: String },
    /// A model turn began (one request, possibly several attempts).
    TurnStarted { turn: u32, model: String },
    /// Visible assistant text.
    TextDelta { text: String },
    /// Assistant reasoning.
    ThoughtDelta { text: String },
    /// The model revealed a call's id and name; arguments still streaming. Never for suppressed tools.
    ToolPreparing {
        call_id: String,
        tool_name: String,
        display_name: String,
        kind: ToolKind,
        provenance: Provenance,
    },
    /// A call starts executing with its complete arguments (same id as its preparing card).
    ToolStarted {
        call_id: String,
        tool_name: String,
        args: Value,
        display: ToolDisplay,
        provenance: Provenance,
        /// Whether a preparing card was shown for this call (ACP sends an update instead of a new card).
        was_prepared: bool,
    },
    /// Output of a running call as it appears (a command's stdout and stderr), after its
    /// `ToolStarted` and before its `ToolFinished`, at most a few per second. A live preview
    /// only: `ToolFinished` carries the result, and deltas are not recorded. When output comes
    /// faster than it is sent, the middle of a burst may be left out.
    ToolOutputDelta { call_id: String, text: String },
    /// The user must approve this call before it runs.
    PermissionRequested {
        call_id: String,
        tool_name: String,
        /// The call's complete arguments (ACP shows them as the card's `rawInput`, also when
        /// the user rejects the call and it never starts).
        #[serde(default)]
        args: Value,
        display: ToolDisplay,
        preview: ApprovalPreview,
        /// Why this call is asked about when its mode alone would not ask (a protected path,
        /// an unavailable sandbox); shown on the request.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// What "allow always" would cover (`cargo test`, `src/main.rs`), for the option's
        /// label; `None` when "always" would cover the whole tool.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        always_scope: Option<String>,
        /// The MCP server of the asking tool: front ends then also offer "always allow every
        /// tool of this server".
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server: Option<String>,
    },
    /// An `ask_user` call waits for the user's answers (`Op::AnswerQuestion`); its card
    /// (`ToolStarted`) is already out, and its `ToolFinished` carries the answers. The text is
    /// the model's, cleaned of control characters: front ends show it as the model's words.
    QuestionAsked {
        call_id: String,
        questions: Vec<crate::Question>,
    },
    /// The approval was answered.
    PermissionResolved {
        call_id: String,
        decision: ApprovalDecision,
    },
    /// A call finished.
    ToolFinished {
        call_id: String,
        tool_name: String,
        status: ToolStatus,
        output: ToolOutput,
        provenance: Provenance,
    },
    /// A prepared call of an abandoned attempt will never run: remove its card.
    PreparationDiscarded {
        call_id: String,
        tool_name: String,
        reason: DiscardReason,
        provenance: Provenance,
    },
    /// The todo plan changed (`todo_write`), shown as a plan, never as a card.
    Plan { todos: Vec<Todo> },
    /// An attempt failed and will be retried after `delay_ms`.
    AttemptRetried {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        error: ErrorInfo,
    },
    /// The main model kept failing; later attempts use `to`.
    ModelFellBack {
        from: String,
        to: String,
        error: ErrorInfo,
    },
    /// The main model was switched on request (`/model`, ACP); later turns use `to`.
    /// Recorded, so a resumed session goes on with `to`.
    ModelChanged { from: String, to: String },
    /// The reasoning effort of later requests was set on request (`/model NAME EFFORT`, ACP's
    /// `reasoning_effort` option). Recorded, so a resumed session asks for it again.
    ReasoningEffortChanged { effort: crate::ReasoningEffort },
    /// The approval mode was changed on request; later calls are decided in `mode`.
    /// Recorded, so a resumed session starts in `mode`.
    ApprovalModeChanged { mode: ApprovalMode },
    /// How full the model's context window is: `used` tokens (the last request's prompt and
    /// answer, or the estimate after a compaction) of `window`. Sent after each main-model
    /// response and after a compaction.
    ContextUsage { used: u64, window: u64 },
    /// The older part of the conversation was replaced by `summary` (written by the main
    /// model), keeping the last `kept_messages` messages verbatim; its estimated size went
    /// from `tokens_before` to `tokens_after`. Recorded, so a resumed session goes on from
    /// the compacted history.
    Compacted {
        summary: String,
        kept_messages: u32,
        tokens_before: u64,
        tokens_after: u64,
    },
    /// The conversation history was cleared (`/clear`): later turns start from an empty
    /// history. Recorded, so a resumed session starts from here too.
    HistoryCleared,
    /// An [`crate::Op::Rewind`] finished: `report` says what was restored and kept, or
    /// `error` why nothing was done. A conversation rewind (`report.kept_messages`) is
    /// recorded, so a resumed session starts from the cut history too.
    Rewound {
        turn: u32,
        scope: crate::RewindScope,
        report: crate::RewindReport,
        error: Option<String>,
    },
    /// All calls of a turn's batch finished.
    BatchCompleted { call_ids: Vec<String> },
    /// A fast-model label for a finished batch. May arrive after `TaskFinished`.
    ToolUseSummary {
        summary: String,
        preceding_tool_use_ids: Vec<String>,
    },
    /// A requested summary produced nothing (cancelled, empty, failed, timed out, stale).
    /// Every batch counted in `TaskFinished::pending_summaries` settles as exactly one
    /// `ToolUseSummary` or `SummaryDropped`.
    SummaryDropped {
        preceding_tool_use_ids: Vec<String>,
        reason: String,
    },
    /// Token usage of one model call, counted under `prompt_id`.
    Usage { prompt_id: String, usage: Usage },
    /// A prompt sent into the running task (`Op::Steer`) joined the history at a tool
    /// boundary: the model reads it in its next turn. Recorded as a user message.
    Steered { prompt: String },
    /// A non-fatal notice for the user (e.g. a malformed tool call answered to the model).
    Warning { message: String },
    /// A hook handler blocked, asked, allowed, failed, or wrote something the user must see
    /// (issue 27): every front end shows it, so a guard never acts or fails silently.
    Hook {
        /// Claude Code's event name (`PreToolUse`, `Stop`, ...).
        event: String,
        /// The handler's command.
        handler: String,
        /// `block`, `ask`, `allow`, `failed`, `warning` or `message` (a `systemMessage`).
        decision: String,
        reason: String,
        duration_ms: u64,
    },
    /// An event of the child agent a `task` call runs (its cards, text, approvals), tagged
    /// with that call's id so front ends can show the child's steps under the task's card.
    /// The child's own lifecycle follows the same rules as the parent's; its usage arrives
    /// untagged as `Usage` under the `subagent` prompt id.
    Subagent {
        parent_call_id: String,
        event: Box<CoreEvent>,
    },
    /// The task ended. `error` is set when it ended because of a failure.
    TaskFinished {
        task_id: String,
        stop_reason: StopReason,
        error: Option<ErrorInfo>,
        /// Summaries of this task still being generated; each settles later (see `SummaryDropped`).
        pending_summaries: u32,
    },
}

/// Terminal status of an executed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Completed,
    Failed,
}

/// Why a prepared call was abandoned before it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiscardReason {
    Retry,
    Fallback,
    Cancelled,
    StreamError,
}

/// Why a task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    Cancelled,
    MaxTokens,
    Refusal,
    /// The task reached its limit of model turns (`agent.maxTurns`) while the model was
    /// still calling tools; the user can send another prompt to go on.
    MaxTurns,
    /// A failure that survived retries and fallback.
    Error,
}

/// A subagent's call as front ends know it: the `task` call's id and the child's call id, so
/// the calls of concurrent children never collide. Its card shows under this id, and its
/// approval is answered with it (`Op::Approval`).
pub fn subagent_call_id(parent_call_id: &str, call_id: &str) -> String {
    format!("{parent_call_id}/{call_id}")
}

/// The one line every front end shows for a [`CoreEvent::Hook`].
pub fn hook_notice(event: &str, handler: &str, decision: &str, reason: &str) -> String {
    let reason = reason.trim();
    if reason.is_empty() {
        format!("hook {event} `{handler}`: {decision}")
    } else {
        format!("hook {event} `{handler}`: {decision}: {reason}")
    }
}

impl crate::HostedBlock {
    /// The card event for a step the model's API ran itself: its call opens a card titled
    /// by it (`Search "query"`, kind `fetch` for the web tools), its result ends that card.
    /// The live loop and a resumed session's replay show it the same way.
    pub fn card_event(&self) -> CoreEvent {
        match &self.step {
            crate::HostedStep::Call { title, args } => CoreEvent::ToolStarted {
                call_id: self.call_id.clone(),
                tool_name: self.tool_name.clone(),
                args: args.clone(),
                display: ToolDisplay {
                    title: title.clone(),
                    kind: match self.tool_name.as_str() {
                        "web_search" | "web_fetch" => ToolKind::Fetch,
                        _ => ToolKind::Other,
                    },
                    locations: Vec::new(),
                },
                provenance: Provenance::Builtin,
                was_prepared: false,
            },
            crate::HostedStep::Result { text, is_error } => CoreEvent::ToolFinished {
                call_id: self.call_id.clone(),
                tool_name: self.tool_name.clone(),
                status: if *is_error {
                    ToolStatus::Failed
                } else {
                    ToolStatus::Completed
                },
                output: ToolOutput::text(text.as_str()),
                provenance: Provenance::Builtin,
            },
        }
    }
}
