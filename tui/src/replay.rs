//! A resumed session's transcript, shown through the same path as live events.

use corvid_protocol::{ApprovalDecision, CoreEvent};

use crate::tools::labels_batch;

/// The events of a recorded transcript in the order the UI applies them.
///
/// Live, a tool-use summary arrives whenever the fast model answers, often after the next
/// text; a replay knows which batch it labels, so it goes right after that batch and shows as
/// the `●` line under its group or as the compact header, never as a late line. Events that ask
/// the user or animate (approvals, preparations) are dropped, except a rejection, which marks
/// its card; and a finished task expects no
/// more summaries, so nothing stays live after the replay.
pub fn replay_order(events: &[CoreEvent]) -> Vec<CoreEvent> {
    let batches: Vec<&[String]> = events
        .iter()
        .filter_map(|ev| match ev {
            CoreEvent::BatchCompleted { call_ids } => Some(call_ids.as_slice()),
            _ => None,
        })
        .collect();
    let labels_some_batch = |ids: &[String]| batches.iter().any(|b| labels_batch(ids, b));
    let mut out = Vec::with_capacity(events.len());
    for ev in events {
        match ev {
            CoreEvent::ToolUseSummary {
                preceding_tool_use_ids,
                ..
            } if labels_some_batch(preceding_tool_use_ids) => {}
            // A rejection stays: it marks the card as rejected.
            CoreEvent::PermissionResolved {
                decision: ApprovalDecision::RejectOnce | ApprovalDecision::RejectAlways,
                ..
            } => out.push(ev.clone()),
            CoreEvent::PermissionRequested { .. }
            | CoreEvent::PermissionResolved { .. }
            | CoreEvent::ToolPreparing { .. }
            | CoreEvent::PreparationDiscarded { .. } => {}
            CoreEvent::BatchCompleted { call_ids } => {
                out.push(ev.clone());
                out.extend(
                    events
                        .iter()
                        .filter(|s| {
                            matches!(s, CoreEvent::ToolUseSummary { preceding_tool_use_ids, .. }
                                if labels_batch(preceding_tool_use_ids, call_ids))
                        })
                        .cloned(),
                );
            }
            CoreEvent::TaskFinished {
                task_id,
                stop_reason,
                error,
                ..
            } => out.push(CoreEvent::TaskFinished {
                task_id: task_id.clone(),
                stop_reason: *stop_reason,
                error: error.clone(),
                pending_summaries: 0,
            }),
            _ => out.push(ev.clone()),
        }
    }
    out
}
