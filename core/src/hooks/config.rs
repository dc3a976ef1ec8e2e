//! The `hooks` configuration: Claude Code's block read from every settings file that applies,
//! merged, with every problem an error naming `file:line:column` and the key.
//!
//! Files, in order: `$CORVID_HOME/settings.json`; the project's `.corvid/settings.json` when
//! the folder is trusted; and, when the user's file sets `hooks.importClaude: true` (or the
//! older top-level `importClaudeHooks: true`), `~/.claude/settings.json` and (under the same
//! trust) the project's `.claude/settings.json` and `.claude/settings.local.json`. Only the
//! user's file may set the switch (a project cannot opt itself into more files).
//! `disableAllHooks: true` in any of them turns every hook off.
//!
//! A project's handlers need more than a trusted folder: each runs only once the user
//! approved exactly that handler ([`super::review`]); the others wait in
//! [`HooksConfig::pending`]. The per-handler pin is what guards them, so a project file's
//! hooks are read whether or not the file as a whole was accepted.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use super::HookEvent;
use super::block::{Reader, describe};
use super::locate::Step;
use super::matcher::Matcher;
use crate::settings::{ProjectTrust, SettingsFiles, Trust, Verdict};

/// A handler's timeout when it sets none (Claude Code's 600 seconds).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// Whose file a handler came from, which decides its environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookScope {
    /// The user's own files: run with the user's environment.
    User,
    /// The project's files: run only in a trusted folder, with the shell tool's filtered
    /// environment (no provider keys or secrets).
    Project,
}

/// The file a handler was configured in.
#[derive(Debug, Clone, PartialEq)]
pub struct HookSource {
    pub path: PathBuf,
    pub scope: HookScope,
}

/// One configured command.
#[derive(Debug, Clone, PartialEq)]
pub struct Handler {
    pub event: HookEvent,
    pub matcher: Matcher,
    /// The command line, run with `bash -c`.
    pub command: String,
    pub timeout: Duration,
    /// `onError: "block"`: a crash, timeout, exit 127 or unparseable output blocks instead of
    /// letting the action go ahead.
    pub block_on_error: bool,
    /// `if`: the handler runs only for tool calls this rule covers.
    pub condition: Option<super::condition::Condition>,
    pub source: HookSource,
}

/// Every handler that applies, merged from all files (identical ones once).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HooksConfig {
    pub handlers: Vec<Handler>,
    /// `disableAllHooks: true` was set somewhere: nothing runs.
    pub disabled: bool,
    /// Problems that did not stop loading (unknown keys, files not applied, hooks waiting
    /// for review); callers show them to the user.
    pub warnings: Vec<String>,
    /// Project handlers the user has not approved (new, or changed since): they do not run.
    pub pending: Vec<super::review::PendingHook>,
}

/// A hooks block that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum HookConfigError {
    #[error("cannot read settings file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Not JSON (with comments). Line and column are 1-based.
    #[error("{}:{line}:{column}: invalid settings file: {message}", path.display())]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// A key of the hooks block holds something unusable. Line and column are 1-based (0
    /// when the position could not be found).
    #[error("{}:{line}:{column}: settings key `{key}` {message}", path.display())]
    Invalid {
        path: PathBuf,
        line: usize,
        column: usize,
        key: String,
        message: String,
    },
    /// The shell environment settings the project's hooks run under do not compile.
    #[error("tools.shellEnv: {0}")]
    Environment(String),
}

impl HooksConfig {
    /// The hooks of a session whose settings files are `files`, the project's accepted as
    /// `project` says; `home` is the user's home folder (for `~/.claude`).
    pub fn load(
        files: &SettingsFiles,
        project: &ProjectTrust,
        home: Option<&Path>,
    ) -> Result<Self, HookConfigError> {
        let mut config = Self::default();
        let mut import_claude = false;
        if let Some(path) = &files.user
            && let Some(text) = read_text(path)?
        {
            let root = config.add_file(path, &text, HookScope::User)?;
            import_claude = root.as_ref().is_some_and(imports_claude);
        }
        if import_claude && let Some(home) = home {
            let path = home.join(".claude").join("settings.json");
            if let Some(text) = read_text(&path)? {
                config.add_file(&path, &text, HookScope::User)?;
            }
        }
        let mut project_files: Vec<PathBuf> = files
            .project_file()
            .map(Path::to_owned)
            .into_iter()
            .collect();
        if import_claude && let Some(folder) = files.project_folder() {
            let claude = folder.join(".claude");
            project_files.push(claude.join("settings.json"));
            project_files.push(claude.join("settings.local.json"));
        }
        for path in project_files {
            if !path.exists() {
                continue;
            }
            if project.trust == Trust::Untrusted {
                config.warnings.extend(ProjectTrust::ignored_warning(
                    &path,
                    "project hooks",
                    Verdict::NotTrusted,
                ));
                continue;
            }
            if let Some(text) = read_text(&path)? {
                config.add_file(&path, &text, HookScope::Project)?;
            }
        }
        // Without a project folder no project file was read; should one ever be, its handlers
        // still wait (no approval names an empty folder).
        let folder = files.project_folder().unwrap_or(Path::new(""));
        super::review::hold_back(&mut config, folder, project);
        Ok(config)
    }

    /// Adds the hooks of one file's `text`; returns its top-level object for the caller's
    /// own switches (`None` for an empty file).
    pub fn add_file(
        &mut self,
        path: &Path,
        text: &str,
        scope: HookScope,
    ) -> Result<Option<Map<String, Value>>, HookConfigError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        if text.trim().is_empty() {
            return Ok(None);
        }
        let root: Value = json5::from_str(text).map_err(|e| {
            let pos = e
                .position()
                .unwrap_or_else(|| json5::Position::from_offset(text.len(), text));
            HookConfigError::Syntax {
                path: path.to_owned(),
                line: pos.line + 1,
                column: pos.column + 1,
                message: e.code().map_or_else(|| e.to_string(), |c| c.to_string()),
            }
        })?;
        let Value::Object(root) = root else {
            // The settings loader reports a top level that is not an object.
            return Ok(None);
        };
        let mut reader = Reader {
            path,
            text,
            scope,
            warnings: &mut self.warnings,
            handlers: Vec::new(),
        };
        if let Some(v) = root.get("disableAllHooks") {
            match v {
                Value::Bool(b) => self.disabled |= *b,
                Value::Null => {}
                other => {
                    return Err(reader.error(
                        &[Step::Key("disableAllHooks".into())],
                        &format!("must be true or false, found {}", describe(other)),
                    ));
                }
            }
        }
        let switches = [
            (root.get("importClaudeHooks"), "importClaudeHooks"),
            (
                root.get("hooks").and_then(|h| h.get(IMPORT_CLAUDE)),
                "hooks.importClaude",
            ),
        ];
        for (value, key) in switches {
            let Some(v) = value else { continue };
            let at: Vec<Step> = key.split('.').map(|k| Step::Key(k.into())).collect();
            if !matches!(v, Value::Bool(_) | Value::Null) {
                return Err(reader.error(
                    &at,
                    &format!("must be true or false, found {}", describe(v)),
                ));
            }
            if scope == HookScope::Project {
                let place = reader.location(&at);
                reader.warnings.push(format!(
                    "{place}: `{key}` is read from your own settings file only (ignored)"
                ));
            }
        }
        if let Some(hooks) = root.get("hooks") {
            reader.hooks(hooks)?;
        }
        let found = std::mem::take(&mut reader.handlers);
        for handler in found {
            self.add(handler);
        }
        Ok(Some(root))
    }

    /// Adds `handler` unless an identical one (same event, matcher and command) is there;
    /// then the stricter `onError` and the longer timeout of the two apply.
    fn add(&mut self, handler: Handler) {
        match self.handlers.iter_mut().find(|h| {
            h.event == handler.event
                && h.matcher.as_str() == handler.matcher.as_str()
                && h.command == handler.command
                && h.condition == handler.condition
        }) {
            Some(same) => {
                same.block_on_error |= handler.block_on_error;
                same.timeout = same.timeout.max(handler.timeout);
            }
            None => self.handlers.push(handler),
        }
    }

    /// Whether no handler would ever run.
    pub fn is_empty(&self) -> bool {
        self.disabled || self.handlers.is_empty()
    }
}

/// The key inside `hooks` that reads Claude Code's files too (not an event).
pub(super) const IMPORT_CLAUDE: &str = "importClaude";

/// Whether the user's settings `root` asks for Claude Code's hooks: `hooks.importClaude`, or
/// the older top-level `importClaudeHooks` kept as its alias.
fn imports_claude(root: &Map<String, Value>) -> bool {
    let on = |v: Option<&Value>| v.and_then(Value::as_bool).unwrap_or(false);
    on(root.get("hooks").and_then(|h| h.get(IMPORT_CLAUDE))) || on(root.get("importClaudeHooks"))
}

/// Checks the hooks block of a settings file being loaded, so a malformed one is a settings
/// error (naming `file:line:column` and the key) in every front end, not only in
/// `corvid hooks`. Warnings are left to the hooks' own loading.
pub(crate) fn check(path: &Path, text: &str) -> Result<(), crate::settings::SettingsError> {
    use crate::settings::SettingsError;
    match HooksConfig::default().add_file(path, text, HookScope::User) {
        Ok(_) => Ok(()),
        Err(HookConfigError::Invalid {
            path,
            line,
            column,
            key,
            message,
        }) => Err(SettingsError::InvalidValue {
            origin: format!("{}:{line}:{column}", path.display()),
            key,
            message,
        }),
        Err(HookConfigError::Syntax {
            path,
            line,
            column,
            message,
        }) => Err(SettingsError::Syntax {
            path,
            line,
            column,
            message,
        }),
        Err(HookConfigError::Read { path, source }) => Err(SettingsError::Read { path, source }),
        Err(HookConfigError::Environment(message)) => Err(SettingsError::InvalidValue {
            origin: path.display().to_string(),
            key: "tools.shellEnv".into(),
            message,
        }),
    }
}

/// The file's text, `None` when it does not exist. Project files are read as a regular file
/// only (a FIFO planted there must not hang the start).
fn read_text(path: &Path) -> Result<Option<String>, HookConfigError> {
    use std::io::Read;
    let mut file = match crate::settings::open_regular(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(HookConfigError::Read {
                path: path.to_owned(),
                source,
            });
        }
    };
    let mut text = String::new();
    file.read_to_string(&mut text)
        .map_err(|source| HookConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
    Ok(Some(text))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use pretty_assertions::assert_eq;

    fn parse(text: &str) -> Result<HooksConfig, HookConfigError> {
        let mut config = HooksConfig::default();
        config.add_file(Path::new("/u/settings.json"), text, HookScope::User)?;
        Ok(config)
    }

    #[test]
    fn claude_codes_block_is_read_as_it_is() {
        let config = parse(
            r#"{
  "hooks": {
    "PostToolUse": [
      {
        "matcher": "Edit|Write",
        "hooks": [
          {
            "type": "command",
            "command": "jq -r '.tool_input.file_path' | xargs npx prettier --write"
          }
        ]
      }
    ],
    "Stop": [{"hooks": [{"type": "command", "command": "./check.sh", "timeout": 30, "onError": "block"}]}]
  }
}"#,
        )
        .unwrap();
        assert_eq!(config.handlers.len(), 2);
        let format = &config.handlers[0];
        assert_eq!(format.event, HookEvent::PostToolUse);
        assert_eq!(format.matcher.as_str(), "Edit|Write");
        assert_eq!(format.timeout, DEFAULT_TIMEOUT);
        assert!(!format.block_on_error);
        let stop = &config.handlers[1];
        assert_eq!(stop.timeout, Duration::from_secs(30));
        assert!(stop.block_on_error);
        assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    }

    #[test]
    fn identical_handlers_from_two_files_are_kept_once() {
        let block = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}}"#;
        let mut config = HooksConfig::default();
        config
            .add_file(Path::new("/a"), block, HookScope::User)
            .unwrap();
        config
            .add_file(Path::new("/b"), block, HookScope::Project)
            .unwrap();
        assert_eq!(config.handlers.len(), 1);
        assert_eq!(config.handlers[0].source.path, Path::new("/a"));
    }

    #[test]
    fn disable_all_hooks_turns_everything_off() {
        let config = parse(
            r#"{"disableAllHooks": true, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}}"#,
        )
        .unwrap();
        assert!(config.is_empty());
    }

    fn error_of(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn a_negative_timeout_is_an_error_naming_file_line_column_and_key() {
        let text = "{\n  \"hooks\": {\n    \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"x\", \"timeout\": -5}]}]\n  }\n}";
        let err = error_of(text);
        assert!(err.starts_with("/u/settings.json:3:"), "{err}");
        assert!(err.contains("`hooks.Stop[0].hooks[0].timeout`"), "{err}");
        assert!(err.contains("expected seconds above 0"), "{err}");
    }

    #[test]
    fn an_unknown_event_a_bad_regex_and_a_wrong_type_are_errors() {
        let err = error_of(r#"{"hooks": {"PreToolUse ": []}}"#);
        assert!(
            err.contains("`hooks.PreToolUse ` is not a hook event"),
            "{err}"
        );
        let err = error_of(r#"{"hooks": {"PreToolUse": [{"matcher": "Bash(", "hooks": []}]}}"#);
        assert!(err.starts_with("/u/settings.json:1:39:"), "{err}");
        assert!(
            err.ends_with("is not a valid regular expression: unclosed group"),
            "{err}"
        );
        assert!(
            err.contains("`hooks.PreToolUse[0].matcher` is not a valid regular expression"),
            "{err}"
        );
        let err = error_of(r#"{"hooks": {"Stop": {"hooks": []}}}"#);
        assert!(
            err.contains("`hooks.Stop` must be a list of matcher entries, found an object"),
            "{err}"
        );
        let err =
            error_of(r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": 3}]}]}}"#);
        assert!(
            err.contains("`hooks.Stop[0].hooks[0].command` must be a string"),
            "{err}"
        );
    }

    #[test]
    fn unknown_fields_and_other_handler_types_are_warnings() {
        let config = parse(
            r#"{"hooks": {"Stop": [{"hooks": [
                {"type": "command", "command": "x", "timeot": 5},
                {"type": "prompt", "prompt": "check"}
            ]}]}}"#,
        )
        .unwrap();
        assert_eq!(config.handlers.len(), 1);
        assert!(
            config.warnings[0].contains("`hooks.Stop[0].hooks[0].timeot`"),
            "{:?}",
            config.warnings
        );
        assert!(
            config.warnings.iter().any(|w| w.contains("type `prompt`")),
            "{:?}",
            config.warnings
        );
    }

    #[test]
    fn import_claude_inside_hooks_is_a_switch_not_an_event_and_must_be_a_boolean() {
        let config = parse(r#"{"hooks": {"importClaude": true}}"#).unwrap();
        assert!(config.handlers.is_empty() && config.warnings.is_empty());
        let root: Map<String, Value> =
            serde_json::from_str(r#"{"hooks": {"importClaude": true}}"#).unwrap();
        assert!(imports_claude(&root));
        let err = error_of("{\n  \"hooks\": {\"importClaude\": \"yes\"}\n}");
        assert!(err.starts_with("/u/settings.json:2:29:"), "{err}");
        assert!(
            err.contains("`hooks.importClaude` must be true or false, found"),
            "{err}"
        );
    }
}
