//! Matchers as Claude Code reads them: `*` or empty selects everything; plain names
//! separated by `|` or `,` select exactly those names; anything else is a regular
//! expression matched anywhere in the name (unanchored: `mcp__github__.*` matches every tool
//! of that server, `Notebook.*` every `Notebook…` tool).

use regex::Regex;

/// A compiled matcher, keeping the text it came from for listings.
#[derive(Debug, Clone)]
pub struct Matcher {
    raw: String,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    All,
    Names(Vec<String>),
    Regex(Regex),
}

impl PartialEq for Matcher {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}

impl Matcher {
    /// Compiles `raw`; the error says why a regular expression does not compile.
    pub fn new(raw: &str) -> Result<Self, String> {
        let trimmed = raw.trim();
        let kind = if trimmed.is_empty() || trimmed == "*" {
            Kind::All
        } else if is_name_list(trimmed) {
            Kind::Names(
                trimmed
                    .split(['|', ','])
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .map(str::to_owned)
                    .collect(),
            )
        } else {
            Kind::Regex(Regex::new(trimmed).map_err(|e| {
                // The regex crate draws the pattern over several lines; its last says why.
                let text = e.to_string();
                text.lines()
                    .last()
                    .unwrap_or_default()
                    .trim_start_matches("error: ")
                    .to_owned()
            })?)
        };
        Ok(Self {
            raw: raw.to_owned(),
            kind,
        })
    }

    /// The matcher that selects everything (an entry without `matcher`).
    pub fn all() -> Self {
        Self {
            raw: String::new(),
            kind: Kind::All,
        }
    }

    /// The text it was written as.
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// Whether any of `names` (e.g. a tool's Claude name and corvid's own) is selected.
    pub fn matches_any(&self, names: &[&str]) -> bool {
        match &self.kind {
            Kind::All => true,
            Kind::Names(list) => names.iter().any(|n| list.iter().any(|l| l == n)),
            Kind::Regex(re) => names.iter().any(|n| re.is_match(n)),
        }
    }
}

/// Whether `text` is only names (letters, digits, `_`, `-`) separated by `|` or `,`.
fn is_name_list(text: &str) -> bool {
    text.chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '|' | ',' | ' '))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn m(raw: &str) -> Matcher {
        Matcher::new(raw).unwrap()
    }

    #[test]
    fn star_and_empty_select_every_name() {
        for raw in ["", "*", "  "] {
            assert!(m(raw).matches_any(&["Bash"]), "{raw:?}");
            assert!(m(raw).matches_any(&["mcp__s__t"]), "{raw:?}");
        }
    }

    #[test]
    fn plain_names_separated_by_bar_or_comma_match_exactly() {
        let bar = m("Edit|Write");
        assert!(bar.matches_any(&["Edit"]));
        assert!(bar.matches_any(&["Write"]));
        assert!(!bar.matches_any(&["MultiEdit"]), "exact, not a substring");
        assert!(!bar.matches_any(&["Bash"]));
        let comma = m("Edit, Write");
        assert!(comma.matches_any(&["Write"]));
        assert!(!m("Bash").matches_any(&["BashOutput"]));
    }

    #[test]
    fn anything_else_is_an_unanchored_regex() {
        let mcp = m("mcp__memory__.*");
        assert!(mcp.matches_any(&["mcp__memory__create_entities"]));
        assert!(!mcp.matches_any(&["mcp__github__search"]));
        assert!(m("Notebook.*").matches_any(&["NotebookEdit"]));
        assert!(m("Web.").matches_any(&["WebFetch"]));
        assert!(m("^Bash$").matches_any(&["Bash"]));
        assert!(!m("^Bash$").matches_any(&["BashOutput"]));
    }

    #[test]
    fn any_of_the_names_given_can_match() {
        assert!(m("run_shell_command").matches_any(&["Bash", "run_shell_command"]));
        assert!(m("Bash").matches_any(&["Bash", "run_shell_command"]));
    }

    #[test]
    fn a_bad_regex_is_an_error() {
        assert!(Matcher::new("Bash(").is_err());
        assert!(Matcher::new("[").is_err());
    }
}
