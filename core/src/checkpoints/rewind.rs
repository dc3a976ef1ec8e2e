//! The operations behind `/undo`, `/rewind` and `corvid rewind`: the session's earlier turns
//! with what each changed, the preview of going back to before one of them, and the restore.

use std::collections::HashSet;
use std::path::PathBuf;

use corvid_checkpoint::{Action, Change, RestorePlan, Unrestorable, UnrestorableReason};
use corvid_protocol::{RewindReport, RewindScope};
use serde::Serialize;

use super::journal::{self, Entry, TurnRecord};
use super::{CheckpointError, SessionCheckpoints, human_bytes, now_ms};

/// What no rewind can put back, said plainly in every preview.
pub const CANNOT_UNDO: [&str; 5] = [
    "changes outside the workspace folder (other folders, your home folder, installed packages)",
    "network calls and what they changed elsewhere (pushes, uploads, API requests)",
    "databases and services that commands talked to",
    "git commits, branches, tags and stashes that commands made: the working tree is restored, \
     the commits stay",
    "files ignored by .gitignore and the .git folder itself, which checkpoints do not record",
];

/// One earlier user turn, for a picker.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnSummary {
    /// Its number in the session (what `--turn` and [`corvid_protocol::Op::Rewind`] take).
    pub turn: u32,
    /// The prompt's first line (`!command` for the user's own commands).
    pub prompt: String,
    /// When it started, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// For a rewind's own entry: the turn it went back to (undoing it redoes the code).
    pub rewind_of: Option<u32>,
    /// The files the turn (and what ran in it) changed, as undoing it alone would touch them.
    pub changes: Vec<Change>,
    /// Files it changed that cannot be restored.
    pub unrestorable: Vec<Unrestorable>,
}

/// What a rewind would do; shown before it runs.
#[derive(Debug, Clone, Serialize)]
pub struct RewindPreview {
    /// The turn gone back to (it and every later turn are undone).
    pub turn: u32,
    /// Its prompt's first line.
    pub prompt: String,
    /// What is put back.
    pub scope: RewindScope,
    /// The files to modify, recreate or delete; `conflict` marks the user's own later edits,
    /// kept unless the rewind is told to overwrite them.
    pub changes: Vec<Change>,
    /// The files that cannot be restored, with the reason.
    pub unrestorable: Vec<Unrestorable>,
    /// How many history messages a conversation rewind keeps.
    pub keep_messages: Option<u32>,
    /// What no rewind undoes.
    pub cannot_undo: Vec<String>,
    #[serde(skip)]
    pub(super) plan: Option<RestorePlan>,
}

impl RewindPreview {
    /// Whether any file is a conflict.
    pub fn has_conflicts(&self) -> bool {
        self.changes.iter().any(|c| c.conflict)
    }

    /// The preview as text for people (the CLI, the ACP agent message, the TUI).
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "Rewind ({}) to before turn {}: {}\n",
            self.scope.as_str(),
            self.turn,
            self.prompt
        );
        if self.scope.code() {
            if self.changes.is_empty() && self.unrestorable.is_empty() {
                out.push_str("No file needs restoring.\n");
            }
            for c in &self.changes {
                let verb = match c.action {
                    Action::Modify => "restore",
                    Action::Recreate => "recreate",
                    Action::Delete => "delete",
                };
                let note = if c.conflict {
                    "  (CONFLICT: changed after the agent; kept unless you overwrite)"
                } else {
                    ""
                };
                out.push_str(&format!("  {verb:<8} {}{note}\n", c.path.display()));
            }
            for u in &self.unrestorable {
                out.push_str(&format!(
                    "  cannot restore {}: {}\n",
                    u.path.display(),
                    reason_text(&u.reason)
                ));
            }
        }
        if let Some(keep) = self.keep_messages {
            out.push_str(&format!(
                "The conversation goes back to its first {keep} messages; the model forgets \
                 this turn and every later one.\n"
            ));
        }
        out.push_str("Not undone by any rewind:\n");
        for line in &self.cannot_undo {
            out.push_str(&format!("  - {line}\n"));
        }
        out
    }
}

/// Why a file cannot be restored, for people.
pub(crate) fn reason_text(reason: &UnrestorableReason) -> String {
    match reason {
        UnrestorableReason::TooLarge { size, limit } => format!(
            "it was {} then, over `checkpoints.maxFileBytes` ({}), so it was not captured",
            human_bytes(*size),
            human_bytes(*limit)
        ),
        UnrestorableReason::CurrentTooLarge { size, limit } => format!(
            "it is {} now, over `checkpoints.maxFileBytes` ({}); replacing it could not be undone",
            human_bytes(*size),
            human_bytes(*limit)
        ),
    }
}

impl SessionCheckpoints {
    /// The session's user turns still in its conversation, oldest first, with what each
    /// changed.
    pub fn turns(&self) -> Result<Vec<TurnSummary>, CheckpointError> {
        let inner = self.lock();
        let entries = inner.journal.entries()?;
        let (turns, _) = journal::replay(&entries);
        let mut out = Vec::with_capacity(turns.len());
        for t in turns {
            let (changes, unrestorable) = match t.after {
                Some(after) => inner.store.changes(t.before, after).unwrap_or_default(),
                None => Default::default(),
            };
            out.push(TurnSummary {
                turn: t.turn,
                prompt: t.prompt,
                at_ms: t.at_ms,
                rewind_of: t.rewind_of,
                changes,
                unrestorable,
            });
        }
        Ok(out)
    }

    /// The newest turn, for `/undo` and `--last`.
    pub fn last_turn(&self) -> Result<u32, CheckpointError> {
        let entries = self.lock().journal.entries()?;
        journal::replay(&entries)
            .0
            .last()
            .map(|t| t.turn)
            .ok_or(CheckpointError::NoTurns)
    }

    /// How many history messages the conversation had when `turn` began: where a fork from
    /// before that turn cuts the copied conversation.
    pub fn history_len_before(&self, turn: u32) -> Result<u32, CheckpointError> {
        let entries = self.lock().journal.entries()?;
        journal::replay(&entries)
            .0
            .iter()
            .find(|t| t.turn == turn)
            .map(|t| t.history_len)
            .ok_or(CheckpointError::UnknownTurn(turn))
    }

    /// What rewinding `scope` to before `turn` would do. Takes a snapshot of the workspace as
    /// it is now (so the rewind itself can be undone). A file someone changed after the
    /// agent did (between turns or since the last one) is a conflict.
    pub fn preview(&self, turn: u32, scope: RewindScope) -> Result<RewindPreview, CheckpointError> {
        let mut inner = self.lock();
        let entries = inner.journal.entries()?;
        let (turns, latest) = journal::replay(&entries);
        let index = turns
            .iter()
            .position(|t| t.turn == turn)
            .ok_or(CheckpointError::UnknownTurn(turn))?;
        let target = &turns[index];
        let mut preview = RewindPreview {
            turn,
            prompt: target.prompt.clone(),
            scope,
            changes: Vec::new(),
            unrestorable: Vec::new(),
            keep_messages: scope.conversation().then_some(target.history_len),
            cannot_undo: CANNOT_UNDO.iter().map(|s| (*s).to_owned()).collect(),
            plan: None,
        };
        if scope.code() {
            let expected = latest.unwrap_or(target.before);
            let mut plan = inner
                .store
                .preview(&self.workspace, target.before, expected)?;
            let touched = user_edits_between(&inner.store, &turns[index..])?;
            for change in &mut plan.changes {
                if touched.contains(&change.path) {
                    change.conflict = true;
                }
            }
            preview.changes = plan.changes.clone();
            preview.unrestorable = plan.unrestorable.clone();
            preview.plan = Some(plan);
        }
        Ok(preview)
    }

    /// Carries out the code part of `preview` (all or nothing per file: each ends old or
    /// new), journals it as a turn of its own so it can be undone in turn, and journals a
    /// conversation cut. Conflicts are overwritten only when `overwrite_conflicts`.
    pub fn rewind(
        &self,
        preview: &RewindPreview,
        overwrite_conflicts: bool,
        history_len_now: u32,
    ) -> Result<RewindReport, CheckpointError> {
        let mut inner = self.lock();
        let entries = inner.journal.entries()?;
        let mut report = RewindReport {
            kept_messages: preview.keep_messages,
            ..RewindReport::default()
        };
        if preview.scope.conversation() {
            inner.journal.append(&Entry::Rewound {
                to_turn: preview.turn,
            })?;
        }
        if let Some(plan) = &preview.plan {
            let after = inner.store.restore(plan, overwrite_conflicts)?;
            for c in &plan.changes {
                if c.conflict && !overwrite_conflicts {
                    report.kept_conflicts.push(c.path.clone());
                } else {
                    report.restored.push(c.path.clone());
                }
            }
            report.unrestorable = plan
                .unrestorable
                .iter()
                .map(|u| format!("{}: {}", u.path.display(), reason_text(&u.reason)))
                .collect();
            let turn = journal::next_turn(&entries);
            inner.journal.append(&Entry::Turn {
                turn,
                prompt: format!("rewind to before turn {}", preview.turn),
                before: plan.current,
                history_len: preview.keep_messages.unwrap_or(history_len_now),
                at_ms: now_ms(),
                rewind_of: Some(preview.turn),
            })?;
            inner.journal.append(&Entry::End { turn, after })?;
        }
        Ok(report)
    }
}

/// The paths someone other than the agent changed after `turns[0]` began: between the end
/// of one turn and the start of the next.
fn user_edits_between(
    store: &corvid_checkpoint::Store,
    turns: &[TurnRecord],
) -> Result<HashSet<PathBuf>, CheckpointError> {
    let mut touched = HashSet::new();
    for pair in turns.windows(2) {
        let Some(after) = pair[0].after else { continue };
        let (changes, unrestorable) = store.changes(after, pair[1].before)?;
        touched.extend(changes.into_iter().map(|c| c.path));
        touched.extend(unrestorable.into_iter().map(|u| u.path));
    }
    Ok(touched)
}
