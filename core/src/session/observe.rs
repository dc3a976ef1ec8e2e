//! The recorder as the agent's history observer: complete content in, JSONL lines out.

use corvid_protocol::{CoreEvent, Message};

use super::record::Record;
use super::store::SessionRecorder;
use crate::agent::HistoryObserver;

impl HistoryObserver for SessionRecorder {
    fn message_appended(&self, message: &Message) {
        self.append_or_warn(&Record::Message {
            message: message.clone(),
        });
    }

    fn event_emitted(&self, event: &CoreEvent) {
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
            CoreEvent::ModelFellBack { from, to, .. } => Record::ModelChange {
                from: from.clone(),
                to: to.clone(),
            },
            // Everything else is either in the history already or transient (preparation).
            _ => return,
        };
        self.append_or_warn(&record);
    }
}

impl SessionRecorder {
    /// Recording must never stop the agent: a failed write is logged and the session goes on.
    fn append_or_warn(&self, record: &Record) {
        if let Err(e) = self.append(record) {
            tracing::warn!("session recording failed: {e}");
        }
    }
}
