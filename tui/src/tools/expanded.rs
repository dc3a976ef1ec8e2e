//! A tool group with nothing left out, for the transcript view (Ctrl+O): every call's row,
//! every line of every diff and the whole output, whatever the display mode was.

use ratatui::style::{Color, Style};
use ratatui::text::Line;

use super::{CallState, DiffStage, ToolGroup, render_call, render_diff, shown_text};
use crate::wrap::wrap_line;

impl ToolGroup {
    /// Every call of the group in full: its row, all its diffs, all its output.
    pub fn render_expanded(&self, width: u16) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        if let Some(label) = self.label() {
            out.push(Line::styled(
                format!("● {label}"),
                Style::new().fg(Color::DarkGray),
            ));
        }
        for call in self.calls() {
            render_call(call, width, 0, None, false, &mut out);
            let (CallState::Completed(o) | CallState::Failed(o)) = &call.state else {
                continue;
            };
            for d in &o.diffs {
                out.extend(render_diff(d, width, usize::MAX, DiffStage::Applied));
            }
            let shown = shown_text(call.kind, o);
            // A one-line output is already in the row.
            if shown.trim().lines().count() <= 1 {
                continue;
            }
            let dim = Style::new().fg(Color::DarkGray);
            for line in shown.trim_end().lines() {
                out.extend(wrap_line(
                    &Line::styled(format!("    {line}"), dim),
                    width,
                    4,
                ));
            }
        }
        out
    }
}
