//! `ask_user` (issue 30): the model's questions as a picker in the live area. One question at
//! a time: arrows move, Space toggles an option of a multi-select question, Enter confirms,
//! the "Other" row takes typed text, Esc dismisses the questions (which cancels the task).
//!
//! The questions are the model's words: they are drawn inside a quoted frame under a heading
//! that says so, never styled like corvid's own dialogs (the core already removed control
//! characters).

use corvid_protocol::{Question, QuestionAnswer, QuestionReply};
use corvid_tools::ask_user::OTHER_LABEL;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::wrap::{truncate, wrap_line};

/// The open picker of one `ask_user` call.
#[derive(Debug, Clone, PartialEq)]
pub struct QuestionPicker {
    pub call_id: String,
    questions: Vec<Question>,
    /// The question shown (answers of the earlier ones are kept in `answers`).
    current: usize,
    /// Highlighted row: an option, or the Other row after them.
    cursor: usize,
    /// Toggled options of the current question (multi-select).
    toggled: Vec<bool>,
    /// Text typed into the current question's Other row.
    other: String,
    /// Whether keys type into the Other row.
    typing: bool,
    answers: Vec<QuestionAnswer>,
}

/// What a key press in the picker asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum QuestionKey {
    /// Still answering.
    Open,
    /// Send this reply ([`QuestionReply::Cancelled`] cancels the task).
    Reply(QuestionReply),
}

impl QuestionPicker {
    /// A picker over the call's questions, on the first option of the first question.
    pub fn new(call_id: &str, questions: Vec<Question>) -> Self {
        let toggled = vec![false; questions.first().map_or(0, |q| q.options.len())];
        Self {
            call_id: call_id.to_owned(),
            questions,
            current: 0,
            cursor: 0,
            toggled,
            other: String::new(),
            typing: false,
            answers: Vec::new(),
        }
    }

    fn question(&self) -> Option<&Question> {
        self.questions.get(self.current)
    }

    /// Rows of the current question: its options, then Other.
    fn rows(&self) -> usize {
        self.question().map_or(1, |q| q.options.len() + 1)
    }

    fn on_other(&self) -> bool {
        self.cursor + 1 == self.rows()
    }

    /// Handles one key press.
    pub fn on_key(&mut self, key: KeyEvent) -> QuestionKey {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            return QuestionKey::Reply(QuestionReply::Cancelled);
        }
        if self.typing {
            match key.code {
                KeyCode::Esc => {
                    self.typing = false;
                    self.other.clear();
                }
                KeyCode::Enter => {
                    self.typing = false;
                    let multi = self.question().is_some_and(|q| q.multi_select);
                    if !multi && !self.other.trim().is_empty() {
                        return self.confirm();
                    }
                }
                KeyCode::Backspace => {
                    self.other.pop();
                }
                KeyCode::Char(c) if !ctrl => self.other.push(c),
                _ => {}
            }
            return QuestionKey::Open;
        }
        let rows = self.rows();
        match key.code {
            KeyCode::Esc => return QuestionKey::Reply(QuestionReply::Cancelled),
            KeyCode::Up | KeyCode::BackTab => self.cursor = (self.cursor + rows - 1) % rows,
            KeyCode::Down | KeyCode::Tab => self.cursor = (self.cursor + 1) % rows,
            KeyCode::Char(' ') if self.on_other() => self.typing = true,
            KeyCode::Char(' ') if self.question().is_some_and(|q| q.multi_select) => {
                if let Some(t) = self.toggled.get_mut(self.cursor) {
                    *t = !*t;
                }
            }
            KeyCode::Char(' ') => return self.confirm(),
            KeyCode::Enter if self.on_other() && self.other.trim().is_empty() => {
                self.typing = true;
            }
            KeyCode::Enter => return self.confirm(),
            _ => {}
        }
        QuestionKey::Open
    }

    /// Enter: answers the current question and moves on (or replies after the last one).
    fn confirm(&mut self) -> QuestionKey {
        let Some(q) = self.question() else {
            return QuestionKey::Reply(QuestionReply::Cancelled);
        };
        let other = (!self.other.trim().is_empty()).then(|| self.other.trim().to_owned());
        let labels: Vec<String> = if q.multi_select {
            q.options
                .iter()
                .zip(&self.toggled)
                .filter(|(_, on)| **on)
                .map(|(o, _)| o.label.clone())
                .collect()
        } else if self.on_other() {
            Vec::new()
        } else {
            q.options
                .get(self.cursor)
                .map(|o| vec![o.label.clone()])
                .unwrap_or_default()
        };
        // A single choice is the option or the Other text, never both.
        let other = if q.multi_select || labels.is_empty() {
            other
        } else {
            None
        };
        if labels.is_empty() && other.is_none() {
            // Nothing chosen yet (a multi-select with nothing toggled): stay.
            return QuestionKey::Open;
        }
        self.answers.push(QuestionAnswer {
            header: q.header.clone(),
            labels,
            other,
        });
        self.current += 1;
        self.cursor = 0;
        self.other.clear();
        self.toggled = vec![false; self.question().map_or(0, |q| q.options.len())];
        if self.current >= self.questions.len() {
            return QuestionKey::Reply(QuestionReply::Answered {
                answers: std::mem::take(&mut self.answers),
            });
        }
        QuestionKey::Open
    }

    /// The picker's rows at `width`.
    pub fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let Some(q) = self.question() else {
            return Vec::new();
        };
        let w = usize::from(width);
        let dim = Style::new().fg(Color::DarkGray);
        let frame = Style::new().fg(Color::Magenta);
        let count = if self.questions.len() > 1 {
            format!(" ({} of {})", self.current + 1, self.questions.len())
        } else {
            String::new()
        };
        let mut out = vec![Line::from(vec![
            Span::styled(
                "The model asks you",
                Style::new().fg(Color::Magenta).add_modifier(Modifier::BOLD),
            ),
            Span::styled(truncate(&format!("{count} · {}", q.header), w), dim),
        ])];
        // The model's words, quoted: never drawn like corvid's own text.
        let inner = width.saturating_sub(2).max(1);
        for line in q.question.lines() {
            for row in wrap_line(&Line::raw(line.to_owned()), inner, 0) {
                let mut spans = vec![Span::styled("│ ", frame)];
                spans.extend(row.spans);
                out.push(Line::from(spans));
            }
        }
        out.push(Line::default());
        let multi = q.multi_select;
        for (i, option) in q.options.iter().enumerate() {
            let mark = match (multi, self.toggled.get(i).copied().unwrap_or(false)) {
                (true, true) => "[x] ",
                (true, false) => "[ ] ",
                (false, _) => "",
            };
            let text = if option.description.is_empty() {
                format!("{mark}{}", option.label)
            } else {
                format!("{mark}{} · {}", option.label, option.description)
            };
            out.push(self.row(i, &text, w));
        }
        let other = if self.typing {
            format!("{OTHER_LABEL}: {}▏", self.other)
        } else if self.other.is_empty() {
            format!("{OTHER_LABEL}: type your own answer")
        } else {
            format!("{OTHER_LABEL}: {}", self.other)
        };
        out.push(self.row(q.options.len(), &other, w));
        let help = if self.typing {
            "type your answer · enter keeps it · esc clears it"
        } else if multi {
            "↑↓ move · space toggles · enter confirms · esc dismisses (cancels the task)"
        } else {
            "↑↓ move · enter chooses · esc dismisses (cancels the task)"
        };
        out.push(Line::from(Span::styled(truncate(help, w), dim)));
        out
    }

    fn row(&self, i: usize, text: &str, w: usize) -> Line<'static> {
        let (pointer, style) = if i == self.cursor {
            ("› ", Style::new().add_modifier(Modifier::REVERSED))
        } else {
            ("  ", Style::new())
        };
        let text = truncate(&format!("{pointer}{}. {text}", i + 1), w);
        Line::from(Span::styled(text, style))
    }
}
