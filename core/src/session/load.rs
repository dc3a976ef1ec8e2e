//! Reading a session file back: damaged lines are skipped with a warning, so one bad write
//! never makes a whole session unresumable.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use corvid_protocol::{ApprovalMode, Message, Part, ReasoningEffort, Role, ToolResult};

use super::record::{Record, RecordHeader};
use super::store::SessionError;
use crate::context::compaction::compacted_history;

/// What the model is told about a call that had started when corvid stopped (a crash, a
/// `kill -9`): it may have had effects, so the model must not assume it did nothing.
pub const INTERRUPTED_CALL: &str = "The call was interrupted when corvid stopped; it may have run partly. \
     Check its effects before retrying it.";

/// What the model is told about a call that corvid stopped before it started.
pub const UNSTARTED_CALL: &str = "This call was not run: corvid stopped before it started.";

/// A session read back from disk.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSession {
    pub header: RecordHeader,
    pub path: PathBuf,
    /// Every record after the header, in order (for transcript replay).
    pub records: Vec<Record>,
    /// Problems that were skipped (torn last line, damaged lines, unknown record types).
    pub warnings: Vec<String>,
    /// Length in bytes of the valid prefix; a torn tail is cut off before appending.
    pub(super) valid_len: u64,
}

impl LoadedSession {
    /// The records after the last `/clear` (all of them when there was none): what the
    /// model's history and the transcript are made of.
    pub fn since_clear(&self) -> &[Record] {
        let start = self
            .records
            .iter()
            .rposition(|r| matches!(r, Record::HistoryCleared))
            .map_or(0, |i| i + 1);
        &self.records[start..]
    }

    /// The model history as it was recorded since the last `/clear`, with a result for every
    /// call the recording left unanswered (corvid stopped mid-batch): the model learns whether
    /// the call had started.
    pub fn history(&self) -> Vec<Message> {
        history_of(self.since_clear())
    }

    /// Every message of the session, from before a `/clear` too (for `sessions show`).
    pub fn whole_history(&self) -> Vec<Message> {
        history_of(&self.records)
    }

    /// The model the session last switched to (`/model`, ACP, a fallback), if it ever did.
    pub fn recorded_model(&self) -> Option<&str> {
        self.records.iter().rev().find_map(|r| match r {
            Record::ModelChange { to, .. } => Some(to.as_str()),
            _ => None,
        })
    }

    /// The reasoning effort the session was last set to, if it ever was.
    pub fn recorded_reasoning_effort(&self) -> Option<ReasoningEffort> {
        self.records.iter().rev().find_map(|r| match r {
            Record::ReasoningEffortChange { effort } => Some(*effort),
            _ => None,
        })
    }

    /// The approval mode the session was last set to, if it ever was.
    pub fn recorded_approval_mode(&self) -> Option<ApprovalMode> {
        self.records.iter().rev().find_map(|r| match r {
            Record::ApprovalModeChange { mode } => Some(*mode),
            _ => None,
        })
    }

    /// The main model's turns the session took (one recorded answer each, `/clear` or not),
    /// for `/stats` after a resume: a replayed transcript has no turn starts to count.
    pub fn model_turns(&self) -> u32 {
        let answers = self.records.iter().filter(
            |r| matches!(r, Record::Message { message } if message.role == Role::Assistant),
        );
        u32::try_from(answers.count()).unwrap_or(u32::MAX)
    }
}

/// The messages of `records`, each call the recording left unanswered answered with whether
/// it had started.
fn history_of(records: &[Record]) -> Vec<Message> {
    let started: HashSet<&str> = records
        .iter()
        .filter_map(|r| match r {
            Record::CallStarted { call_id } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    // Each compaction replaced the history before it, as it did live.
    let mut messages: Vec<Message> = Vec::new();
    for record in records {
        match record {
            Record::Message { message } => messages.push(message.clone()),
            Record::Compacted {
                summary,
                kept_messages,
                ..
            } => {
                let kept = messages.len().saturating_sub(*kept_messages as usize);
                messages = compacted_history(summary, &messages[kept..]);
            }
            _ => {}
        }
    }
    let mut history = Vec::with_capacity(messages.len());
    for (index, message) in messages.iter().enumerate() {
        history.push(message.clone());
        let answered = messages.get(index + 1).is_some_and(|next| {
            next.role == Role::User && next.parts.iter().any(|p| matches!(p, Part::ToolResult(_)))
        });
        if message.role == Role::Assistant && !answered {
            let results: Vec<Part> = message
                .parts
                .iter()
                .filter_map(|p| match p {
                    Part::ToolCall(call) => Some(Part::ToolResult(ToolResult {
                        call_id: call.call_id.clone(),
                        name: call.name.clone(),
                        output: if started.contains(call.call_id.as_str()) {
                            INTERRUPTED_CALL.to_owned()
                        } else {
                            UNSTARTED_CALL.to_owned()
                        },
                        is_error: true,
                        images: Vec::new(),
                    })),
                    _ => None,
                })
                .collect();
            if !results.is_empty() {
                history.push(Message {
                    role: Role::User,
                    parts: results,
                });
            }
        }
    }
    history
}

/// Reads a session file. A torn last line, damaged lines in the middle (a failed write of an
/// older corvid, a glued line) and unknown record types become warnings; only a file without
/// a readable header is an error.
pub(super) fn load_file(path: &Path) -> Result<LoadedSession, SessionError> {
    let bytes = fs::read(path).map_err(|source| SessionError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let corrupt = |line: usize, reason: String| SessionError::Corrupt {
        path: path.to_path_buf(),
        line,
        reason,
    };
    let mut header = None;
    let mut records = Vec::new();
    let mut warnings = Vec::new();
    let mut offset = 0usize;
    let mut valid_len = 0u64;
    for (index, raw) in bytes.split_inclusive(|b| *b == b'\n').enumerate() {
        let line_no = index + 1;
        offset += raw.len();
        let terminated = raw.ends_with(b"\n");
        let text = String::from_utf8_lossy(raw);
        let text = text.trim();
        if text.is_empty() {
            valid_len = offset as u64;
            continue;
        }
        let skipped = |reason: String| {
            format!(
                "{}:{line_no}: skipped a damaged line ({reason})",
                path.display()
            )
        };
        let value: serde_json::Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) if !terminated => {
                warnings.push(format!(
                    "{}: skipped the torn last line {line_no} (the session was interrupted mid-write): {e}",
                    path.display()
                ));
                break;
            }
            Err(e) if header.is_none() => return Err(corrupt(line_no, e.to_string())),
            Err(e) => {
                warnings.push(skipped(e.to_string()));
                valid_len = offset as u64;
                continue;
            }
        };
        let kind = value
            .get("record")
            .and_then(|k| k.as_str())
            .unwrap_or_default()
            .to_owned();
        match serde_json::from_value::<Record>(value) {
            Ok(Record::Header(h)) if header.is_none() => header = Some(h),
            Ok(Record::Header(_)) => warnings.push(skipped("a second header".into())),
            Ok(_) if header.is_none() => {
                return Err(corrupt(
                    line_no,
                    "the file does not start with a header".into(),
                ));
            }
            Ok(record) => records.push(record),
            Err(e) if header.is_none() => return Err(corrupt(line_no, e.to_string())),
            Err(_) if !KNOWN_RECORDS.contains(&kind.as_str()) => warnings.push(format!(
                "{}:{line_no}: skipped a record of unknown type {kind:?} (written by a newer corvid?)",
                path.display()
            )),
            Err(e) => warnings.push(skipped(e.to_string())),
        }
        valid_len = offset as u64;
    }
    let header = header.ok_or_else(|| corrupt(1, "the file has no header".into()))?;
    Ok(LoadedSession {
        header,
        path: path.to_path_buf(),
        records: super::rewound::apply_rewinds(records),
        warnings,
        valid_len,
    })
}

const KNOWN_RECORDS: &[&str] = &[
    "header",
    "message",
    "tool_use_summary",
    "usage",
    "model_change",
    "approval_mode_change",
    "call_started",
];
