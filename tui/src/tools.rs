//! Tool groups: one row per call, grouped by batch; full and compact renderings.

use std::time::Instant;

use corvid_protocol::{FileDiff, ToolKind, ToolOutput};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use similar::{ChangeTag, TextDiff};

mod expanded;
mod shell;

use shell::shown_text;
pub use shell::{command_failed, command_output};

use crate::live::elapsed;
use crate::wrap::{truncate, wrap_line};

/// Braille spinner frames for preparing and running calls.
const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// Diff lines shown per file before the rest is summarised.
const MAX_DIFF_LINES: usize = 24;
/// Shell output lines shown (the tail).
const SHELL_TAIL: usize = 5;
/// How much of a running command's output a row keeps for its live tail.
const MAX_LIVE_BYTES: usize = 8 * 1024;

/// The spinner glyph for an animation frame.
pub fn spinner(frame: usize) -> &'static str {
    SPINNER[frame % SPINNER.len()]
}

/// Where one call is in its lifecycle, as far as the UI cares.
#[derive(Debug, Clone, PartialEq)]
pub enum CallState {
    /// The model named the tool; arguments still streaming.
    Preparing,
    /// Executing with complete arguments.
    Running,
    /// Waiting for the user's approval.
    AwaitingApproval,
    Completed(ToolOutput),
    Failed(ToolOutput),
    /// The user rejected it; it did not run (its result text is meant for the model).
    Rejected,
}

/// One row of a tool group.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRow {
    pub call_id: String,
    pub tool_name: String,
    pub title: String,
    pub kind: ToolKind,
    pub state: CallState,
    /// What a running command printed so far (its end only), shown under the row until the
    /// call finishes.
    pub live: String,
    /// When the call started running, for the time shown beside a running row.
    pub started: Option<Instant>,
}

impl CallRow {
    /// A row with nothing printed yet.
    pub fn new(
        call_id: impl Into<String>,
        tool_name: impl Into<String>,
        title: impl Into<String>,
        kind: ToolKind,
        state: CallState,
    ) -> Self {
        Self {
            call_id: call_id.into(),
            tool_name: tool_name.into(),
            title: title.into(),
            kind,
            state,
            live: String::new(),
            started: None,
        }
    }

    /// Adds what the running call printed, keeping only the end that can be shown.
    pub fn push_live(&mut self, text: &str) {
        self.live.push_str(text);
        if self.live.len() > MAX_LIVE_BYTES {
            let mut start = self.live.len() - MAX_LIVE_BYTES;
            while !self.live.is_char_boundary(start) {
                start += 1;
            }
            self.live.drain(..start);
        }
    }

    fn is_active(&self) -> bool {
        matches!(
            self.state,
            CallState::Preparing | CallState::Running | CallState::AwaitingApproval
        )
    }
}

/// The calls of one model turn, and the label the fast model gave them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Batch {
    pub calls: Vec<CallRow>,
    pub completed: bool,
    pub label: Option<String>,
    /// Asked for approval or had a failure: such a batch is never merged (SPEC §7.4).
    pub attention: bool,
    /// The ids `BatchCompleted` listed (suppressed calls included), which summaries refer to.
    pub completed_ids: Vec<String>,
}

impl Batch {
    /// Whether a summary of the calls `ids` labels this batch.
    pub fn is_labelled_by(&self, ids: &[String]) -> bool {
        labels_batch(ids, &self.completed_ids)
    }
}

/// Whether a summary of the calls `summary_ids` labels the batch that completed `batch_ids`.
///
/// A summary names only the calls it describes (it leaves out `todo_write` and rejected
/// calls), so it labels the batch that contains all of them, not only an identical one.
pub fn labels_batch(summary_ids: &[String], batch_ids: &[String]) -> bool {
    !summary_ids.is_empty() && summary_ids.iter().all(|id| batch_ids.contains(id))
}

/// One or more batches shown as one group (several only when merged in compact mode).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolGroup {
    pub batches: Vec<Batch>,
    pub compact: bool,
}

impl ToolGroup {
    /// All calls of all batches, in order.
    pub fn calls(&self) -> impl Iterator<Item = &CallRow> {
        self.batches.iter().flat_map(|b| b.calls.iter())
    }

    /// The call with this id, for state updates.
    pub fn call_mut(&mut self, id: &str) -> Option<&mut CallRow> {
        self.batches
            .iter_mut()
            .flat_map(|b| b.calls.iter_mut())
            .find(|c| c.call_id == id)
    }

    /// Whether any batch of the group asked for approval or failed.
    pub fn needs_attention(&self) -> bool {
        self.batches.iter().any(|b| b.attention)
    }

    /// The compact header's label: the first contributing batch that has one.
    pub fn label(&self) -> Option<&str> {
        self.batches.iter().find_map(|b| b.label.as_deref())
    }

    /// Renders the group at `width`; `frame` animates spinners.
    pub fn render(&self, width: u16, frame: usize) -> Vec<Line<'static>> {
        self.render_at(width, frame, None)
    }

    /// Renders the group as the live area shows it at `now`: running calls also say how long
    /// they have been running.
    pub fn render_at(&self, width: u16, frame: usize, now: Option<Instant>) -> Vec<Line<'static>> {
        if self.compact {
            self.render_compact(width, frame, now)
        } else {
            self.render_full(width, frame, now)
        }
    }

    fn render_full(&self, width: u16, frame: usize, now: Option<Instant>) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        for call in self.calls() {
            render_call(call, width, frame, now, true, &mut out);
        }
        out
    }

    fn render_compact(&self, width: u16, frame: usize, now: Option<Instant>) -> Vec<Line<'static>> {
        let n = self.calls().count();
        let running = self.calls().any(CallRow::is_active);
        let failed = self
            .calls()
            .any(|c| matches!(c.state, CallState::Failed(_) | CallState::Rejected));
        let (icon, icon_style) = if running {
            (spinner(frame), Style::new().fg(Color::Cyan))
        } else if failed {
            ("✗", Style::new().fg(Color::Red))
        } else {
            ("✓", Style::new().fg(Color::Green))
        };
        let header = match self.label() {
            Some(label) => format!("{label} · {n} tool{}", if n == 1 { "" } else { "s" }),
            None => format!("Tool × {n}"),
        };
        let head = Line::from(vec![
            Span::styled(format!("{icon} "), icon_style),
            Span::styled(header, Style::new().add_modifier(Modifier::BOLD)),
        ]);
        let mut out = wrap_line(&head, width, 2);
        for call in self.calls() {
            // Finished calls fold into the header; what is running or went wrong stays visible.
            if call.is_active() || matches!(call.state, CallState::Failed(_) | CallState::Rejected)
            {
                render_call(call, width, frame, now, false, &mut out);
            }
        }
        out
    }
}

fn render_call(
    call: &CallRow,
    width: u16,
    frame: usize,
    now: Option<Instant>,
    details: bool,
    out: &mut Vec<Line<'static>>,
) {
    let (icon, style) = match &call.state {
        CallState::Preparing => (spinner(frame), Style::new().fg(Color::DarkGray)),
        CallState::Running => (spinner(frame), Style::new().fg(Color::Cyan)),
        CallState::AwaitingApproval => ("•", Style::new().fg(Color::Yellow)),
        CallState::Completed(_) => ("✓", Style::new().fg(Color::Green)),
        CallState::Failed(_) | CallState::Rejected => ("✗", Style::new().fg(Color::Red)),
    };
    let title_style = match call.state {
        CallState::Preparing => Style::new().fg(Color::DarkGray),
        _ => Style::new().add_modifier(Modifier::BOLD),
    };
    let mut spans = vec![
        Span::raw("  "),
        Span::styled(format!("{icon} "), style),
        Span::styled(call.title.clone(), title_style),
    ];
    match &call.state {
        CallState::Preparing => spans.push(Span::styled(" …", Style::new().fg(Color::DarkGray))),
        CallState::AwaitingApproval => spans.push(Span::styled(
            " · awaiting approval",
            Style::new().fg(Color::Yellow),
        )),
        CallState::Completed(o) | CallState::Failed(o) => {
            let failed = matches!(call.state, CallState::Failed(_));
            if let Some(s) = short_result(call.kind, o, failed) {
                let st = if failed {
                    Style::new().fg(Color::Red)
                } else {
                    Style::new().fg(Color::DarkGray)
                };
                let room = usize::from(width)
                    .saturating_sub(call.title.chars().count() + 8)
                    .max(20);
                spans.push(Span::styled(format!(" · {}", truncate(&s, room)), st));
            }
        }
        CallState::Rejected => {
            spans.push(Span::styled(" · Rejected", Style::new().fg(Color::Red)));
        }
        CallState::Running => {
            let running_for = now
                .zip(call.started)
                .map(|(now, started)| now.saturating_duration_since(started).as_secs());
            if let Some(secs) = running_for.filter(|&secs| secs >= 1) {
                spans.push(Span::styled(
                    format!(" · {}", elapsed(secs)),
                    Style::new().fg(Color::DarkGray),
                ));
            }
        }
    }
    out.extend(wrap_line(&Line::from(spans), width, 4));
    if !details {
        return;
    }
    if call.state == CallState::Running && !call.live.is_empty() {
        out.extend(live_tail(&call.live, width));
    }
    if let CallState::Completed(o) | CallState::Failed(o) = &call.state {
        for d in &o.diffs {
            out.extend(render_diff(d, width, MAX_DIFF_LINES, DiffStage::Applied));
        }
        // A one-line output is already in the row.
        let shown = shown_text(call.kind, o);
        if call.kind == ToolKind::Execute && o.diffs.is_empty() && shown.trim().lines().count() > 1
        {
            out.extend(shell_tail(&shown, width));
        }
    }
}

/// A one-line result: the text's (see [`short_text`]), then how many images the tool returned
/// (the terminal cannot show them; ACP editors do).
fn short_result(kind: ToolKind, o: &ToolOutput, failed: bool) -> Option<String> {
    let images = match o.images.len() {
        0 => None,
        1 => Some("1 image".to_owned()),
        n => Some(format!("{n} images")),
    };
    match (short_text(kind, o, failed), images) {
        (Some(text), Some(images)) => Some(format!("{text}, {images}")),
        (text, images) => text.or(images),
    }
}

/// The first line for failures, a line count or the only line otherwise.
fn short_text(kind: ToolKind, o: &ToolOutput, failed: bool) -> Option<String> {
    let shown = shown_text(kind, o);
    let text = shown.trim();
    if text.is_empty() {
        // A command that failed silently still says how it ended.
        return (failed && kind == ToolKind::Execute)
            .then(|| o.raw.get("exit_code").and_then(|c| c.as_i64()))
            .flatten()
            .map(|code| format!("exit code {code}"));
    }
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())?
        .trim()
        .to_string();
    let count = text.lines().count();
    if kind == ToolKind::Execute {
        // The tail is shown under the row; a failure's last line is the useful one.
        let last = text.lines().rev().find(|l| !l.trim().is_empty())?.trim();
        return (failed || count == 1).then(|| last.to_string());
    }
    // A reasoning step (a subagent's report) reads best as its first line.
    if failed || count == 1 || kind == ToolKind::Think {
        return Some(first);
    }
    match kind {
        ToolKind::Edit if !o.diffs.is_empty() => None,
        _ => Some(format!("{count} lines")),
    }
}

/// The last lines of a running command's output. A carriage return starts its line over, as
/// in a terminal, so progress bars show their latest state; the count of earlier lines is
/// left out, since only the end of the output is kept.
fn live_tail(text: &str, width: u16) -> Vec<Line<'static>> {
    let lines: Vec<&str> = text
        .trim_end()
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .map(|l| l.rsplit('\r').next().unwrap_or(l))
        .collect();
    let skip = lines.len().saturating_sub(SHELL_TAIL);
    tail_lines(&lines[skip..], width)
}

fn shell_tail(text: &str, width: u16) -> Vec<Line<'static>> {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let skip = lines.len().saturating_sub(SHELL_TAIL);
    let dim = Style::new().fg(Color::DarkGray);
    let mut out = Vec::new();
    if skip > 0 {
        out.push(Line::from(Span::styled(
            format!(
                "    … {skip} earlier line{}",
                if skip == 1 { "" } else { "s" }
            ),
            dim,
        )));
    }
    out.extend(tail_lines(&lines[skip..], width));
    out
}

/// Output lines under a row, dimmed behind a gutter.
fn tail_lines(lines: &[&str], width: u16) -> Vec<Line<'static>> {
    let dim = Style::new().fg(Color::DarkGray);
    let mut out = Vec::new();
    for l in lines {
        let line = Line::from(vec![
            Span::styled("    │ ", dim),
            Span::styled(l.to_string(), dim),
        ]);
        out.extend(wrap_line(&line, width, 6));
    }
    out
}

/// Whether a diff shows a change still to be approved or one already made (its header's tense).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffStage {
    /// In the approval dialog: nothing was written yet.
    Proposed,
    /// On a finished card.
    Applied,
}

/// A coloured unified diff of one file, at most `max` changed/context lines.
pub fn render_diff(d: &FileDiff, width: u16, max: usize, stage: DiffStage) -> Vec<Line<'static>> {
    let old = d.old_text.as_deref().unwrap_or("");
    let diff = TextDiff::from_lines(old, d.new_text.as_str());
    let (mut added, mut removed) = (0usize, 0usize);
    let mut body = Vec::new();
    for (i, group) in diff.grouped_ops(2).iter().enumerate() {
        if i > 0 {
            body.push(Line::from(Span::styled(
                "    ⋮",
                Style::new().fg(Color::DarkGray),
            )));
        }
        for op in group {
            for change in diff.iter_changes(op) {
                let (sign, style) = match change.tag() {
                    ChangeTag::Delete => {
                        removed += 1;
                        ("-", Style::new().fg(Color::Red))
                    }
                    ChangeTag::Insert => {
                        added += 1;
                        ("+", Style::new().fg(Color::Green))
                    }
                    ChangeTag::Equal => (" ", Style::new().fg(Color::DarkGray)),
                };
                let lineno = change
                    .new_index()
                    .or(change.old_index())
                    .map_or(0, |n| n + 1);
                let text = change.value().trim_end_matches(['\n', '\r']).to_string();
                body.push(Line::from(vec![
                    Span::styled(
                        format!("    {lineno:>4} "),
                        Style::new().fg(Color::DarkGray),
                    ),
                    Span::styled(format!("{sign} {text}"), style),
                ]));
            }
        }
    }
    let verb = match (stage, d.old_text.is_none()) {
        (DiffStage::Proposed, true) => "Create",
        (DiffStage::Proposed, false) => "Change",
        (DiffStage::Applied, true) => "Created",
        (DiffStage::Applied, false) => "Changed",
    };
    let head = Line::from(Span::styled(
        format!("    {verb} {} (+{added} -{removed})", d.path.display()),
        Style::new().fg(Color::DarkGray),
    ));
    let mut out = wrap_line(&head, width, 6);
    let hidden = body.len().saturating_sub(max);
    for l in body.into_iter().take(max) {
        out.extend(wrap_line(&l, width, 11));
    }
    if hidden > 0 {
        out.push(Line::from(Span::styled(
            format!("    … {hidden} more diff lines"),
            Style::new().fg(Color::DarkGray),
        )));
    }
    out
}

#[cfg(test)]
mod tests {
    use corvid_protocol::ImageData;
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn a_results_images_are_counted_after_its_text() {
        let image = ImageData {
            media_type: "image/png".into(),
            data_base64: "iVBORw==".into(),
        };
        let with = |text: &str, images: usize| ToolOutput {
            images: vec![image.clone(); images],
            ..ToolOutput::text(text)
        };
        assert_eq!(
            [
                short_result(ToolKind::Read, &with("a\nb", 1), false),
                short_result(ToolKind::Read, &with("", 2), false),
                short_result(ToolKind::Read, &with("one", 0), false),
            ],
            [
                Some("2 lines, 1 image".to_owned()),
                Some("2 images".to_owned()),
                Some("one".to_owned()),
            ]
        );
    }
}
