//! Operations front ends submit to the agent (one half of the agent's queue pair).

use serde::{Deserialize, Serialize};

use crate::ImageData;

/// Something a front end asks the agent to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Op {
    /// Start a task for this user prompt. Refused while a task runs.
    UserTurn {
        prompt: String,
        /// Images attached to the prompt, sent after its text; a model that does not accept
        /// images fails the task at once.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImageData>,
        /// Context the user attached (the contents of `@path` files), sent to the model after
        /// the prompt's text but not shown as the prompt.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        context: Vec<String>,
    },
    /// Run the user's own shell command (`!command`) through the shell tool, as a task of its
    /// own; its output joins the history as a user message. Refused while a task runs.
    UserShell { command: String },
    /// Send a prompt into the running task: the model reads it after the current batch of
    /// tool calls (or, if the task would end first, in one more turn), and `Steered` says
    /// when. With no task running it starts one, like `UserTurn`; refused with a warning
    /// while a `!command` or `/compress` runs. A prompt the task never took (cancelled,
    /// failed) is named in a warning before `TaskFinished`.
    Steer { prompt: String },
    /// Cancel the running task, if any.
    Cancel,
    /// Answer a pending approval request.
    Approval {
        call_id: String,
        decision: ApprovalDecision,
    },
    /// Answer the questions of a pending `ask_user` call ([`crate::CoreEvent::QuestionAsked`]);
    /// [`crate::QuestionReply::Cancelled`] cancels the task.
    AnswerQuestion {
        call_id: String,
        reply: crate::QuestionReply,
    },
    /// Change the approval mode for later calls.
    SetApprovalMode { mode: ApprovalMode },
    /// Switch the main model for later turns.
    SetModel { model: String },
    /// Set the reasoning effort of later turns (models that take none ignore it, with a
    /// warning).
    SetReasoningEffort { effort: ReasoningEffort },
    /// Compact the conversation now (`/compress`): its older part becomes a summary, as when
    /// the context window fills up. Runs as a task of its own; refused while a task runs.
    Compact,
    /// Forget the conversation so far: the next prompt starts a fresh history in the same
    /// session (`/clear`). Refused with a warning while a task runs.
    ClearHistory,
    /// Undo user turn `turn` (its number in the session's checkpoints) and every turn after
    /// it: restore the workspace's files, cut the history back, or both. Conflicting files
    /// (changed by the user after the agent) are kept unless `overwrite_conflicts`. Refused
    /// with a warning while a task runs; answered by [`crate::CoreEvent::Rewound`].
    Rewind {
        turn: u32,
        scope: crate::RewindScope,
        #[serde(default)]
        overwrite_conflicts: bool,
    },
}

impl Op {
    /// A user turn of text only.
    pub fn user_turn(prompt: impl Into<String>) -> Self {
        Self::UserTurn {
            prompt: prompt.into(),
            images: Vec::new(),
            context: Vec::new(),
        }
    }
}

/// How hard a reasoning model thinks (`model.reasoningEffort`, `/model NAME EFFORT`, ACP's
/// `reasoning_effort` option), in the words the OpenAI APIs use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    Minimal,
    Low,
    Medium,
    High,
    Xhigh,
}

impl ReasoningEffort {
    /// Every value, in settings order (for error messages and pickers).
    pub const ALL: [Self; 5] = [
        Self::Minimal,
        Self::Low,
        Self::Medium,
        Self::High,
        Self::Xhigh,
    ];

    /// The settings and wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Xhigh => "xhigh",
        }
    }

    /// Parses a settings or flag value.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == s)
    }
}

/// How much the agent may do without asking.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalMode {
    /// Ask before edits and shell commands.
    #[default]
    Default,
    /// What undo can take back runs unasked: edits, and shell commands the OS sandbox keeps
    /// inside the workspace without network. Only while undo (checkpoints) is on; escalations
    /// and protected paths are still asked. Without undo it asks like `default`.
    Auto,
    /// Edits are approved; shell commands are still asked.
    AutoEdit,
    /// Never ask.
    Yolo,
    /// Only plan: read-only tools run, anything that would change something is refused
    /// unasked, and the model proposes a plan the user approves to leave this mode.
    Plan,
}

impl ApprovalMode {
    /// The wire and settings name (`default`, `auto`, `auto-edit`, `yolo`, `plan`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::Auto => "auto",
            Self::AutoEdit => "auto-edit",
            Self::Yolo => "yolo",
            Self::Plan => "plan",
        }
    }

    /// Parses a settings or flag value.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "default" => Some(Self::Default),
            "auto" => Some(Self::Auto),
            "auto-edit" | "auto_edit" | "autoEdit" => Some(Self::AutoEdit),
            "yolo" => Some(Self::Yolo),
            "plan" => Some(Self::Plan),
            _ => None,
        }
    }
}

/// The user's answer to an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    AllowOnce,
    /// Allow this tool for the rest of the session.
    AllowAlways,
    /// Allow every tool of the call's MCP server for the rest of the session (offered only
    /// when the request names a server).
    AllowServerAlways,
    RejectOnce,
    /// Reject this tool for the rest of the session.
    RejectAlways,
    /// The request was abandoned (prompt cancelled, client gone).
    Cancelled,
    /// Nobody can be asked (headless mode): the front end's setting refused the call, not
    /// the user.
    Unattended,
}

impl ApprovalDecision {
    /// Whether the call may run.
    pub fn is_allowed(self) -> bool {
        matches!(
            self,
            Self::AllowOnce | Self::AllowAlways | Self::AllowServerAlways
        )
    }
}
