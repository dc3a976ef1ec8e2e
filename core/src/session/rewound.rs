//! Conversation rewinds in a recording: a `HistoryRewound` record cuts the history back, so
//! the records of the undone turns are dropped when the session is read, and `--resume`,
//! `session/load` and `sessions show` all see the rewound session.

use super::record::Record;
use crate::context::compaction::compacted_history;

/// `records` with every rewind applied: the records from the first message a rewind cut
/// off up to the rewind are dropped (its own record stays, as a marker for `sessions show`).
pub(super) fn apply_rewinds(records: Vec<Record>) -> Vec<Record> {
    if !records
        .iter()
        .any(|r| matches!(r, Record::HistoryRewound { .. }))
    {
        return records;
    }
    let mut out: Vec<Record> = Vec::with_capacity(records.len());
    // One slot per message of the live history: where its record is in `out`, `None` for
    // a summary a compaction made up.
    let mut live: Vec<Option<usize>> = Vec::new();
    for record in records {
        match &record {
            Record::Message { .. } => live.push(Some(out.len())),
            Record::HistoryCleared => live.clear(),
            Record::Compacted {
                summary,
                kept_messages,
                ..
            } => {
                let kept = live.len().saturating_sub(*kept_messages as usize);
                let tail: Vec<Option<usize>> = live[kept..].to_vec();
                let tail_messages: Vec<corvid_protocol::Message> = tail
                    .iter()
                    .map(|slot| match slot.and_then(|i| out.get(i)) {
                        Some(Record::Message { message }) => message.clone(),
                        _ => corvid_protocol::Message::user_text(String::new()),
                    })
                    .collect();
                let merged = compacted_history(summary, &tail_messages);
                live = Vec::with_capacity(merged.len());
                if merged.len() > tail.len() {
                    live.push(None);
                    live.extend(tail);
                } else {
                    // The summary joined the first kept (user) message.
                    live.push(None);
                    live.extend(tail.into_iter().skip(1));
                }
            }
            Record::HistoryRewound { kept_messages } => {
                let keep = *kept_messages as usize;
                if let Some(Some(first_cut)) = live.get(keep).copied() {
                    out.truncate(first_cut);
                }
                live.truncate(keep);
            }
            _ => {}
        }
        out.push(record);
    }
    out
}
