//! The recorder as the agent's history observer: complete content in, JSONL lines out.

use corvid_protocol::{ApprovalDecision, CoreEvent, Message};

use super::record::Record;
use super::recorder::SessionRecorder;
use super::store::SessionError;
use crate::agent::HistoryObserver;

impl HistoryObserver for SessionRecorder {
    fn message_appended(&self, message: &Message) -> Option<String> {
        self.append_or_notice(&Record::Message {
            message: message.clone(),
        })
    }

    fn subagent_message_appended(&self, parent_call_id: &str, message: &Message) -> Option<String> {
        self.append_or_notice(&Record::SubagentMessage {
            parent_call_id: parent_call_id.to_owned(),
            message: message.clone(),
        })
    }

    fn event_emitted(&self, event: &CoreEvent) -> Option<String> {
        let record = match event {
            CoreEvent::ToolUseSummary {
                summary,
                preceding_tool_use_ids,
            } => Record::ToolUseSummary {
                summary: summary.clone(),
                preceding_tool_use_ids: preceding_tool_use_ids.clone(),
            },
            CoreEvent::Usage { prompt_id, usage } => Record::Usage {
                prompt_id: prompt_id.clone(),
                usage: *usage,
            },
            CoreEvent::ModelFellBack { from, to, .. } | CoreEvent::ModelChanged { from, to } => {
                Record::ModelChange {
                    from: from.clone(),
                    to: to.clone(),
                }
            }
            CoreEvent::ApprovalModeChanged { mode } => Record::ApprovalModeChange { mode: *mode },
            CoreEvent::ReasoningEffortChanged { effort } => {
                Record::ReasoningEffortChange { effort: *effort }
            }
            CoreEvent::ToolStarted { call_id, .. } => Record::CallStarted {
                call_id: call_id.clone(),
            },
            CoreEvent::PermissionResolved {
                call_id,
                decision: ApprovalDecision::RejectOnce | ApprovalDecision::RejectAlways,
            } => Record::CallRejected {
                call_id: call_id.clone(),
            },
            CoreEvent::HistoryCleared => Record::HistoryCleared,
            CoreEvent::Rewound {
                report:
                    corvid_protocol::RewindReport {
                        kept_messages: Some(kept_messages),
                        ..
                    },
                error: None,
                ..
            } => Record::HistoryRewound {
                kept_messages: *kept_messages,
            },
            CoreEvent::Compacted {
                summary,
                kept_messages,
                tokens_before,
                tokens_after,
            } => Record::Compacted {
                summary: summary.clone(),
                kept_messages: *kept_messages,
                tokens_before: *tokens_before,
                tokens_after: *tokens_after,
            },
            // Everything else is either in the history already or transient (preparation).
            _ => return None,
        };
        self.append_or_notice(&record)
    }
}

impl SessionRecorder {
    /// Recording never stops the agent. The write that stops recording is told to the user
    /// once; later records are dropped quietly (the log says so).
    fn append_or_notice(&self, record: &Record) -> Option<String> {
        match self.append(record) {
            Ok(()) => None,
            Err(e @ SessionError::RecordingStopped { .. }) => {
                tracing::debug!("{e}");
                None
            }
            Err(e @ SessionError::WriteFailed { .. }) => {
                tracing::warn!("{e}");
                Some(format!(
                    "session recording stopped: {e}. The session goes on, but what happens from \
                     now on is not recorded; the file keeps everything up to here and can still \
                     be resumed. Free some disk space, then resume it to record again."
                ))
            }
            Err(e) => {
                tracing::warn!("session recording failed: {e}");
                None
            }
        }
    }
}
