//! The live area under the transcript: streaming text, the running tool group, task progress,
//! the approval dialog, the composer and a status line. Redrawn every frame; its cost does not
//! depend on the transcript's length.

use std::time::Instant;

use corvid_core::usage::ContextFill;
use corvid_protocol::{ApprovalDecision, ApprovalMode, ApprovalPreview};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use corvid_tools::exit_plan_mode::EXIT_PLAN_MODE;

use crate::chat::{ChatState, PendingApproval};
use crate::composer::Composer;
use crate::markdown::render_wrapped;
use crate::picker::SessionPicker;
use crate::tools::{DiffStage, render_diff, spinner};
use crate::wrap::{truncate, wrap_line};

/// Rows of the unfinished assistant block shown (its tail) while it streams.
const STREAM_ROWS: usize = 12;
/// Rows of an approval preview (diff or command).
const PREVIEW_ROWS: usize = 12;

/// What the status line shows.
#[derive(Debug, Clone)]
pub struct StatusInfo {
    pub model: String,
    pub approval_mode: ApprovalMode,
    /// A transient hint replacing the key help (e.g. "press Ctrl+C again to exit").
    pub hint: Option<String>,
    /// How full the model's context window is (none before the first answer).
    pub context: Option<ContextFill>,
    /// How many background processes run (shown when some do).
    pub background: usize,
}

/// Everything the live area is drawn from.
pub struct LiveView<'a> {
    pub chat: &'a ChatState,
    pub composer: &'a Composer,
    pub status: &'a StatusInfo,
    /// Highlighted entry of the approval's choices ([`crate::chat::PendingApproval::choices`]).
    pub approval_choice: usize,
    /// A prompt waiting for the running task to end.
    pub queued: Option<&'a str>,
    /// Prompts sent into the running task, not read by the model yet.
    pub steering: &'a [String],
    /// Files for the `@path` word at the cursor, and the highlighted one.
    pub mentions: (&'a [String], usize),
    /// The slash commands matching what is typed and the highlighted one.
    pub commands: (Vec<crate::app::PopupEntry>, usize),
    /// The `/resume` picker, while open.
    pub picker: Option<&'a SessionPicker>,
    /// The `/model` picker, while open.
    pub model_picker: Option<&'a crate::model_picker::ModelPicker>,
    /// The `/undo` and `/rewind` dialog, while open.
    pub rewind: Option<&'a crate::rewind::RewindDialog>,
    /// The transcript view and the terminal's height, while open: it replaces the live area.
    pub transcript: Option<(&'a crate::transcript::TranscriptView, u16)>,
    /// Spinner animation frame.
    pub frame: usize,
    pub now: Instant,
}

impl LiveView<'_> {
    /// All rows of the live area at `width`, top to bottom, and the composer cursor's position.
    pub fn lines(&self, width: u16) -> (Vec<Line<'static>>, Position) {
        if let Some((view, rows)) = self.transcript {
            let out = view.lines(self.chat, width, rows);
            let y = u16::try_from(out.len().saturating_sub(1)).unwrap_or(u16::MAX);
            return (out, Position::new(0, y));
        }
        let mut out: Vec<Line<'static>> = Vec::new();
        let dim = Style::new().fg(Color::DarkGray);
        let chat = self.chat;
        // A live group precedes any text: text streaming after a finished (compact) group
        // belongs to the next turn.
        if let Some(g) = &chat.group {
            out.extend(g.render_at(width, self.frame, Some(self.now)));
        }
        if !chat.thought.trim().is_empty() {
            if !out.is_empty() {
                out.push(Line::default());
            }
            let last = chat
                .thought
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            let text = truncate(last.trim(), usize::from(width).saturating_sub(2));
            out.push(Line::from(Span::styled(
                format!("∴ {text}"),
                dim.add_modifier(Modifier::ITALIC),
            )));
        }
        if !chat.stream.trim().is_empty() {
            if !out.is_empty() {
                out.push(Line::default());
            }
            let rows = render_wrapped(&chat.stream, width);
            let skip = rows.len().saturating_sub(STREAM_ROWS);
            out.extend(rows.into_iter().skip(skip));
        }
        if let Some(t) = &chat.task {
            let secs = self.now.saturating_duration_since(t.started).as_secs();
            let what = if chat.approval.is_some() {
                "Waiting for approval"
            } else if chat.question.is_some() {
                "Waiting for your answer"
            } else {
                "Working"
            };
            out.push(Line::default());
            out.push(Line::from(vec![
                Span::styled(
                    format!("{} ", spinner(self.frame)),
                    Style::new().fg(Color::Cyan),
                ),
                Span::styled(what.to_string(), Style::new().add_modifier(Modifier::BOLD)),
                Span::styled(
                    format!(
                        " · {} · {} tokens · esc to cancel",
                        elapsed(secs),
                        tokens(t.live_tokens())
                    ),
                    dim,
                ),
            ]));
        }
        if let Some(a) = &chat.approval {
            out.push(Line::default());
            out.extend(approval_lines(a, self.approval_choice, width));
        }
        if let Some(q) = &chat.question {
            out.push(Line::default());
            out.extend(q.lines(width));
        }
        if let Some(p) = self.picker {
            if !out.is_empty() {
                out.push(Line::default());
            }
            out.extend(p.lines(width));
        }
        if let Some(p) = self.model_picker {
            if !out.is_empty() {
                out.push(Line::default());
            }
            out.extend(p.lines(width));
        }
        if let Some(r) = self.rewind {
            if !out.is_empty() {
                out.push(Line::default());
            }
            out.extend(r.lines(width));
        }
        if !self.mentions.0.is_empty() {
            if !out.is_empty() {
                out.push(Line::default());
            }
            let (files, choice) = self.mentions;
            out.extend(files.iter().enumerate().map(|(i, f)| {
                let style = if i == choice {
                    Style::new().add_modifier(Modifier::REVERSED)
                } else {
                    Style::new().fg(Color::DarkGray)
                };
                Line::from(Span::styled(
                    truncate(&format!("  @{f}"), usize::from(width)),
                    style,
                ))
            }));
        }
        if !self.commands.0.is_empty() {
            if !out.is_empty() {
                out.push(Line::default());
            }
            out.extend(command_popup(&self.commands.0, self.commands.1, width));
        }
        let waiting = self
            .steering
            .iter()
            .map(|s| ("steering ", s.as_str(), " · read after the running tools"))
            .chain(self.queued.map(|q| ("queued ", q, "")));
        for (i, (label, text, note)) in waiting.enumerate() {
            if i == 0 && !out.is_empty() {
                out.push(Line::default());
            }
            out.push(waiting_line(label, text, note, width));
        }
        if !out.is_empty() {
            // Separates live content from the last committed item, as cells are separated.
            out.insert(0, Line::default());
        }
        out.push(Line::from(Span::styled(
            "─".repeat(usize::from(width)),
            dim,
        )));
        let placeholder = if chat.is_running() {
            "esc to cancel"
        } else {
            "Ask corvid · /help for commands"
        };
        let (composer, cursor) = self.composer.render(width, placeholder);
        let cursor_row = out.len() + usize::from(cursor.1);
        out.extend(composer);
        out.push(self.status_line(width));
        let y = u16::try_from(cursor_row).unwrap_or(u16::MAX);
        (out, Position::new(cursor.0, y))
    }

    fn status_line(&self, width: u16) -> Line<'static> {
        let dim = Style::new().fg(Color::DarkGray);
        let mode = if self.chat.compact { "compact" } else { "full" };
        let mut left = format!(
            "{} · {} · {mode}",
            crate::wrap::printable(&self.status.model),
            self.status.approval_mode.as_str()
        );
        if let Some(fill) = self.status.context {
            left.push_str(&format!(" · ctx {}%", fill.percent()));
        }
        if self.status.background > 0 {
            left.push_str(&format!(" · {} background", self.status.background));
        }
        let right = self
            .status
            .hint
            .clone()
            .unwrap_or_else(|| "ctrl+o transcript · /help".to_owned());
        let gap = usize::from(width).saturating_sub(left.chars().count() + right.chars().count());
        if gap < 2 {
            return Line::from(Span::styled(truncate(&left, usize::from(width)), dim));
        }
        let hint_style = if self.status.hint.is_some() {
            Style::new().fg(Color::Yellow)
        } else {
            dim
        };
        Line::from(vec![
            Span::styled(left, dim),
            Span::raw(" ".repeat(gap)),
            Span::styled(right, hint_style),
        ])
    }

    /// Draws into `area` (bottom rows win when it is too short); returns the cursor position.
    pub fn render(&self, area: Rect, buf: &mut Buffer) -> Position {
        let (lines, cursor) = self.lines(area.width);
        render_lines(lines, cursor, area, buf)
    }
}

/// Draws rows from [`LiveView::lines`] into `area` (bottom rows win when it is too short);
/// returns the cursor position.
pub fn render_lines(
    lines: Vec<Line<'static>>,
    cursor: Position,
    area: Rect,
    buf: &mut Buffer,
) -> Position {
    let skip = lines.len().saturating_sub(usize::from(area.height));
    let skip16 = u16::try_from(skip).unwrap_or(u16::MAX);
    let shown: Vec<Line<'static>> = lines.into_iter().skip(skip).collect();
    Paragraph::new(shown).render(area, buf);
    Position::new(
        area.x + cursor.x.min(area.width.saturating_sub(1)),
        area.y
            + cursor
                .y
                .saturating_sub(skip16)
                .min(area.height.saturating_sub(1)),
    )
}

/// Rows shown of the slash-command popup (it scrolls with the choice).
const POPUP_ROWS: usize = 8;

/// The slash commands matching what is typed: name and argument, then what it does.
fn command_popup(
    matches: &[crate::app::PopupEntry],
    choice: usize,
    width: u16,
) -> Vec<Line<'static>> {
    let first = choice.saturating_sub(POPUP_ROWS - 1);
    let more = matches.len().saturating_sub(first + POPUP_ROWS);
    let mut rows: Vec<Line<'static>> = matches
        .iter()
        .enumerate()
        .skip(first)
        .take(POPUP_ROWS)
        .map(|(i, m)| {
            let usage = format!("{} {}", m.name, m.arg);
            let source = m
                .source
                .as_ref()
                .map(|s| format!(" ({s})"))
                .unwrap_or_default();
            // Names and descriptions of custom commands come from files in the repository.
            let text =
                crate::wrap::printable(&format!("  {:<16}{}{source}", usage.trim_end(), m.what));
            let row = truncate(&text, usize::from(width));
            let style = if i == choice {
                Style::new().add_modifier(Modifier::REVERSED)
            } else {
                Style::new().fg(Color::DarkGray)
            };
            Line::from(Span::styled(row, style))
        })
        .collect();
    if more > 0 {
        rows.push(Line::from(Span::styled(
            format!("  … +{more} more"),
            Style::new().fg(Color::DarkGray),
        )));
    }
    rows
}

fn approval_lines(a: &PendingApproval, choice: usize, width: u16) -> Vec<Line<'static>> {
    let mut out = wrap_line(
        &Line::from(Span::styled(
            format!("Allow {}?", a.title),
            Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        )),
        width,
        2,
    );
    if let Some(reason) = &a.reason {
        out.extend(wrap_line(
            &Line::from(Span::styled(
                format!("  ! {reason}"),
                Style::new().fg(Color::Yellow),
            )),
            width,
            4,
        ));
    }
    let mut preview = match &a.preview {
        ApprovalPreview::Diff(d) => render_diff(d, width, PREVIEW_ROWS, DiffStage::Proposed),
        ApprovalPreview::Command { command } => command
            .lines()
            .flat_map(|l| wrap_line(&Line::from(format!("  $ {l}")), width, 4))
            .collect(),
        ApprovalPreview::Text { text } => text
            .lines()
            .flat_map(|l| wrap_line(&Line::from(format!("  {l}")), width, 2))
            .collect(),
    };
    preview.truncate(PREVIEW_ROWS + 2);
    out.extend(preview);
    let mut spans = vec![Span::raw("  ")];
    for (i, decision) in a.choices().into_iter().enumerate() {
        let style = if i == choice {
            Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD)
        } else {
            Style::new()
        };
        if i > 0 {
            spans.push(Span::raw(" "));
        }
        spans.push(Span::styled(
            format!(" {} ", choice_label(a, decision)),
            style,
        ));
    }
    out.extend(wrap_line(&Line::from(spans), width, 2));
    out.push(Line::from(Span::styled(
        "  ←/→ select · enter confirm",
        Style::new().fg(Color::DarkGray),
    )));
    out
}

/// A choice as the dialog lists it. "Always" has no key of its own: a letter typed as part of
/// a word must never allow a tool for the rest of the session. Leaving plan mode says what
/// each answer does (the core starts `default` on "once", `auto-edit` on "always").
fn choice_label(a: &PendingApproval, decision: ApprovalDecision) -> String {
    if a.tool_name == EXIT_PLAN_MODE {
        return match decision {
            ApprovalDecision::AllowOnce => "y Yes, start working".into(),
            ApprovalDecision::AllowAlways => "Yes, and auto-accept edits".into(),
            _ => "n No, keep planning".into(),
        };
    }
    match decision {
        ApprovalDecision::AllowOnce => "y Allow once".into(),
        ApprovalDecision::AllowAlways => match &a.always_scope {
            Some(scope) => format!("Always allow `{scope}`"),
            None => format!("Always allow {}", a.tool_name),
        },
        ApprovalDecision::AllowServerAlways => match &a.server {
            Some(server) => format!("Always allow server {server}"),
            None => format!("Always allow {}", a.tool_name),
        },
        _ => "n Reject".into(),
    }
}

/// A duration for people: `12s`, `3m 05s`.
pub(crate) fn elapsed(secs: u64) -> String {
    if secs < 60 {
        format!("{secs}s")
    } else {
        format!("{}m {:02}s", secs / 60, secs % 60)
    }
}

fn tokens(n: u64) -> String {
    if n < 1000 {
        n.to_string()
    } else {
        format!("{:.1}k", n as f64 / 1000.0)
    }
}

/// A prompt waiting for the running task (sent into it, or queued after it): its first line,
/// how many more, and what happens to it.
fn waiting_line(label: &'static str, text: &str, note: &'static str, width: u16) -> Line<'static> {
    let first = text.lines().next().unwrap_or_default();
    let more = text.lines().count().saturating_sub(1);
    let more = if more > 0 {
        format!(" (+{more} lines)")
    } else {
        String::new()
    };
    let room = usize::from(width).saturating_sub(label.chars().count() + note.chars().count());
    Line::from(vec![
        Span::styled(label, Style::new().fg(Color::Yellow)),
        Span::styled(
            truncate(&format!("{first}{more}"), room),
            Style::new().fg(Color::DarkGray),
        ),
        Span::styled(note, Style::new().fg(Color::DarkGray)),
    ])
}
