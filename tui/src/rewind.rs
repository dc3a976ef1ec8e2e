//! `/undo` and `/rewind` (issue 26): the dialog in the live area. `/rewind` picks an earlier
//! prompt, then what to put back; both end on the core's preview, confirmed before the
//! app sends [`corvid_protocol::Op::Rewind`]. Pure: the app asks the checkpoints for the
//! turns and hands them in; the preview, which walks the workspace (most of a second in a
//! large one), is a [`PreviewRequest`] the run loop computes off the UI thread while the
//! dialog shows that it is being prepared (Esc cancels).

use corvid_core::checkpoints::{RewindPreview, SessionCheckpoints, TurnSummary};
use corvid_protocol::RewindScope;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::wrap::{truncate, wrap_line};

/// Rows of earlier prompts shown at once (the list scrolls with the selection).
const VISIBLE: usize = 8;

/// Files listed in the preview before the rest are only counted.
const FILE_ROWS: usize = 10;

/// What can be put back, in the order offered after picking a turn.
const SCOPES: [(RewindScope, &str); 3] = [
    (RewindScope::Both, "code and conversation"),
    (
        RewindScope::Code,
        "code only (the model is told which files came back)",
    ),
    (
        RewindScope::Conversation,
        "conversation only (the files stay as they are)",
    ),
];

/// A preview the dialog waits for, to compute off the UI thread ([`PreviewRequest::run`]);
/// the answer goes to `App::previewed` with the same `id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviewRequest {
    /// Which request this is: an answer to a dialog closed meanwhile is dropped.
    pub id: u64,
    /// The turn gone back to; `None`: the last one (`/undo`).
    pub turn: Option<u32>,
    /// What is put back.
    pub scope: RewindScope,
    /// For `/branch N`: a yes forks instead of rewinding.
    pub branch: bool,
}

impl PreviewRequest {
    /// Computes the preview (blocking: it snapshots the workspace).
    pub fn run(&self, checkpoints: &SessionCheckpoints) -> Result<RewindPreview, String> {
        let turn = match self.turn {
            Some(turn) => turn,
            None => checkpoints.last_turn().map_err(|e| e.to_string())?,
        };
        checkpoints
            .preview(turn, self.scope)
            .map_err(|e| e.to_string())
    }

    /// What did not happen when the preview fails, for the notice.
    pub fn nothing_done(&self) -> &'static str {
        match (self.branch, self.turn) {
            (true, _) => "Nothing was branched",
            (false, None) => "Nothing was undone",
            (false, Some(_)) => "Nothing was rewound",
        }
    }
}

/// The session's earlier turns with what each changed, to list off the UI thread (they are
/// read from the store, a few trees per turn); the answer goes to `App::listed`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnsRequest {
    /// Which request this is (shared numbering with [`PreviewRequest`]).
    pub id: u64,
    /// `/rewind N`: the turn to go straight to; `None` opens the picker.
    pub wanted: Option<u32>,
}

impl TurnsRequest {
    /// Lists the turns (blocking).
    pub fn run(&self, checkpoints: &SessionCheckpoints) -> Result<Vec<TurnSummary>, String> {
        checkpoints.turns().map_err(|e| e.to_string())
    }
}

/// Where the dialog is.
#[derive(Debug, Clone)]
pub enum RewindDialog {
    /// Waiting for the list of turns (Esc cancels).
    Listing { request: TurnsRequest },
    /// Waiting for the preview of `request` (Esc cancels).
    Preparing { request: PreviewRequest },
    /// Choosing the turn to go back to before (oldest first; the newest starts highlighted).
    Pick {
        turns: Vec<TurnSummary>,
        selected: usize,
    },
    /// Choosing what to put back for `turn`.
    Scope {
        turn: u32,
        prompt: String,
        selected: usize,
    },
    /// The preview, waiting for a yes. With `branch` (`/branch N`), a yes restores the files
    /// and goes on in a new session instead of cutting this one's conversation.
    Confirm {
        preview: Box<RewindPreview>,
        selected: usize,
        branch: bool,
    },
}

/// What a key press in the dialog asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum RewindKey {
    /// Still open.
    Open,
    /// Closed without rewinding.
    Closed,
    /// Preview rewinding `scope` to before `turn` (the app opens [`RewindDialog::Confirm`]).
    Preview { turn: u32, scope: RewindScope },
    /// Carry it out.
    Rewind {
        turn: u32,
        scope: RewindScope,
        overwrite_conflicts: bool,
    },
    /// Restore the files of before `turn` and go on in a fork of the session from there.
    Branch {
        turn: u32,
        overwrite_conflicts: bool,
    },
}

impl RewindDialog {
    /// The picker over `turns` (oldest first) with the newest highlighted.
    pub fn pick(turns: Vec<TurnSummary>) -> Self {
        let selected = turns.len().saturating_sub(1);
        Self::Pick { turns, selected }
    }

    /// The choice of what to put back for `turn` (`/rewind N`).
    pub fn scope(turn: u32, prompt: String) -> Self {
        Self::Scope {
            turn,
            prompt,
            selected: 0,
        }
    }

    /// The confirmation of `preview`, on its first choice.
    pub fn confirm(preview: RewindPreview) -> Self {
        Self::Confirm {
            preview: Box::new(preview),
            selected: 0,
            branch: false,
        }
    }

    /// The confirmation of `/branch N`: `preview` is the code rewind to before turn N.
    pub fn confirm_branch(preview: RewindPreview) -> Self {
        Self::Confirm {
            preview: Box::new(preview),
            selected: 0,
            branch: true,
        }
    }

    /// The confirmation's choices: with conflicts, keeping or overwriting the user's edits.
    fn choices(preview: &RewindPreview, branch: bool) -> Vec<(&'static str, Option<bool>)> {
        if preview.has_conflicts() {
            vec![
                ("restore, keep my edits", Some(false)),
                ("overwrite my edits", Some(true)),
                ("cancel", None),
            ]
        } else {
            let go = if branch { "branch" } else { "rewind" };
            vec![(go, Some(false)), ("cancel", None)]
        }
    }

    /// Up/Down (or Tab) move, Enter chooses, `y` takes the first choice of the confirmation,
    /// Esc, `n` or Ctrl+C close.
    pub fn on_key(&mut self, key: KeyEvent) -> RewindKey {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if key.code == KeyCode::Esc || (ctrl && key.code == KeyCode::Char('c')) {
            return RewindKey::Closed;
        }
        let n = match self {
            Self::Listing { .. } | Self::Preparing { .. } => return RewindKey::Open,
            Self::Pick { turns, .. } => turns.len(),
            Self::Scope { .. } => SCOPES.len(),
            Self::Confirm {
                preview, branch, ..
            } => Self::choices(preview, *branch).len(),
        };
        let confirming = matches!(self, Self::Confirm { .. });
        let (Self::Pick { selected, .. }
        | Self::Scope { selected, .. }
        | Self::Confirm { selected, .. }) = self
        else {
            return RewindKey::Open;
        };
        match key.code {
            KeyCode::Up | KeyCode::BackTab => *selected = (*selected + n.max(1) - 1) % n.max(1),
            KeyCode::Down | KeyCode::Tab => *selected = (*selected + 1) % n.max(1),
            KeyCode::Char('n') if confirming => return RewindKey::Closed,
            KeyCode::Char('y') if confirming => {
                *selected = 0;
                return self.chosen();
            }
            KeyCode::Enter => return self.chosen(),
            _ => {}
        }
        RewindKey::Open
    }

    /// Enter on the highlighted row.
    fn chosen(&mut self) -> RewindKey {
        match self {
            Self::Listing { .. } | Self::Preparing { .. } => RewindKey::Open,
            Self::Pick { turns, selected } => {
                let Some(t) = turns.get(*selected) else {
                    return RewindKey::Closed;
                };
                *self = Self::Scope {
                    turn: t.turn,
                    prompt: t.prompt.clone(),
                    selected: 0,
                };
                RewindKey::Open
            }
            Self::Scope { turn, selected, .. } => RewindKey::Preview {
                turn: *turn,
                scope: SCOPES[*selected % SCOPES.len()].0,
            },
            Self::Confirm {
                preview,
                selected,
                branch,
            } => {
                let choices = Self::choices(preview, *branch);
                match choices[*selected % choices.len()].1 {
                    Some(overwrite_conflicts) if *branch => RewindKey::Branch {
                        turn: preview.turn,
                        overwrite_conflicts,
                    },
                    Some(overwrite_conflicts) => RewindKey::Rewind {
                        turn: preview.turn,
                        scope: preview.scope,
                        overwrite_conflicts,
                    },
                    None => RewindKey::Closed,
                }
            }
        }
    }

    /// The dialog's rows at `width`.
    pub fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let dim = Style::new().fg(Color::DarkGray);
        let title = |text: String, keys: &str| {
            Line::from(vec![
                Span::styled(
                    text,
                    Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
                ),
                Span::styled(format!(" · {keys}"), dim),
            ])
        };
        let row = |chosen: bool, text: String, note: String| {
            let style = if chosen {
                Style::new().add_modifier(Modifier::BOLD)
            } else {
                Style::new()
            };
            let marker = if chosen { "› " } else { "  " };
            let room = usize::from(width)
                .saturating_sub(2 + note.chars().count())
                .max(8);
            Line::from(vec![
                Span::styled(marker, Style::new().fg(Color::Cyan)),
                Span::styled(truncate(&text, room), style),
                Span::styled(note, dim),
            ])
        };
        let mut out = Vec::new();
        match self {
            Self::Listing { request } => {
                let what = match request.wanted {
                    Some(turn) => format!("Rewind to before turn {turn}"),
                    None => "Rewind to before which prompt?".to_owned(),
                };
                out.push(title(what, "esc cancel"));
                out.push(Line::styled("  reading the earlier prompts…", dim));
            }
            Self::Preparing { request } => {
                let what = match (request.branch, request.turn) {
                    (true, Some(turn)) => format!("Branch from before turn {turn}"),
                    (false, Some(turn)) => format!("Rewind to before turn {turn}"),
                    (_, None) => "Undo the last turn".to_owned(),
                };
                out.push(title(what, "esc cancel"));
                out.push(Line::styled(
                    "  preparing preview… (comparing the files with the checkpoint)",
                    dim,
                ));
            }
            Self::Pick { turns, selected } => {
                out.push(title(
                    "Rewind to before which prompt?".into(),
                    "↑↓ choose · enter next · esc close",
                ));
                let first = (selected + 1).saturating_sub(VISIBLE);
                for (i, t) in turns.iter().enumerate().skip(first).take(VISIBLE) {
                    let prompt = t.prompt.split_whitespace().collect::<Vec<_>>().join(" ");
                    out.push(row(
                        i == *selected,
                        format!("{}. {prompt}", t.turn),
                        format!("  {}", changed(t)),
                    ));
                }
                if turns.len() > VISIBLE {
                    out.push(Line::styled(
                        format!("  {}/{} prompts", selected + 1, turns.len()),
                        dim,
                    ));
                }
            }
            Self::Scope {
                turn,
                prompt,
                selected,
            } => {
                out.push(title(
                    format!("Rewind to before turn {turn}"),
                    "↑↓ choose · enter preview · esc close",
                ));
                out.push(Line::styled(
                    truncate(&format!("  {prompt}"), usize::from(width)),
                    dim,
                ));
                for (i, (_, label)) in SCOPES.iter().enumerate() {
                    out.push(row(i == *selected, (*label).to_owned(), String::new()));
                }
            }
            Self::Confirm {
                preview,
                selected,
                branch,
            } => {
                if *branch {
                    out.push(title(
                        format!("Branch from before turn {}?", preview.turn),
                        "enter choose · y yes · esc or n keep everything",
                    ));
                    let note = Line::raw(
                        "  A new session starts with the conversation before that turn; this \
                         one is kept as it is. The files go back first:",
                    );
                    out.extend(wrap_line(&note, width, 2));
                } else {
                    out.push(title(
                        "Rewind?".into(),
                        "enter choose · y yes · esc or n keep everything",
                    ));
                }
                for text in preview_rows(preview) {
                    let line = Line::raw(format!("  {text}"));
                    out.extend(wrap_line(&line, width, 6));
                }
                let choices = Self::choices(preview, *branch);
                let spans: Vec<Span<'static>> = choices
                    .iter()
                    .enumerate()
                    .flat_map(|(i, (label, _))| {
                        let style = if i == *selected {
                            Style::new().add_modifier(Modifier::REVERSED)
                        } else {
                            dim
                        };
                        [Span::raw("  "), Span::styled(format!(" {label} "), style)]
                    })
                    .collect();
                out.push(Line::from(spans));
            }
        }
        out
    }
}

/// The core's preview text with at most [`FILE_ROWS`] file rows (the rest counted), so a
/// turn that touched many files still leaves the choices on the screen.
fn preview_rows(preview: &RewindPreview) -> Vec<String> {
    let text = preview.to_text();
    let mut rows: Vec<String> = text.lines().map(str::to_owned).collect();
    // After the title, one row per change and per file that cannot be restored.
    let files = if preview.scope.code() {
        preview.changes.len() + preview.unrestorable.len()
    } else {
        0
    };
    if files > FILE_ROWS && rows.len() > files {
        let conflicts = preview.changes.iter().filter(|c| c.conflict).count();
        let hidden = files - FILE_ROWS;
        let mut more = format!("  … and {hidden} more files");
        if conflicts > 0 {
            more.push_str(&format!(" ({conflicts} conflicts in all)"));
        }
        rows.splice(1 + FILE_ROWS..1 + files, [more]);
    }
    rows
}

/// What a turn changed, for the picker: file counts, or that nothing changed.
fn changed(t: &TurnSummary) -> String {
    let files = t.changes.len() + t.unrestorable.len();
    let mut out = match files {
        0 => "no file changes".to_owned(),
        1 => "1 file".to_owned(),
        n => format!("{n} files"),
    };
    if t.rewind_of.is_some() {
        out.push_str(" · a rewind");
    }
    out
}
