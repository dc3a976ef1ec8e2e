//! History cells: finished transcript items, kept as source data so they can be re-rendered
//! at a new width, and rendered once into the terminal's scrollback.

use corvid_protocol::{Todo, TodoStatus};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::markdown;
use crate::tools::ToolGroup;
use crate::wrap::{truncate, wrap_line};

/// Thought lines kept when a thought is committed (they are a hint, not the answer).
const THOUGHT_LINES: usize = 3;

/// What kind of notice a [`HistoryCell::Notice`] is; decides its colour and icon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeKind {
    /// Retry or fallback: the task goes on.
    Retry,
    /// Something went wrong and the task ended (or a non-fatal warning).
    Error,
    Warning,
    /// The user cancelled.
    Cancelled,
    /// Neutral information (command output such as `/help`).
    Info,
}

/// One finished transcript item.
#[derive(Debug, Clone, PartialEq)]
pub enum HistoryCell {
    /// What the user sent.
    UserPrompt(String),
    /// One finished markdown block (or more) of an assistant answer.
    Assistant(String),
    /// The model's reasoning, shortened and dim.
    Thought(String),
    /// A finished tool group.
    Tools(ToolGroup),
    /// The dim `● <label>` line of a tool-use summary.
    Summary(String),
    /// Retry, fallback, error, cancellation and command output.
    Notice(NoticeKind, String),
    /// The todo plan as a checklist.
    Plan(Vec<Todo>),
}

impl HistoryCell {
    /// Whether a blank row separates this cell from the one before it.
    /// Summary lines belong to the group above them.
    pub fn gap_before(&self) -> bool {
        !matches!(self, Self::Summary(_))
    }

    /// Renders the cell at `width` columns (already wrapped: one `Line` per terminal row).
    pub fn render(&self, width: u16) -> Vec<Line<'static>> {
        match self {
            Self::UserPrompt(text) => user_prompt(text, width),
            Self::Assistant(md) => markdown::render_wrapped(md, width),
            Self::Thought(text) => thought(text, width),
            Self::Tools(group) => group.render(width, 0),
            Self::Summary(label) => {
                let line = Line::from(Span::styled(
                    format!("● {label}"),
                    Style::new().fg(Color::DarkGray),
                ));
                wrap_line(&line, width, 2)
            }
            Self::Notice(kind, text) => notice(*kind, text, width),
            Self::Plan(todos) => plan(todos, width),
        }
    }

    /// Rows this cell occupies in scrollback, including its separating blank row.
    pub fn render_with_gap(&self, width: u16) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        if self.gap_before() {
            lines.push(Line::default());
        }
        lines.extend(self.render(width));
        lines
    }
}

fn user_prompt(text: &str, width: u16) -> Vec<Line<'static>> {
    let style = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
    text.lines()
        .enumerate()
        .flat_map(|(i, l)| {
            let prefix = if i == 0 { "› " } else { "  " };
            let line = Line::from(vec![
                Span::styled(prefix, style),
                Span::styled(l.to_string(), Style::new().add_modifier(Modifier::BOLD)),
            ]);
            wrap_line(&line, width, 2)
        })
        .collect()
}

fn thought(text: &str, width: u16) -> Vec<Line<'static>> {
    let style = Style::new()
        .fg(Color::DarkGray)
        .add_modifier(Modifier::ITALIC);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().take(THOUGHT_LINES).enumerate() {
        let prefix = if i == 0 { "∴ " } else { "  " };
        let line = Line::from(Span::styled(
            format!(
                "{prefix}{}",
                truncate(l.trim(), usize::from(width).saturating_sub(2))
            ),
            style,
        ));
        out.push(line);
    }
    if lines.len() > THOUGHT_LINES {
        out.push(Line::from(Span::styled(
            format!("  … {} more lines of thinking", lines.len() - THOUGHT_LINES),
            style,
        )));
    }
    out
}

fn notice(kind: NoticeKind, text: &str, width: u16) -> Vec<Line<'static>> {
    let (icon, style) = match kind {
        NoticeKind::Retry => ("↻ ", Style::new().fg(Color::Yellow)),
        NoticeKind::Error => ("✗ ", Style::new().fg(Color::Red)),
        NoticeKind::Warning => ("! ", Style::new().fg(Color::Yellow)),
        NoticeKind::Cancelled => ("■ ", Style::new().fg(Color::DarkGray)),
        NoticeKind::Info => ("", Style::new()),
    };
    text.lines()
        .enumerate()
        .flat_map(|(i, l)| {
            let prefix = if i == 0 { icon } else { "  " };
            let prefix = if icon.is_empty() { "" } else { prefix };
            let line = Line::from(Span::styled(format!("{prefix}{l}"), style));
            wrap_line(&line, width, if icon.is_empty() { 0 } else { 2 })
        })
        .collect()
}

fn plan(todos: &[Todo], width: u16) -> Vec<Line<'static>> {
    let done = todos
        .iter()
        .filter(|t| t.status == TodoStatus::Completed)
        .count();
    let mut out = vec![Line::from(vec![
        Span::styled("Plan", Style::new().add_modifier(Modifier::BOLD)),
        Span::styled(
            format!(" · {done}/{} done", todos.len()),
            Style::new().fg(Color::DarkGray),
        ),
    ])];
    for t in todos {
        let (mark, style) = match t.status {
            TodoStatus::Completed => (
                "  ☒ ",
                Style::new()
                    .fg(Color::DarkGray)
                    .add_modifier(Modifier::CROSSED_OUT),
            ),
            TodoStatus::InProgress => (
                "  ☐ ",
                Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            ),
            TodoStatus::Pending => ("  ☐ ", Style::new()),
        };
        let line = Line::from(vec![
            Span::raw(mark),
            Span::styled(t.content.clone(), style),
        ]);
        out.extend(wrap_line(&line, width, 4));
    }
    out
}
