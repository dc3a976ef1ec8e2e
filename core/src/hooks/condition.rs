//! A handler's `if`: one permission rule in corvid's syntax, the tool named Claude's way or
//! corvid's (`Bash(git *)` or `run_shell_command(git *)`), so a handler runs only for the
//! calls the rule covers, as a deny rule would cover them (any part of a command line, any
//! spelling of any path).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::claude_names::corvid_name;
use crate::policy::path_pattern::{Case, touched};
use crate::policy::rules::{Rule, Subject};
use crate::policy::shell_words::CommandLine;

/// A parsed `if` rule.
#[derive(Debug, Clone)]
pub struct Condition {
    rule: Rule,
    source: String,
}

impl PartialEq for Condition {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Condition {
    /// Parses `text`; the error says what is wrong with the rule.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let (name, rest) = text.find('(').map_or((text, ""), |i| text.split_at(i));
        let rule = Rule::parse(
            &format!("{}{rest}", corvid_name(name.trim())),
            Case::Sensitive,
        )?;
        Ok(Self {
            rule,
            source: text.to_owned(),
        })
    }

    /// The rule as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether the rule covers a call of corvid's tool `name` whose input a hook sees as
    /// `input` (Claude's field names, absolute paths); `cwd` anchors relative patterns.
    pub fn covers(&self, name: &str, input: &Value, cwd: &Path) -> bool {
        let field = |key: &str| input.get(key).and_then(Value::as_str);
        let command = field("command").map(CommandLine::parse);
        let paths: Vec<PathBuf> = ["file_path", "path", "notebook_path"]
            .into_iter()
            .filter_map(field)
            .map(|p| cwd.join(p))
            .collect();
        let paths = touched(cwd, &paths);
        // `WebFetch(domain:docs.rs)`: the host of the fetched URL, as the approval sees it.
        let domain = field("url")
            .and_then(|url| url::Url::parse(url.trim()).ok())
            .and_then(|url| {
                url.host_str()
                    .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
            });
        let subject = Subject {
            tool: name,
            command: command.as_ref(),
            file: None,
            domain: domain.as_deref(),
            paths: &paths,
        };
        self.rule.covers(&subject)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn a_claude_named_rule_covers_matching_commands_only() {
        let git = Condition::parse("Bash(git *)").unwrap();
        let cwd = Path::new("/p");
        assert!(git.covers("run_shell_command", &json!({"command": "git push"}), cwd));
        assert!(git.covers(
            "run_shell_command",
            &json!({"command": "make && git commit -m x"}),
            cwd
        ));
        assert!(!git.covers("run_shell_command", &json!({"command": "ls"}), cwd));
        assert!(!git.covers("write_file", &json!({"file_path": "/p/git"}), cwd));
    }

    #[test]
    fn a_path_rule_covers_files_under_its_pattern() {
        let src = Condition::parse("Write(src/**)").unwrap();
        let cwd = Path::new("/p");
        assert!(src.covers("write_file", &json!({"file_path": "/p/src/a.rs"}), cwd));
        assert!(!src.covers("write_file", &json!({"file_path": "/p/docs/a.md"}), cwd));
    }

    #[test]
    fn a_malformed_rule_is_an_error() {
        assert!(Condition::parse("Bash(git").is_err());
    }
}
