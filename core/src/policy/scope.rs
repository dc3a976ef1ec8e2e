//! What an "always" answer covers, and the session's remembered "always" answers.
//!
//! A command is remembered by the prefixes of its parts (`cargo test`; `ls && cargo test` by
//! both), or, when no prefix may cover it (a substitution, a file redirection), as that exact
//! command line. An edit is remembered for its file only (not its folder), a web call for its
//! host only. Any other call (no command, no file, no host) for the whole tool.

use std::path::{Path, PathBuf};

use super::rules::{Rule, Subject, allows, refusing};

/// What an "always" answer to one request covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every call of the tool.
    Tool,
    /// Edits of this file (lexically absolute).
    File(PathBuf),
    /// Command lines whose every part starts with one of these prefixes.
    Prefixes(Vec<Vec<String>>),
    /// This exact command line.
    Exact(String),
    /// Calls reaching this web host (not its subdomains).
    Domain(String),
}

impl Scope {
    /// The narrowest useful scope for the call.
    pub fn of(s: &Subject<'_>) -> Self {
        if let Some(command) = s.command {
            return match command.prefixes() {
                Some(prefixes) => Self::Prefixes(prefixes),
                None => Self::Exact(command.raw().to_owned()),
            };
        }
        match (s.file, s.domain) {
            (Some(file), _) => Self::File(file.to_owned()),
            (None, Some(domain)) => Self::Domain(domain.to_owned()),
            (None, None) => Self::Tool,
        }
    }

    /// The label front ends show ("always for `cargo test`"); `None` for the whole tool.
    pub fn label(&self, cwd: &Path) -> Option<String> {
        match self {
            Self::Tool => None,
            Self::File(path) => Some(match path.strip_prefix(cwd) {
                Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
                _ => path.display().to_string(),
            }),
            Self::Prefixes(prefixes) => Some(
                prefixes
                    .iter()
                    .map(shell_words::join)
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            Self::Exact(command) => Some(shortened(command)),
            Self::Domain(domain) => Some(domain.clone()),
        }
    }

    fn rules(&self, tool: &str) -> Vec<Rule> {
        match self {
            Self::Tool => vec![Rule::whole(tool)],
            Self::File(path) => vec![Rule::file(tool, path)],
            Self::Prefixes(prefixes) => prefixes.iter().map(|p| Rule::prefix(tool, p)).collect(),
            Self::Exact(command) => vec![Rule::exact(tool, command)],
            Self::Domain(domain) => vec![Rule::domain(tool, domain)],
        }
    }
}

fn shortened(command: &str) -> String {
    const MAX: usize = 80;
    let one_line = command.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
    }
}

/// The "always" answers of one session.
#[derive(Debug, Default)]
pub struct Remembered {
    allow: Vec<Rule>,
    reject: Vec<Rule>,
    /// MCP servers whose every tool the user allowed.
    allowed_servers: Vec<String>,
}

/// Which remembered allow answers may apply to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Any that covers it.
    Any,
    /// Only an answer given for this very file (the call touches a protected path, so a
    /// tool-wide or pattern answer does not count).
    ThisFileOnly,
}

impl Remembered {
    /// Remembers an "allow always" (`allow`) or "reject always" answer for `scope`. A
    /// rejected compound command (`raw`) is remembered as that exact line, not by its parts.
    pub fn remember(&mut self, tool: &str, scope: &Scope, raw: Option<&str>, allow: bool) {
        let list = if allow {
            &mut self.allow
        } else {
            &mut self.reject
        };
        let rules = match scope {
            // Refusing `cd x && rm -rf y` for good must not refuse every later `cd`.
            Scope::Prefixes(prefixes) if !allow && prefixes.len() > 1 => match raw {
                Some(raw) => vec![Rule::exact(tool, raw)],
                None => scope.rules(tool),
            },
            _ => scope.rules(tool),
        };
        list.extend(rules);
    }

    /// Whether an earlier "allow always" covers the call.
    pub fn allows(&self, s: &Subject<'_>, reach: Reach) -> bool {
        match reach {
            Reach::Any => allows(self.allow.iter(), s),
            Reach::ThisFileOnly => allows(self.allow.iter().filter(|r| r.is_file()), s),
        }
    }

    /// Remembers "allow every tool of this MCP server".
    pub fn remember_server(&mut self, server: &str) {
        if !self.allows_server(server) {
            self.allowed_servers.push(server.to_owned());
        }
    }

    /// Whether the user allowed every tool of this MCP server.
    pub fn allows_server(&self, server: &str) -> bool {
        self.allowed_servers.iter().any(|s| s == server)
    }

    /// Whether an earlier "reject always" covers the call (any part, any path).
    pub fn rejects(&self, s: &Subject<'_>) -> bool {
        refusing(self.reject.iter(), s).is_some()
    }
}
