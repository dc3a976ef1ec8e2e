//! `/resume`: the recorded sessions a user can go back to, picked in the live area.
//! The sessions come from a [`SessionLauncher`] the binary provides, so the UI needs no
//! settings or session store of its own.

use corvid_core::session::{Resumed, SessionSummary, utc_minutes};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::wrap::truncate;

/// Rows of sessions the picker shows at once (it scrolls to keep the selection visible).
const VISIBLE: usize = 8;

/// Lists and resumes this project's recorded sessions for `/resume` (implemented by the binary,
/// which knows how to build an agent the same way it built the current one).
pub trait SessionLauncher: Send + Sync {
    /// This project's recorded sessions, newest first.
    fn list(&self) -> Result<Vec<SessionSummary>, String>;
    /// Starts an agent going on with session `id`, with its transcript to replay.
    fn resume(&self, id: &str) -> Result<Resumed, String>;
    /// `/branch`: forks session `parent` (whole, or from before a turn with its files
    /// restored) into a new session and starts an agent going on with the fork.
    fn fork(&self, parent: &str, at: Option<BranchAt>) -> Result<Branched, String>;
    /// Starts an agent in a new recorded session (`/clear`), configured like the first one;
    /// its transcript is empty.
    fn fresh(&self) -> Result<Resumed, String>;
}

/// `/branch N`: fork from before turn `turn` of the parent's `checkpoints`, restoring its
/// files first (overwriting the user's later edits only with `overwrite_conflicts`).
pub struct BranchAt {
    pub checkpoints: std::sync::Arc<corvid_core::checkpoints::SessionCheckpoints>,
    pub turn: u32,
    pub overwrite_conflicts: bool,
}

/// A fork started: its agent and transcript, and what the file restore did.
pub struct Branched {
    pub resumed: Resumed,
    pub restored: Option<corvid_protocol::RewindReport>,
}

/// The open picker: the sessions offered, the search typed, and the highlighted match.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionPicker {
    pub sessions: Vec<SessionSummary>,
    /// Index into the sessions matching [`SessionPicker::query`].
    pub selected: usize,
    /// Typed text: only sessions whose title, first prompt, model or id contain it are listed.
    pub query: String,
}

/// Rows of the highlighted session's first prompt shown under the list.
const PREVIEW_ROWS: usize = 3;

/// What a key press in the picker asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum PickerOutcome {
    /// Still choosing.
    Open,
    /// Closed without a choice.
    Closed,
    /// Resume this session id.
    Chosen(String),
}

/// What a key did to a searchable list (the `/resume` and `/model` pickers).
pub(crate) enum SearchKey {
    /// Still choosing (the search or the highlight may have changed).
    Open,
    /// Closed without a choice.
    Closed,
    /// Enter: choose the highlighted match.
    Choose,
}

/// The first rows every searchable picker shows: its title with the keys (Enter does
/// `enter_does`), then, while a search is typed, the search as `show` renders `query` and how
/// many of the `total` rows match.
pub(crate) fn search_header(
    title: &str,
    enter_does: &str,
    query: &str,
    show: fn(&str) -> String,
    matched: usize,
    total: usize,
) -> Vec<Line<'static>> {
    let dim = Style::new().fg(Color::DarkGray);
    let mut out = vec![Line::from(vec![
        Span::styled(
            title.to_owned(),
            Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
        ),
        Span::styled(
            format!(" · ↑↓ choose · type to search · enter {enter_does} · esc close"),
            dim,
        ),
    ])];
    if !query.is_empty() {
        out.push(Line::from(vec![
            Span::styled("  search: ", dim),
            Span::raw(show(query)),
            Span::styled(format!(" · {matched} of {total}"), dim),
        ]));
    }
    out
}

/// The keys every searchable picker shares: Up/Down move within `matches` rows, typing
/// searches (Backspace undoes), Enter chooses, Esc first clears a search and then closes,
/// Ctrl+C closes.
pub(crate) fn search_key(
    query: &mut String,
    selected: &mut usize,
    matches: usize,
    key: KeyEvent,
) -> SearchKey {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    match key.code {
        KeyCode::Esc if !query.is_empty() => {
            query.clear();
            *selected = 0;
        }
        KeyCode::Esc => return SearchKey::Closed,
        KeyCode::Char('c') if ctrl => return SearchKey::Closed,
        KeyCode::Up => *selected = selected.saturating_sub(1),
        KeyCode::Down => *selected = (*selected + 1).min(matches.saturating_sub(1)),
        KeyCode::Enter => return SearchKey::Choose,
        KeyCode::Backspace => {
            query.pop();
            *selected = 0;
        }
        KeyCode::Char(c) if !ctrl && !alt => {
            query.push(c);
            *selected = 0;
        }
        _ => {}
    }
    SearchKey::Open
}

impl SessionPicker {
    /// A picker over `sessions` (newest first) with the newest highlighted.
    pub fn new(sessions: Vec<SessionSummary>) -> Self {
        Self {
            sessions,
            selected: 0,
            query: String::new(),
        }
    }

    /// The sessions matching the search, newest first.
    pub fn matches(&self) -> Vec<&SessionSummary> {
        let query = self.query.to_lowercase();
        self.sessions
            .iter()
            .filter(|s| {
                query.is_empty()
                    || s.title
                        .as_ref()
                        .is_some_and(|t| t.to_lowercase().contains(&query))
                    || s.first_prompt.to_lowercase().contains(&query)
                    || s.model.to_lowercase().contains(&query)
                    || s.id.starts_with(&query)
            })
            .collect()
    }

    /// Up/Down move, typing searches (Backspace undoes), Enter chooses, Esc or Ctrl+C closes
    /// (Esc first clears a search).
    pub fn on_key(&mut self, key: KeyEvent) -> PickerOutcome {
        let n = self.matches().len();
        match search_key(&mut self.query, &mut self.selected, n, key) {
            SearchKey::Open => PickerOutcome::Open,
            SearchKey::Closed => PickerOutcome::Closed,
            SearchKey::Choose => self
                .matches()
                .get(self.selected)
                .map_or(PickerOutcome::Open, |s| PickerOutcome::Chosen(s.id.clone())),
        }
    }

    /// The picker's rows at `width`: a title, then one row per visible session.
    pub fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let dim = Style::new().fg(Color::DarkGray);
        let matches = self.matches();
        let mut out = search_header(
            "Resume a session",
            "resume",
            &self.query,
            one_line,
            matches.len(),
            self.sessions.len(),
        );
        let first = (self.selected + 1).saturating_sub(VISIBLE);
        for (i, s) in matches.iter().enumerate().skip(first).take(VISIBLE) {
            let chosen = i == self.selected;
            let marker = if chosen { "› " } else { "  " };
            let when = utc_minutes(s.started_at_ms);
            let id = short_id(&s.id);
            // marker + time + two gaps + id; the prompt gets the rest.
            let fixed = 2 + when.chars().count() + 2 + 2 + id.chars().count();
            let room = usize::from(width).saturating_sub(fixed).max(8);
            // The fast model's title when there is one, else the first prompt.
            let prompt = one_line(s.title.as_deref().unwrap_or(&s.first_prompt));
            let prompt = truncate(&prompt, room);
            let pad = room.saturating_sub(unicode_width::UnicodeWidthStr::width(prompt.as_str()));
            let style = if chosen {
                Style::new().add_modifier(Modifier::BOLD)
            } else {
                Style::new()
            };
            out.push(Line::from(vec![
                Span::styled(marker, Style::new().fg(Color::Cyan)),
                Span::styled(when, dim),
                Span::raw("  "),
                Span::styled(format!("{prompt}{}", " ".repeat(pad)), style),
                Span::raw("  "),
                Span::styled(id, dim),
            ]));
        }
        if matches.len() > VISIBLE {
            out.push(Line::from(Span::styled(
                format!("  {}/{} sessions", self.selected + 1, matches.len()),
                dim,
            )));
        }
        match matches.get(self.selected) {
            Some(s) => out.extend(preview(s, width)),
            None => out.push(Line::from(Span::styled("  no session matches", dim))),
        }
        out
    }
}

/// The highlighted session's model and the start of its first prompt, wrapped (under a title,
/// the prompt says more than the title did).
fn preview(s: &SessionSummary, width: u16) -> Vec<Line<'static>> {
    let dim = Style::new().fg(Color::DarkGray);
    let mut out = vec![Line::from(Span::styled(
        format!("  {} · {}", crate::wrap::printable(&s.model), s.id),
        dim,
    ))];
    let text = Line::styled(format!("    {}", one_line(&s.first_prompt)), dim);
    let rows = crate::wrap::wrap_line(&text, width, 4);
    let more = rows.len() > PREVIEW_ROWS;
    out.extend(rows.into_iter().take(PREVIEW_ROWS));
    if more {
        out.push(Line::from(Span::styled("    …", dim)));
    }
    out
}

/// Enough of a session id to recognise it and to pass to `--resume`.
fn short_id(id: &str) -> String {
    id.chars().take(8).collect()
}

/// A prompt or title on one line: whitespace runs (newlines included) become single spaces,
/// control characters are dropped (a title comes from a model).
fn one_line(text: &str) -> String {
    let joined = crate::wrap::printable(&text.split_whitespace().collect::<Vec<_>>().join(" "));
    if joined.is_empty() {
        "(no prompt)".to_string()
    } else {
        joined
    }
}
