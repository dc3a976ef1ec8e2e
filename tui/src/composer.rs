//! The prompt editor: multi-line text, a cursor, readline-style editing, paste, and prompt
//! history (Up/Down, Ctrl+R search), kept per project across restarts.

use std::cell::Cell;
use std::path::PathBuf;

use unicode_width::UnicodeWidthChar;

use crate::history::PromptHistory;

mod render;

/// Rows of text the composer shows before it scrolls (a marker counts the rows left out).
const MAX_ROWS: usize = 8;
/// Columns of the `› ` prompt in front of every row.
const PROMPT_COLS: usize = 2;

/// An open Ctrl+R search: what was typed, and the entry it found.
#[derive(Debug, Clone, Default)]
struct Search {
    query: String,
    /// Index into the history of the entry shown.
    hit: Option<usize>,
    /// The text before the search began (Esc puts it back).
    before: String,
}

/// Editable prompt text with history.
#[derive(Debug, Clone, Default)]
pub struct Composer {
    text: String,
    /// Byte offset of the cursor in `text` (always on a char boundary).
    cursor: usize,
    history: PromptHistory,
    /// Index into `history` while browsing it.
    browsing: Option<usize>,
    draft: String,
    /// The last text cut by Ctrl+W/K/U, for Ctrl+Y.
    killed: String,
    search: Option<Search>,
    /// The width of the last render: Up and Down move by the rows shown.
    width: Cell<u16>,
}

/// One row as drawn: the byte range of `text` it shows.
#[derive(Debug, Clone, Copy)]
struct Row {
    start: usize,
    end: usize,
}

impl Composer {
    /// An empty composer with an empty history kept in memory only.
    pub fn new() -> Self {
        Self::default()
    }

    /// Loads the prompt history from `path` and appends every sent prompt to it.
    pub fn with_history_file(path: PathBuf) -> Self {
        Self {
            history: PromptHistory::load(path),
            ..Self::default()
        }
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
        if let Some(s) = self.search.as_mut() {
            s.query.push(c);
            self.search_from(None);
            return;
        }
        self.text.insert(self.cursor, c);
        self.cursor += c.len_utf8();
        self.browsing = None;
    }

    /// Inserts pasted text (line endings normalised, tabs kept as spaces).
    pub fn insert_str(&mut self, s: &str) {
        self.end_search(true);
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
        if let Some(s) = self.search.as_mut() {
            s.query.pop();
            self.search_from(None);
            return;
        }
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

    /// The `@path` word the cursor is at the end of: its start and what follows the `@`.
    pub fn at_word(&self) -> Option<(usize, &str)> {
        let before = &self.text[..self.cursor];
        let start = before.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        let after_ok = self.text[self.cursor..]
            .chars()
            .next()
            .is_none_or(char::is_whitespace);
        let query = before[start..].strip_prefix('@')?;
        after_ok.then_some((start, query))
    }

    /// Replaces the text from `start` to the cursor with `with` (a completed `@path`).
    pub fn replace_to_cursor(&mut self, start: usize, with: &str) {
        self.text.replace_range(start..self.cursor, with);
        self.cursor = start + with.len();
        self.browsing = None;
    }

    /// Whether the character before the cursor is `c`.
    pub fn before_cursor_is(&self, c: char) -> bool {
        self.text[..self.cursor].ends_with(c)
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

    /// Moves to the start of the previous word (Alt+B, Ctrl+←).
    pub fn word_left(&mut self) {
        self.cursor = self.word_start();
    }

    /// Moves past the end of the next word (Alt+F, Ctrl+→).
    pub fn word_right(&mut self) {
        let rest = &self.text[self.cursor..];
        let skip = rest.len() - rest.trim_start_matches(|c: char| !is_word(c)).len();
        let word = rest[skip..]
            .find(|c: char| !is_word(c))
            .unwrap_or(rest.len() - skip);
        self.cursor += skip + word;
    }

    /// Cuts the word before the cursor (Ctrl+W, Alt+Backspace).
    pub fn delete_word_left(&mut self) {
        let start = self.word_start();
        self.cut(start, self.cursor);
    }

    /// Cuts from the cursor to the end of the line (Ctrl+K).
    pub fn kill_to_end(&mut self) {
        let end = self.line_end();
        // At the end of a line, Ctrl+K joins the next one (as readline does with the text).
        let end = if end == self.cursor && end < self.text.len() {
            end + 1
        } else {
            end
        };
        self.cut(self.cursor, end);
    }

    /// Cuts from the start of the line to the cursor (Ctrl+U).
    pub fn kill_to_start(&mut self) {
        let start = self.line_start();
        self.cut(start, self.cursor);
    }

    /// Inserts the text cut last (Ctrl+Y).
    pub fn yank(&mut self) {
        let killed = self.killed.clone();
        self.insert_str(&killed);
    }

    fn cut(&mut self, start: usize, end: usize) {
        if start < end {
            self.killed = self.text[start..end].to_owned();
            self.text.replace_range(start..end, "");
            self.cursor = start;
            self.browsing = None;
        }
    }

    fn word_start(&self) -> usize {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end_matches(|c: char| !is_word(c));
        trimmed.rfind(|c: char| !is_word(c)).map_or(0, |i| {
            i + trimmed[i..].chars().next().map_or(1, char::len_utf8)
        })
    }

    /// Moves to the start of the current line.
    pub fn home(&mut self) {
        self.cursor = self.line_start();
    }

    /// Moves to the end of the current line.
    pub fn end(&mut self) {
        self.cursor = self.line_end();
    }

    /// Up: the row above as drawn (a long line wraps into several), or the previous prompt
    /// when on the first row.
    pub fn up(&mut self) {
        if self.search.is_some() {
            return self.search_older();
        }
        let rows = self.rows();
        let r = row_of(&rows, self.cursor);
        if r == 0 {
            self.history_prev();
            return;
        }
        let col = str_cols(&self.text[rows[r].start..self.cursor]);
        self.cursor = at_col(&self.text, rows[r - 1], col);
    }

    /// Down: the row below as drawn, or the next prompt when on the last row.
    pub fn down(&mut self) {
        if self.search.is_some() {
            return;
        }
        let rows = self.rows();
        let r = row_of(&rows, self.cursor);
        if r + 1 >= rows.len() {
            self.history_next();
            return;
        }
        let col = str_cols(&self.text[rows[r].start..self.cursor]);
        self.cursor = at_col(&self.text, rows[r + 1], col);
    }

    /// Takes the text for sending and remembers it in the history.
    pub fn submit(&mut self) -> String {
        self.end_search(true);
        let text = std::mem::take(&mut self.text);
        self.cursor = 0;
        self.browsing = None;
        self.history.push(&text);
        text
    }

    /// Puts `text` in the box with the cursor at its end (a cancelled or queued prompt).
    pub fn set_text(&mut self, text: String) {
        self.text = text;
        self.cursor = self.text.len();
        self.browsing = None;
    }

    /// Clears the text (history is kept).
    pub fn clear(&mut self) {
        self.end_search(false);
        self.text.clear();
        self.cursor = 0;
        self.browsing = None;
    }

    /// Ctrl+R: starts a reverse search through the history, or finds the next older match.
    pub fn search_older(&mut self) {
        match self.search.as_ref() {
            None => {
                self.search = Some(Search {
                    before: self.text.clone(),
                    ..Search::default()
                });
            }
            Some(s) => {
                let from = s.hit;
                self.search_from(from);
            }
        }
    }

    /// Whether Up/Down are walking the history (the text is an earlier prompt).
    pub fn browsing_history(&self) -> bool {
        self.browsing.is_some()
    }

    /// Whether a Ctrl+R search is open.
    pub fn searching(&self) -> bool {
        self.search.is_some()
    }

    /// Ends the search: keeps the found entry for editing (`keep`), or puts the text back.
    pub fn end_search(&mut self, keep: bool) {
        if let Some(s) = self.search.take()
            && !keep
        {
            self.set_text(s.before);
        }
    }

    /// Looks for the query in entries older than `before` (all when `None`).
    fn search_from(&mut self, before: Option<usize>) {
        let Some(s) = self.search.as_mut() else {
            return;
        };
        let hit = self.history.find(&s.query, before);
        if hit.is_some() || before.is_none() {
            s.hit = hit;
        }
        let text = match s.hit {
            Some(i) => self.history.get(i).unwrap_or_default().to_owned(),
            None if s.query.is_empty() => s.before.clone(),
            None => return,
        };
        self.text = text;
        self.cursor = self.text.len();
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
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
        self.show_entry(next);
    }

    fn history_next(&mut self) {
        let Some(i) = self.browsing else { return };
        if i + 1 < self.history.len() {
            self.browsing = Some(i + 1);
            self.show_entry(i + 1);
        } else {
            self.browsing = None;
            let draft = std::mem::take(&mut self.draft);
            self.text = draft;
            self.cursor = self.text.len();
        }
    }

    fn show_entry(&mut self, i: usize) {
        self.text = self.history.get(i).unwrap_or_default().to_owned();
        self.cursor = self.text.len();
    }

    /// The rows the text takes at the last rendered width.
    fn rows(&self) -> Vec<Row> {
        let width = match self.width.get() {
            0 => usize::MAX,
            w => usize::from(w.max(4)),
        };
        let mut rows = Vec::new();
        let mut start = 0;
        let mut col = PROMPT_COLS;
        for (i, c) in self.text.char_indices() {
            if c == '\n' {
                rows.push(Row { start, end: i });
                start = i + 1;
                col = PROMPT_COLS;
                continue;
            }
            let w = c.width().unwrap_or(0);
            if col + w > width {
                rows.push(Row { start, end: i });
                start = i;
                col = PROMPT_COLS;
            }
            col += w;
        }
        rows.push(Row {
            start,
            end: self.text.len(),
        });
        rows
    }
}

/// Letters, digits and `_` make words (for word moves and Ctrl+W).
fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Columns `s` takes.
fn str_cols(s: &str) -> usize {
    s.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// The row holding byte `pos`: the last one starting at or before it.
fn row_of(rows: &[Row], pos: usize) -> usize {
    rows.iter().rposition(|r| r.start <= pos).unwrap_or(0)
}

/// The byte offset in `row` closest to column `col` (not past the row's end).
fn at_col(text: &str, row: Row, col: usize) -> usize {
    let mut used = 0;
    for (i, c) in text[row.start..row.end].char_indices() {
        let w = c.width().unwrap_or(0);
        if used + w > col {
            return row.start + i;
        }
        used += w;
    }
    row.end
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
    fn up_on_a_wrapped_one_line_prompt_moves_a_row_before_recalling_history() {
        let mut c = Composer::new();
        c.insert_str("earlier");
        c.submit();
        c.insert_str("abcdefghij");
        // `› abcd` / `  efgh` / `  ij` at 6 columns.
        let (lines, _) = c.render(6, "");
        assert_eq!(lines.len(), 3);
        c.up();
        c.insert_char('X');
        assert_eq!(c.text(), "abcdefXghij");
        c.up();
        c.up();
        assert_eq!(c.text(), "earlier");
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

    #[test]
    fn readline_keys_cut_words_and_line_ends_and_yank_them_back() {
        let mut c = Composer::new();
        c.insert_str("git commit --amend");
        c.delete_word_left();
        assert_eq!(c.text(), "git commit --");
        c.word_left();
        assert_eq!(&c.text()[c.cursor..], "commit --");
        c.kill_to_end();
        assert_eq!(c.text(), "git ");
        c.yank();
        assert_eq!(c.text(), "git commit --");
        c.home();
        c.word_right();
        c.kill_to_start();
        assert_eq!(c.text(), " commit --");
    }
}
