//! `/undo`, `/rewind`, `/branch N` and Esc Esc: asking the session's checkpoints for the turns and the
//! preview, the dialog's answers, and the prompt put back after a conversation rewind.

use corvid_core::checkpoints::{RewindPreview, SessionCheckpoints};
use corvid_protocol::{Op, RewindScope};
use crossterm::event::KeyEvent;

use super::{Action, App};
use crate::cells::NoticeKind;
use crate::rewind::{PreviewRequest, RewindDialog, RewindKey, TurnsRequest};

/// Why `/undo` and `/rewind` do nothing in a session without checkpoints.
const CHECKPOINTS_OFF: &str = "Checkpoints are off in this session, so nothing can be undone: \
`checkpoints.enabled` is false in your settings, or corvid does not record this folder (such \
as your home folder or /). Turn them on and start a new session.";

impl App {
    /// `/undo`: the preview of putting back code and conversation of the last turn.
    pub(super) fn undo_command(&mut self) -> Vec<Action> {
        if self.rewind_checkpoints("/undo").is_none() {
            return Vec::new();
        }
        self.ask_preview(None, RewindScope::Both, false)
    }

    /// Opens the dialog on "preparing preview…" and asks the run loop for the preview.
    fn ask_preview(&mut self, turn: Option<u32>, scope: RewindScope, branch: bool) -> Vec<Action> {
        self.rewind_asked += 1;
        let request = PreviewRequest {
            id: self.rewind_asked,
            turn,
            scope,
            branch,
        };
        self.rewind = Some(RewindDialog::Preparing {
            request: request.clone(),
        });
        vec![Action::Preview(request)]
    }

    /// The preview `request` asked for: shown for a yes, unless the dialog was closed (or
    /// another preview asked for) meanwhile; a failure closes the dialog with a notice.
    pub fn previewed(&mut self, request: &PreviewRequest, answer: Result<RewindPreview, String>) {
        let waiting = matches!(
            &self.rewind,
            Some(RewindDialog::Preparing { request: asked }) if asked.id == request.id
        );
        if !waiting {
            return;
        }
        match answer {
            Ok(preview) if request.branch => {
                self.rewind = Some(RewindDialog::confirm_branch(preview));
            }
            Ok(preview) => self.rewind = Some(RewindDialog::confirm(preview)),
            Err(e) => {
                self.rewind = None;
                self.notice(
                    NoticeKind::Warning,
                    format!("{}: {e}", request.nothing_done()),
                );
            }
        }
    }

    /// `/rewind` (and Esc Esc on an empty box): the picker over the earlier prompts;
    /// `/rewind N` goes straight to what to put back for turn N.
    pub(super) fn rewind_command(&mut self, arg: &str) -> Vec<Action> {
        let wanted = match arg {
            "" => None,
            arg => match arg.parse::<u32>() {
                Ok(turn) => Some(turn),
                Err(_) => {
                    self.notice(
                        NoticeKind::Warning,
                        format!(
                            "/rewind takes a turn number as its picker lists them (or nothing, \
                             to pick one); {arg:?} is not one"
                        ),
                    );
                    return Vec::new();
                }
            },
        };
        if self.rewind_checkpoints("/rewind").is_none() {
            return Vec::new();
        }
        self.rewind_asked += 1;
        let request = TurnsRequest {
            id: self.rewind_asked,
            wanted,
        };
        self.rewind = Some(RewindDialog::Listing {
            request: request.clone(),
        });
        vec![Action::ListTurns(request)]
    }

    /// The turns `request` asked for: the picker, or for `/rewind N` what to put back for
    /// that turn; dropped when the dialog was closed (or asked again) meanwhile.
    pub fn listed(
        &mut self,
        request: &TurnsRequest,
        answer: Result<Vec<corvid_core::checkpoints::TurnSummary>, String>,
    ) {
        let waiting = matches!(
            &self.rewind,
            Some(RewindDialog::Listing { request: asked }) if asked.id == request.id
        );
        if !waiting {
            return;
        }
        self.rewind = None;
        match answer {
            Ok(turns) if turns.is_empty() => self.notice(
                NoticeKind::Info,
                "No prompt of this session can be rewound yet".into(),
            ),
            Ok(turns) => match request.wanted {
                None => self.rewind = Some(RewindDialog::pick(turns)),
                Some(turn) => match turns.into_iter().find(|t| t.turn == turn) {
                    Some(t) => self.rewind = Some(RewindDialog::scope(t.turn, t.prompt)),
                    None => self.notice(
                        NoticeKind::Warning,
                        format!(
                            "Turn {turn} cannot be rewound to in this session (it never was one, \
                             or a rewind removed it); /rewind lists the turns that can"
                        ),
                    ),
                },
            },
            Err(e) => self.notice(NoticeKind::Error, format!("Cannot list the turns: {e}")),
        }
    }

    /// `/branch [N]`: a fork of the whole session at once; from before turn N, the preview
    /// of restoring that turn's files first (the rewind's rules: the user's later edits are
    /// conflicts, kept unless chosen otherwise).
    pub(super) fn branch_command(&mut self, arg: &str) -> Vec<Action> {
        if arg.is_empty() {
            if self.chat.is_running() {
                self.notice(
                    NoticeKind::Warning,
                    "A task is running; /branch works between tasks (esc stops this one)".into(),
                );
                return Vec::new();
            }
            return vec![Action::Branch {
                turn: None,
                overwrite_conflicts: false,
            }];
        }
        let Ok(turn) = arg.parse::<u32>() else {
            self.notice(
                NoticeKind::Warning,
                format!(
                    "/branch takes a turn number as /rewind lists them (or nothing, for the \
                     whole conversation); {arg:?} is not one"
                ),
            );
            return Vec::new();
        };
        if self.rewind_checkpoints("/branch").is_none() {
            return Vec::new();
        }
        self.ask_preview(Some(turn), RewindScope::Code, true)
    }

    /// The checkpoints, when `what` may use them now; otherwise a notice says why not.
    fn rewind_checkpoints(&mut self, what: &str) -> Option<std::sync::Arc<SessionCheckpoints>> {
        if self.chat.is_running() {
            self.notice(
                NoticeKind::Warning,
                format!("A task is running; {what} works between tasks (esc stops this one)"),
            );
            return None;
        }
        let checkpoints = self.checkpoints.clone();
        if checkpoints.is_none() {
            self.notice(NoticeKind::Warning, CHECKPOINTS_OFF.into());
        }
        checkpoints
    }

    /// A key for the open rewind dialog.
    pub(super) fn on_rewind_key(&mut self, key: KeyEvent) -> Vec<Action> {
        let Some(dialog) = self.rewind.as_mut() else {
            return Vec::new();
        };
        let prompt = match &*dialog {
            RewindDialog::Confirm { preview, .. } => Some(preview.prompt.clone()),
            _ => None,
        };
        match dialog.on_key(key) {
            RewindKey::Open => Vec::new(),
            RewindKey::Closed => {
                self.rewind = None;
                self.status.hint = Some("nothing was rewound".into());
                Vec::new()
            }
            RewindKey::Preview { turn, scope } => {
                self.rewind = None;
                if self.rewind_checkpoints("/rewind").is_none() {
                    return Vec::new();
                }
                self.ask_preview(Some(turn), scope, false)
            }
            RewindKey::Rewind {
                turn,
                scope,
                overwrite_conflicts,
            } => {
                self.rewind = None;
                if scope.conversation() {
                    self.rewound_prompt = prompt.map(|p| (turn, self.whole_prompt(p)));
                }
                vec![Action::Submit(Op::Rewind {
                    turn,
                    scope,
                    overwrite_conflicts,
                })]
            }
            RewindKey::Branch {
                turn,
                overwrite_conflicts,
            } => {
                self.rewind = None;
                vec![Action::Branch {
                    turn: Some(turn),
                    overwrite_conflicts,
                }]
            }
        }
    }

    /// The newest prompt of this session whose first line is `first_line` (what the
    /// checkpoints keep), or else starts with it (they keep only the start of a long line);
    /// `first_line` itself when none does.
    fn whole_prompt(&self, first_line: String) -> String {
        let line = |p: &&String| p.lines().next().unwrap_or_default().to_owned();
        let mut newest = self.prompts.iter().rev();
        newest
            .clone()
            .find(|p| line(p) == first_line)
            .or_else(|| newest.find(|p| !first_line.is_empty() && line(p).starts_with(&first_line)))
            .cloned()
            .unwrap_or(first_line)
    }

    /// The core finished a rewind: after a conversation rewind, the undone prompt goes back
    /// into the box (before anything typed since).
    pub(super) fn rewound(&mut self, turn: u32, scope: RewindScope, failed: bool) {
        let Some((asked, prompt)) = self.rewound_prompt.take() else {
            return;
        };
        if failed || asked != turn || !scope.conversation() {
            return;
        }
        let text = match self.composer.text() {
            "" => prompt,
            typed => format!("{prompt}\n{typed}"),
        };
        self.composer.set_text(text);
    }
}
