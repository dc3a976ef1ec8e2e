//! `/model`: the provider's listed models, picked in the live area, and the check of a typed
//! name against the same listing. The names come from a server: they are drawn through
//! [`printable`], never as sent.

use crossterm::event::KeyEvent;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::picker::{PickerOutcome, SearchKey, search_header, search_key};
use crate::wrap::{printable, truncate};

/// Rows of models shown at once (the list scrolls to keep the choice visible).
const VISIBLE: usize = 10;
/// Close matches named when a typed model is not listed.
const CLOSE_MATCHES: usize = 3;

/// The open picker: the listed models, the search typed, and the highlighted match.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelPicker {
    pub models: Vec<String>,
    /// The model in use (marked in the list).
    pub current: String,
    /// Index into the models matching [`ModelPicker::query`].
    pub selected: usize,
    /// Typed text: only models containing it are listed.
    pub query: String,
}

impl ModelPicker {
    /// A picker over `models` with the one in use highlighted.
    pub fn new(models: Vec<String>, current: &str) -> Self {
        let selected = models.iter().position(|m| m == current).unwrap_or(0);
        Self {
            models,
            current: current.to_owned(),
            selected,
            query: String::new(),
        }
    }

    /// The models matching the search, in the server's order.
    pub fn matches(&self) -> Vec<&String> {
        let query = self.query.to_lowercase();
        self.models
            .iter()
            .filter(|m| m.to_lowercase().contains(&query))
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
                .map_or(PickerOutcome::Open, |m| PickerOutcome::Chosen((*m).clone())),
        }
    }

    /// The picker's rows at `width`: a title, the search, then one row per visible model.
    pub fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let dim = Style::new().fg(Color::DarkGray);
        let matches = self.matches();
        let mut out = search_header(
            "Choose a model",
            "use",
            &self.query,
            printable,
            matches.len(),
            self.models.len(),
        );
        let first = (self.selected + 1).saturating_sub(VISIBLE);
        for (i, model) in matches.iter().enumerate().skip(first).take(VISIBLE) {
            let chosen = i == self.selected;
            let marker = if chosen { "› " } else { "  " };
            let in_use = if **model == self.current {
                " (in use)"
            } else {
                ""
            };
            let room = usize::from(width).saturating_sub(2 + in_use.len()).max(8);
            let style = if chosen {
                Style::new().add_modifier(Modifier::BOLD)
            } else {
                Style::new()
            };
            out.push(Line::from(vec![
                Span::styled(marker, Style::new().fg(Color::Cyan)),
                Span::styled(truncate(&printable(model), room), style),
                Span::styled(in_use, dim),
            ]));
        }
        if matches.len() > VISIBLE {
            out.push(Line::from(Span::styled(
                format!("  {}/{} models", self.selected + 1, matches.len()),
                dim,
            )));
        }
        if matches.is_empty() {
            out.push(Line::from(Span::styled("  no model matches", dim)));
        }
        out
    }
}

/// The listed models closest to `name`, best first: those containing it or contained in it
/// (case aside), then those a few edits away.
pub fn close_matches<'a>(name: &str, models: &'a [String]) -> Vec<&'a str> {
    let wanted = name.to_lowercase();
    let mut scored: Vec<(usize, &str)> = models
        .iter()
        .filter_map(|m| {
            let lower = m.to_lowercase();
            if lower.contains(&wanted) || wanted.contains(&lower) {
                return Some((0, m.as_str()));
            }
            let distance = edit_distance(&wanted, &lower);
            let limit = (wanted.chars().count() / 3).max(2);
            (distance <= limit).then_some((distance, m.as_str()))
        })
        .collect();
    scored.sort_by_key(|(d, _)| *d);
    scored
        .into_iter()
        .take(CLOSE_MATCHES)
        .map(|(_, m)| m)
        .collect()
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if ca == *cb {
                diagonal
            } else {
                1 + diagonal.min(above).min(row[j])
            };
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn listed(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn close_matches_prefer_containment_then_few_edits() {
        let models = listed(&["gpt-5", "gpt-5-mini", "o3", "claude-sonnet-4"]);
        assert_eq!(close_matches("gpt5", &models), vec!["gpt-5"]);
        assert_eq!(close_matches("mini", &models), vec!["gpt-5-mini"]);
        assert_eq!(
            close_matches("claude-sonet-4", &models),
            vec!["claude-sonnet-4"]
        );
        assert!(close_matches("llama", &models).is_empty());
    }

    #[test]
    fn the_edit_distance_counts_insertions_deletions_and_substitutions() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }
}
