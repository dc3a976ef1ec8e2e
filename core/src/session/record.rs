//! The records of a session file, one JSON object per line.

use std::path::PathBuf;

use corvid_protocol::{ApprovalMode, Message, ReasoningEffort, Usage};
use serde::{Deserialize, Serialize};

/// Format version written in every header; readers skip unknown record types from newer versions.
pub const RECORD_VERSION: u32 = 1;

/// The first line of every session file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordHeader {
    pub version: u32,
    pub session_id: String,
    pub cwd: PathBuf,
    pub model: String,
    /// Milliseconds since the Unix epoch.
    pub started_at_ms: u64,
    /// Set when the session is a fork of another (`/branch`, `--fork`); absent in older
    /// recordings and in sessions started fresh.
    #[serde(
        default,
        rename = "forkedFrom",
        skip_serializing_if = "Option::is_none"
    )]
    pub forked_from: Option<ForkedFrom>,
}

/// Where a forked session came from: its parent's id and the turn it went back to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkedFrom {
    /// The parent session's id.
    pub session_id: String,
    /// The parent's turn the fork started before (its conversation and files as they were
    /// then); `None` when the fork copied the whole conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
}

/// One line of a session file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
pub enum Record {
    Header(RecordHeader),
    /// A message appended to the model history (user prompt, assistant content, tool results).
    Message {
        message: Message,
    },
    /// A tool-use summary with the ids of the calls it describes.
    ToolUseSummary {
        summary: String,
        preceding_tool_use_ids: Vec<String>,
    },
    /// Usage of one model call.
    Usage {
        prompt_id: String,
        usage: Usage,
    },
    /// The model changed (fallback or `/model`).
    ModelChange {
        from: String,
        to: String,
    },
    /// The reasoning effort was set (`/model NAME EFFORT`, ACP); a resumed session asks for it
    /// again while its model takes it.
    ReasoningEffortChange {
        effort: ReasoningEffort,
    },
    /// The approval mode was changed (TUI, ACP `session/set_mode`); a resumed session starts in it.
    ApprovalModeChange {
        mode: ApprovalMode,
    },
    /// A call started executing. A call started but without a result was interrupted
    /// mid-run (it may have had effects); one never started did nothing.
    CallStarted {
        call_id: String,
    },
    /// The user rejected a call when asked; a replay shows it as rejected, not as the text
    /// the model was told.
    CallRejected {
        call_id: String,
    },
    /// The history before this point was compacted: a resumed session's history is the
    /// summary followed by the last `kept_messages` messages recorded before it.
    Compacted {
        summary: String,
        kept_messages: u32,
        tokens_before: u64,
        tokens_after: u64,
    },
    /// A message of the subagent run by the `task` call `parent_call_id`, in its own history
    /// (never part of the session's; `sessions show` displays it under the call).
    SubagentMessage {
        parent_call_id: String,
        message: Message,
    },
    /// The history was cleared (`/clear`): a resumed session's history and transcript start
    /// after the last one.
    HistoryCleared,
    /// The conversation was rewound to before a user turn (issue 26): the history keeps its
    /// first `kept_messages` messages; the records of the undone turns are dropped on load.
    HistoryRewound {
        kept_messages: u32,
    },
    /// The session's title (written by the fast model after the first answer), for
    /// `/resume` and `corvid sessions list`; the last one counts.
    Title {
        title: String,
    },
}
