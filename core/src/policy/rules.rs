//! Permission rules: `tools.allow` / `tools.deny` from the user's settings, and the session's
//! remembered "always" answers, which are rules too.
//!
//! Syntax: a bare tool name (`run_shell_command`) covers the whole tool; `tool(spec)` covers
//! part of it. For a command tool the spec is a command prefix matched word by word
//! (`run_shell_command(git status)` covers `git status --short`, not `git statusx`; a
//! trailing `*` or `:*` is accepted and changes nothing). For a file tool it is a path pattern
//! (`write_file(src/**)`, see [`super::path_pattern`]). For a tool that reaches a web host
//! (`web_fetch`) it is `domain:HOST` (`web_fetch(domain:docs.rs)`), where `domain:*.HOST`
//! also covers every subdomain; hosts match without regard to case. Deny wins over allow.

use std::path::{Path, PathBuf};

use super::path_pattern::{Case, PathPattern, TouchedPath};
use super::shell_words::CommandLine;

/// What a call touches, as rules see it.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    pub tool: &'a str,
    /// The command line, for a command tool (its approval previews a command).
    pub command: Option<&'a CommandLine>,
    /// The file an edit changes (the path of its diff), lexically absolute.
    pub file: Option<&'a Path>,
    /// The web host the call reaches, lower-case (see `Tool::domain`).
    pub domain: Option<&'a str>,
    /// Every spelling of every path the call names (see [`super::path_pattern::touched`]).
    pub paths: &'a [TouchedPath],
}

/// One rule.
#[derive(Debug, Clone)]
pub struct Rule {
    tool: String,
    spec: Spec,
    source: String,
}

#[derive(Debug, Clone)]
enum Spec {
    /// The whole tool.
    Whole,
    /// A settings spec: a command prefix and/or a path pattern, whichever the call has.
    Pattern {
        prefix: Option<Vec<String>>,
        path: Option<PathPattern>,
    },
    /// A remembered file.
    File(PathBuf),
    /// A remembered command prefix.
    Prefix(Vec<String>),
    /// A remembered command that no prefix may cover (it substitutes or redirects).
    Exact(String),
    /// A web host, or with `subdomains` that host and every host under it.
    Domain { host: String, subdomains: bool },
}

impl Rule {
    /// Parses a settings rule; the error says what is wrong with it.
    pub fn parse(text: &str, case: Case) -> Result<Self, String> {
        let text = text.trim();
        let (tool, spec) = match text.split_once('(') {
            None => (text, None),
            Some((tool, rest)) => {
                let inner = rest.strip_suffix(')').ok_or_else(|| {
                    "must end with `)` (the syntax is `tool` or `tool(spec)`)".to_owned()
                })?;
                (tool.trim(), Some(inner.trim()))
            }
        };
        let name = tool.strip_suffix('*').unwrap_or(tool);
        let valid_name = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.');
        if !valid_name {
            return Err(format!(
                "must start with a tool name such as `run_shell_command` or `write_file` \
                 (or a name ending in `*`, such as `mcp__github__*` for every tool of an MCP \
                 server), found `{tool}`"
            ));
        }
        if name.len() < tool.len() && spec.is_some() {
            return Err(format!(
                "names every tool starting with `{name}`; such a rule covers them whole, so \
                 write it without parentheses"
            ));
        }
        let spec = match spec {
            None => Spec::Whole,
            Some("") => return Err("has empty parentheses; write the bare tool name".into()),
            Some(spec) if spec.starts_with("domain:") => domain_spec(&spec["domain:".len()..])?,
            Some(spec) => {
                let prefix = shell_words::split(spec).ok().map(|mut words| {
                    if words.last().is_some_and(|w| w == "*") {
                        words.pop();
                    } else if let Some(last) = words.last_mut()
                        && let Some(stripped) = last.strip_suffix(":*")
                    {
                        *last = stripped.to_owned();
                    }
                    words
                });
                let prefix = prefix.filter(|w| !w.is_empty());
                let path = PathPattern::parse(spec, case).ok();
                if prefix.is_none() && path.is_none() {
                    return Err(format!(
                        "has `{spec}`, which is neither a command prefix nor a path pattern"
                    ));
                }
                Spec::Pattern { prefix, path }
            }
        };
        Ok(Self {
            tool: tool.to_owned(),
            spec,
            source: text.to_owned(),
        })
    }

    /// The rule as written (`run_shell_command(git push)`).
    pub fn source(&self) -> &str {
        &self.source
    }

    pub(super) fn whole(tool: &str) -> Self {
        Self::remembered(tool, Spec::Whole, tool.to_owned())
    }

    pub(super) fn file(tool: &str, path: &Path) -> Self {
        let source = format!("{tool}({})", path.display());
        Self::remembered(tool, Spec::File(path.to_owned()), source)
    }

    pub(super) fn prefix(tool: &str, words: &[String]) -> Self {
        let source = format!("{tool}({})", words.join(" "));
        Self::remembered(tool, Spec::Prefix(words.to_vec()), source)
    }

    pub(super) fn domain(tool: &str, host: &str) -> Self {
        let source = format!("{tool}(domain:{host})");
        let spec = Spec::Domain {
            host: host.to_ascii_lowercase(),
            subdomains: false,
        };
        Self::remembered(tool, spec, source)
    }

    pub(super) fn exact(tool: &str, command: &str) -> Self {
        let source = format!("{tool}({command})");
        Self::remembered(tool, Spec::Exact(command.to_owned()), source)
    }

    fn remembered(tool: &str, spec: Spec, source: String) -> Self {
        Self {
            tool: tool.to_owned(),
            spec,
            source,
        }
    }

    pub(super) fn is_file(&self) -> bool {
        matches!(self.spec, Spec::File(_))
    }

    fn command_prefix(&self) -> Option<&[String]> {
        match &self.spec {
            Spec::Prefix(words) => Some(words),
            Spec::Pattern {
                prefix: Some(words),
                ..
            } => Some(words),
            _ => None,
        }
    }

    /// Whether the rule is about `tool`: its own name, every name starting with what comes
    /// before a trailing `*` (`mcp__github__*`: all tools of the MCP server `github`), or, for
    /// a bare server name as Claude Code writes it (`mcp__github`), every tool of that server.
    fn names(&self, tool: &str) -> bool {
        if let Some(prefix) = self.tool.strip_suffix('*') {
            return tool.starts_with(prefix);
        }
        if self.tool == tool {
            return true;
        }
        let is_server = self
            .tool
            .strip_prefix("mcp__")
            .is_some_and(|server| !server.is_empty() && !server.contains("__"));
        is_server
            && tool
                .strip_prefix(self.tool.as_str())
                .is_some_and(|rest| rest.starts_with("__"))
    }

    /// Whether the rule covers the call the way a deny rule would (a hook's `if`).
    pub fn covers(&self, s: &Subject<'_>) -> bool {
        self.refuses(s)
    }

    /// Whether this deny-side rule refuses the call: it matches any part of a command, or any
    /// spelling of any path.
    fn refuses(&self, s: &Subject<'_>) -> bool {
        if !self.names(s.tool) {
            return false;
        }
        match (&self.spec, s.command) {
            (Spec::Whole, _) => true,
            (Spec::Exact(text), Some(command)) => command.raw() == text,
            (_, Some(command)) => self.command_prefix().is_some_and(|p| command.runs(p)),
            (Spec::File(file), None) => {
                s.file == Some(file.as_path()) || s.paths.iter().any(|p| p.abs == *file)
            }
            (
                Spec::Pattern {
                    path: Some(pattern),
                    ..
                },
                None,
            ) => s.paths.iter().any(|p| pattern.matches(p)),
            (Spec::Domain { .. }, None) => self.covers_domain(s.domain),
            _ => false,
        }
    }

    /// Whether this is a domain rule covering `domain`.
    fn covers_domain(&self, domain: Option<&str>) -> bool {
        let (Spec::Domain { host, subdomains }, Some(domain)) = (&self.spec, domain) else {
            return false;
        };
        let domain = domain.trim_end_matches('.').to_ascii_lowercase();
        domain == *host
            || (*subdomains
                && domain
                    .strip_suffix(host.as_str())
                    .is_some_and(|rest| rest.ends_with('.')))
    }
}

/// The spec after `domain:`: `docs.rs`, or `*.docs.rs` for it and its subdomains.
fn domain_spec(text: &str) -> Result<Spec, String> {
    let text = text.trim().trim_end_matches('.').to_ascii_lowercase();
    let (host, subdomains) = match text.strip_prefix("*.") {
        Some(host) => (host.to_owned(), true),
        None => (text, false),
    };
    let valid = !host.is_empty()
        && host.chars().all(|c| {
            c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '[' || c == ']' || c == ':'
        });
    if !valid {
        return Err(format!(
            "has `domain:{host}`, which is not a host name (write `domain:docs.rs`, or \
             `domain:*.docs.rs` for it and its subdomains)"
        ));
    }
    Ok(Spec::Domain { host, subdomains })
}

/// Whether `rules` together allow the call: each part of a command needs a prefix (and the
/// line must be plain), every spelling of every path needs a pattern, a file its own entry.
pub(super) fn allows<'r>(rules: impl Iterator<Item = &'r Rule> + Clone, s: &Subject<'_>) -> bool {
    let mine = rules.filter(|r| r.names(s.tool));
    if mine.clone().any(|r| matches!(r.spec, Spec::Whole)) {
        return true;
    }
    if s.domain.is_some() {
        return mine.clone().any(|r| r.covers_domain(s.domain));
    }
    if let Some(command) = s.command {
        let exact = mine
            .clone()
            .any(|r| matches!(&r.spec, Spec::Exact(t) if t == command.raw()));
        return exact || command.allowed_by(mine.filter_map(Rule::command_prefix));
    }
    let file_remembered = s.file.is_some_and(|file| {
        mine.clone()
            .any(|r| matches!(&r.spec, Spec::File(f) if f == file))
    });
    if file_remembered {
        return true;
    }
    !s.paths.is_empty()
        && s.paths.iter().all(|path| {
            mine.clone().any(|r| match &r.spec {
                Spec::Pattern {
                    path: Some(pattern),
                    ..
                } => pattern.matches(path),
                _ => false,
            })
        })
}

/// The first of `rules` that refuses the call.
pub(super) fn refusing<'r>(
    mut rules: impl Iterator<Item = &'r Rule>,
    s: &Subject<'_>,
) -> Option<&'r Rule> {
    rules.find(|r| r.refuses(s))
}

/// `tools.allow` and `tools.deny` from the user's settings.
#[derive(Debug, Clone, Default)]
pub struct PermissionRules {
    allow: Vec<Rule>,
    deny: Vec<Rule>,
}

impl PermissionRules {
    /// Parses both lists; the error names the key and the bad entry.
    pub fn new(allow: &[String], deny: &[String]) -> Result<Self, String> {
        let parse = |key: &str, list: &[String], case: Case| -> Result<Vec<Rule>, String> {
            list.iter()
                .map(|text| {
                    Rule::parse(text, case).map_err(|e| format!("`{key}` entry `{text}` {e}"))
                })
                .collect()
        };
        Ok(Self {
            allow: parse("tools.allow", allow, Case::Sensitive)?,
            deny: parse("tools.deny", deny, Case::Insensitive)?,
        })
    }

    /// The deny rule that refuses the call, if any.
    pub fn denying(&self, s: &Subject<'_>) -> Option<&Rule> {
        refusing(self.deny.iter(), s)
    }

    /// Whether the allow rules cover the call.
    pub fn allow(&self, s: &Subject<'_>) -> bool {
        allows(self.allow.iter(), s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn shell(line: &CommandLine) -> Subject<'_> {
        Subject {
            tool: "run_shell_command",
            command: Some(line),
            file: None,
            domain: None,
            paths: &[],
        }
    }

    #[test]
    fn prefix_rules_match_whole_words() {
        let rules = PermissionRules::new(&["run_shell_command(git status)".into()], &[]).unwrap();
        assert!(rules.allow(&shell(&CommandLine::parse("git status --short"))));
        assert!(!rules.allow(&shell(&CommandLine::parse("git statusx"))));
        assert!(!rules.allow(&shell(&CommandLine::parse("git status; rm -rf x"))));
    }

    #[test]
    fn star_suffixes_are_accepted() {
        let rules = PermissionRules::new(
            &[
                "run_shell_command(npm run *)".into(),
                "run_shell_command(ls:*)".into(),
            ],
            &[],
        )
        .unwrap();
        assert!(rules.allow(&shell(&CommandLine::parse("npm run build && ls -la"))));
    }

    #[test]
    fn a_trailing_star_covers_every_tool_of_an_mcp_server_and_no_other() {
        let call = |tool| Subject {
            tool,
            command: None,
            file: None,
            domain: None,
            paths: &[],
        };
        let rules = PermissionRules::new(
            &["mcp__github__*".into()],
            &["mcp__github__delete_repo".into()],
        )
        .unwrap();
        assert!(rules.allow(&call("mcp__github__create_issue")));
        assert!(!rules.allow(&call("mcp__gitlab__create_issue")));
        assert!(!rules.allow(&call("run_shell_command")));
        assert!(rules.denying(&call("mcp__github__delete_repo")).is_some());
        assert!(rules.denying(&call("mcp__github__create_issue")).is_none());
    }

    #[test]
    fn a_bare_mcp_server_name_covers_every_tool_of_that_server_as_in_claude_code() {
        let call = |tool| Subject {
            tool,
            command: None,
            file: None,
            domain: None,
            paths: &[],
        };
        let rules = PermissionRules::new(&["mcp__github".into()], &["mcp__git".into()]).unwrap();
        assert!(rules.allow(&call("mcp__github__create_issue")));
        assert!(!rules.allow(&call("mcp__githubx__create_issue")));
        assert!(!rules.allow(&call("mcp__gitlab__create_issue")));
        assert!(rules.denying(&call("mcp__git__log")).is_some());
        assert!(rules.denying(&call("mcp__github__create_issue")).is_none());
    }

    #[test]
    fn domain_rules_cover_their_host_and_with_a_star_its_subdomains() {
        let fetch = |domain| Subject {
            tool: "web_fetch",
            command: None,
            file: None,
            domain: Some(domain),
            paths: &[],
        };
        let rules = PermissionRules::new(
            &[
                "web_fetch(domain:docs.rs)".into(),
                "web_fetch(domain:*.Rust-Lang.org)".into(),
            ],
            &["web_fetch(domain:EVIL.example)".into()],
        )
        .unwrap();
        assert!(rules.allow(&fetch("docs.rs")));
        assert!(!rules.allow(&fetch("sub.docs.rs")));
        assert!(!rules.allow(&fetch("evildocs.rs")));
        assert!(!rules.allow(&fetch("docs.rs.evil.example")));
        assert!(rules.allow(&fetch("doc.rust-lang.org")));
        assert!(rules.allow(&fetch("rust-lang.org")));
        assert!(!rules.allow(&fetch("notrust-lang.org")));
        assert!(rules.denying(&fetch("evil.example")).is_some());
        assert!(rules.denying(&fetch("docs.rs")).is_none());
        // A domain rule covers no call without a domain, and a domain call no other rule.
        let shell_line = CommandLine::parse("docs.rs");
        assert!(!rules.allow(&shell(&shell_line)));
        assert_eq!(
            PermissionRules::new(&["web_fetch(domain:)".into()], &[]).unwrap_err(),
            "`tools.allow` entry `web_fetch(domain:)` has `domain:`, which is not a host name \
             (write `domain:docs.rs`, or `domain:*.docs.rs` for it and its subdomains)"
        );
        assert!(PermissionRules::new(&["web_fetch(domain:a b)".into()], &[]).is_err());
    }

    #[test]
    fn malformed_rules_are_errors_naming_the_entry() {
        assert_eq!(
            PermissionRules::new(&["run_shell_command(git status".into()], &[]).unwrap_err(),
            "`tools.allow` entry `run_shell_command(git status` must end with `)` (the syntax \
             is `tool` or `tool(spec)`)"
        );
        assert_eq!(
            PermissionRules::new(&[], &["(x)".into()]).unwrap_err(),
            "`tools.deny` entry `(x)` must start with a tool name such as `run_shell_command` \
             or `write_file` (or a name ending in `*`, such as `mcp__github__*` for every tool \
             of an MCP server), found ``"
        );
        assert_eq!(
            PermissionRules::new(&["mcp__github__*(x)".into()], &[]).unwrap_err(),
            "`tools.allow` entry `mcp__github__*(x)` names every tool starting with \
             `mcp__github__`; such a rule covers them whole, so write it without parentheses"
        );
        assert!(PermissionRules::new(&["*".into()], &[]).is_err());
        assert_eq!(
            PermissionRules::new(&["edit()".into()], &[]).unwrap_err(),
            "`tools.allow` entry `edit()` has empty parentheses; write the bare tool name"
        );
    }
}
