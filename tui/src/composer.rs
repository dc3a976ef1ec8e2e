//! The prompt editor: multi-line text, a cursor, paste, and Up/Down prompt history.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// Rows the composer may take before it scrolls.
const MAX_ROWS: usize = 8;

/// Editable prompt text with history.
#[derive(Debug, Clone, Default)]
pub struct Composer {
    text: String,
    /// Byte offset of the cursor in `text` (always on a char boundary).
    cursor: usize,
    history: Vec<String>,
    /// Index into `history` while browsing it.
    browsing: Option<usize>,
    draft: String,
}

impl Composer {
    /// An empty composer.
    pub fn new() -> Self {
        Self::default()
    }

    /// The current text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether nothing has been typed.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Types a character at the cursor.
    pub fn insert_char(&mut self, c: char) {
        self.text.insert(self.cursor, c);
        self.cursor += c.len_utf8();
        self.browsing = None;
    }

    /// Inserts pasted text (line endings normalised, tabs kept as spaces).
    pub fn insert_str(&mut self, s: &str) {
        let clean = s
            .replace("\r\n", "\n")
            .replace('\r', "\n")
            .replace('\t', "    ");
        self.text.insert_str(self.cursor, &clean);
        self.cursor += clean.len();
        self.browsing = None;
    }

    /// Deletes the character before the cursor.
    pub fn backspace(&mut self) {
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
            self.text.remove(self.cursor);
        }
    }

    /// Deletes the character under the cursor.
    pub fn delete(&mut self) {
        if self.cursor < self.text.len() {
            self.text.remove(self.cursor);
        }
    }

    /// Moves the cursor one character left.
    pub fn left(&mut self) {
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
        }
    }

    /// Moves the cursor one character right.
    pub fn right(&mut self) {
        if let Some(c) = self.text[self.cursor..].chars().next() {
            self.cursor += c.len_utf8();
        }
    }

    /// Moves to the start of the current line.
    pub fn home(&mut self) {
        self.cursor = self.line_start();
    }

    /// Moves to the end of the current line.
    pub fn end(&mut self) {
        self.cursor = self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i);
    }

    /// Up: the line above, or the previous prompt when on the first line.
    pub fn up(&mut self) {
        let start = self.line_start();
        if start == 0 {
            self.history_prev();
            return;
        }
        let col = self.text[start..self.cursor].chars().count();
        let prev_start = self.text[..start - 1].rfind('\n').map_or(0, |i| i + 1);
        self.cursor = advance(&self.text, prev_start, col, start - 1);
    }

    /// Down: the line below, or the next prompt when on the last line.
    pub fn down(&mut self) {
        let Some(nl) = self.text[self.cursor..].find('\n').map(|i| self.cursor + i) else {
            self.history_next();
            return;
        };
        let col = self.text[self.line_start()..self.cursor].chars().count();
        let next_end = self.text[nl + 1..]
            .find('\n')
            .map_or(self.text.len(), |i| nl + 1 + i);
        self.cursor = advance(&self.text, nl + 1, col, next_end);
    }

    /// Takes the text for sending and remembers it in the history.
    pub fn submit(&mut self) -> String {
        let text = std::mem::take(&mut self.text);
        self.cursor = 0;
        self.browsing = None;
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        text
    }

    /// Clears the text (history is kept).
    pub fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
        self.browsing = None;
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn history_prev(&mut self) {
        let next = match self.browsing {
            None if self.history.is_empty() => return,
            None => {
                self.draft = self.text.clone();
                self.history.len() - 1
            }
            Some(0) => return,
            Some(i) => i - 1,
        };
        self.browsing = Some(next);
        self.set_text(self.history[next].clone());
    }

    fn history_next(&mut self) {
        let Some(i) = self.browsing else { return };
        if i + 1 < self.history.len() {
            self.browsing = Some(i + 1);
            self.set_text(self.history[i + 1].clone());
        } else {
            self.browsing = None;
            let draft = std::mem::take(&mut self.draft);
            self.set_text(draft);
        }
    }

    fn set_text(&mut self, text: String) {
        self.text = text;
        self.cursor = self.text.len();
    }

    /// Renders at `width` (hard-wrapped so the cursor maps exactly); returns the rows and the
    /// cursor's (column, row) inside them. At most a few rows: the cursor's row stays visible.
    pub fn render(&self, width: u16, placeholder: &str) -> (Vec<Line<'static>>, (u16, u16)) {
        let prompt = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
        if self.text.is_empty() {
            let line = Line::from(vec![
                Span::styled("› ", prompt),
                Span::styled(placeholder.to_string(), Style::new().fg(Color::DarkGray)),
            ]);
            return (vec![line], (2, 0));
        }
        let width = usize::from(width.max(4));
        let mut rows: Vec<String> = vec![String::new()];
        let mut col = 2usize;
        let mut cursor = (2usize, 0usize);
        for (i, c) in self.text.char_indices() {
            if i == self.cursor {
                cursor = (col, rows.len() - 1);
            }
            if c == '\n' {
                rows.push(String::new());
                col = 2;
                continue;
            }
            let w = c.width().unwrap_or(0);
            if col + w > width {
                rows.push(String::new());
                col = 2;
            }
            if let Some(r) = rows.last_mut() {
                r.push(c);
            }
            col += w;
        }
        if self.cursor == self.text.len() {
            if col >= width {
                rows.push(String::new());
                col = 2;
            }
            cursor = (col, rows.len() - 1);
        }
        let first = cursor.1.saturating_sub(MAX_ROWS - 1);
        let lines = rows
            .into_iter()
            .enumerate()
            .skip(first)
            .take(MAX_ROWS)
            .map(|(i, r)| {
                let p = if i == 0 { "› " } else { "  " };
                Line::from(vec![Span::styled(p, prompt), Span::raw(r)])
            })
            .collect();
        let x = u16::try_from(cursor.0).unwrap_or(u16::MAX);
        let y = u16::try_from(cursor.1 - first).unwrap_or(0);
        (lines, (x, y))
    }
}

/// The byte offset `col` characters after `start`, not beyond `limit`.
fn advance(text: &str, start: usize, col: usize, limit: usize) -> usize {
    text[start..limit]
        .char_indices()
        .nth(col)
        .map_or(limit, |(i, _)| start + i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn up_on_the_first_line_recalls_the_previous_prompt_and_down_restores_the_draft() {
        let mut c = Composer::new();
        c.insert_str("first");
        c.submit();
        c.insert_str("second");
        c.submit();
        c.insert_str("draft");
        c.up();
        assert_eq!(c.text(), "second");
        c.up();
        assert_eq!(c.text(), "first");
        c.down();
        c.down();
        assert_eq!(c.text(), "draft");
    }

    #[test]
    fn up_and_down_move_between_lines_of_a_multi_line_prompt() {
        let mut c = Composer::new();
        c.insert_str("abc\nde");
        c.up();
        c.insert_char('X');
        assert_eq!(c.text(), "abXc\nde");
        c.down();
        c.insert_char('Y');
        assert_eq!(c.text(), "abXc\ndeY");
    }

    #[test]
    fn pasted_crlf_becomes_newlines_and_the_cursor_follows_wrapping() {
        let mut c = Composer::new();
        c.insert_str("ab\r\ncdefgh");
        let (lines, cursor) = c.render(6, "");
        let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        assert_eq!(text, vec!["› ab", "  cdef", "  gh"]);
        assert_eq!(cursor, (4, 2));
    }
}
