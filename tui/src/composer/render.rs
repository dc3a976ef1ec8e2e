//! Drawing the composer: hard-wrapped rows, the cursor, the search line and the markers for
//! rows left out.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

use super::{Composer, MAX_ROWS, PROMPT_COLS};

impl Composer {
    /// Renders at `width` (hard-wrapped so the cursor maps exactly); returns the rows and the
    /// cursor's (column, row) inside them. At most [`MAX_ROWS`] rows of text around the
    /// cursor, with a `… +N lines` marker for the rows left out above and below.
    pub fn render(&self, width: u16, placeholder: &str) -> (Vec<Line<'static>>, (u16, u16)) {
        self.width.set(width);
        let prompt = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
        let dim = Style::new().fg(Color::DarkGray);
        let mut head = Vec::new();
        if let Some(s) = &self.search {
            let found = if s.hit.is_some() || s.query.is_empty() {
                ""
            } else {
                " (no match)"
            };
            head.push(Line::from(Span::styled(
                format!(
                    "search: {}{found} · ctrl+r older · enter keep · esc cancel",
                    s.query
                ),
                Style::new().fg(Color::Yellow),
            )));
        }
        if self.text.is_empty() {
            let offset = u16::try_from(head.len()).unwrap_or(0);
            head.push(Line::from(vec![
                Span::styled("› ", prompt),
                Span::styled(placeholder.to_string(), dim),
            ]));
            return (head, (2, offset));
        }
        let width = usize::from(width.max(4));
        let mut rows: Vec<String> = vec![String::new()];
        let mut col = PROMPT_COLS;
        let mut cursor = (PROMPT_COLS, 0usize);
        for (i, c) in self.text.char_indices() {
            if i == self.cursor {
                cursor = (col, rows.len() - 1);
            }
            if c == '\n' {
                rows.push(String::new());
                col = PROMPT_COLS;
                continue;
            }
            let w = c.width().unwrap_or(0);
            if col + w > width {
                rows.push(String::new());
                col = PROMPT_COLS;
            }
            if let Some(r) = rows.last_mut() {
                r.push(c);
            }
            col += w;
        }
        if self.cursor == self.text.len() {
            if col >= width {
                rows.push(String::new());
                col = PROMPT_COLS;
            }
            cursor = (col, rows.len() - 1);
        }
        let total = rows.len();
        let first = cursor.1.saturating_sub(MAX_ROWS - 1);
        let shown = total.min(first + MAX_ROWS) - first;
        let hidden_below = total - first - shown;
        let mut lines = head;
        if first > 0 {
            lines.push(Line::from(Span::styled(format!("  … +{first} lines"), dim)));
        }
        let top = lines.len();
        lines.extend(
            rows.into_iter()
                .enumerate()
                .skip(first)
                .take(MAX_ROWS)
                .map(|(i, r)| {
                    let p = if i == 0 { "› " } else { "  " };
                    Line::from(vec![Span::styled(p, prompt), Span::raw(r)])
                }),
        );
        if hidden_below > 0 {
            lines.push(Line::from(Span::styled(
                format!("  … +{hidden_below} lines"),
                dim,
            )));
        }
        let x = u16::try_from(cursor.0).unwrap_or(u16::MAX);
        let y = u16::try_from(top + cursor.1 - first).unwrap_or(0);
        (lines, (x, y))
    }
}
