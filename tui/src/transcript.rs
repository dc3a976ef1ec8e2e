//! The transcript view (Ctrl+O): the whole session drawn again in the live area, tool groups
//! expanded (every diff and all output, even those shown compact), scrolled with the keys.
//! Scrollback keeps what was printed; this is where nothing is ever out of reach.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::cells::HistoryCell;
use crate::chat::ChatState;

/// Where the transcript view is scrolled to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TranscriptView {
    /// Rows scrolled up from the end (0: the newest rows show).
    from_end: usize,
}

/// What a key did to the view.
#[derive(Debug, PartialEq, Eq)]
pub enum ViewKey {
    Stay,
    Close,
}

impl TranscriptView {
    /// Scrolls (arrows, PgUp/PgDn, Home/End, j/k) or closes (Esc, q, Ctrl+O, Ctrl+C).
    pub fn on_key(&mut self, key: KeyEvent, page: usize) -> ViewKey {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => return ViewKey::Close,
            KeyCode::Char('o' | 'c') if ctrl => return ViewKey::Close,
            KeyCode::Up | KeyCode::Char('k') => self.from_end += 1,
            KeyCode::Down | KeyCode::Char('j') => self.from_end = self.from_end.saturating_sub(1),
            KeyCode::PageUp | KeyCode::Char('b') => self.from_end += page.max(1),
            KeyCode::PageDown | KeyCode::Char(' ') => {
                self.from_end = self.from_end.saturating_sub(page.max(1));
            }
            KeyCode::Home | KeyCode::Char('g') => self.from_end = usize::MAX,
            KeyCode::End | KeyCode::Char('G') => self.from_end = 0,
            _ => {}
        }
        ViewKey::Stay
    }

    /// The rows to draw in `rows` terminal rows at `width`: a window of the whole transcript
    /// and a footer saying where it is and how to leave.
    pub fn lines(&self, chat: &ChatState, width: u16, rows: u16) -> Vec<Line<'static>> {
        let all = transcript_lines(chat, width);
        let page = usize::from(rows).saturating_sub(1).max(1);
        let last_start = all.len().saturating_sub(page);
        let start = last_start.saturating_sub(self.from_end);
        let end = (start + page).min(all.len());
        let mut out: Vec<Line<'static>> = all[start..end].to_vec();
        let dim = Style::new().fg(Color::DarkGray);
        out.push(Line::from(vec![
            Span::styled(
                "transcript",
                Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            ),
            Span::styled(
                format!(
                    " · rows {}-{} of {} · ↑↓ pgup/pgdn home/end · esc closes",
                    if all.is_empty() { 0 } else { start + 1 },
                    end,
                    all.len()
                ),
                dim,
            ),
        ]));
        out
    }
}

/// Every committed cell (tool groups expanded), then what is still live.
fn transcript_lines(chat: &ChatState, width: u16) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for cell in chat.transcript() {
        match cell {
            HistoryCell::Tools(group) => {
                out.push(Line::default());
                out.extend(group.render_expanded(width));
            }
            cell => out.extend(cell.render_with_gap(width)),
        }
    }
    if let Some(group) = &chat.group {
        out.push(Line::default());
        out.extend(group.render_expanded(width));
    }
    if !chat.stream.trim().is_empty() {
        out.push(Line::default());
        out.extend(HistoryCell::Assistant(chat.stream.clone()).render(width));
    }
    out
}
