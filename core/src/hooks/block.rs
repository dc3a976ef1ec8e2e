//! Reading one settings file's `hooks` value: Claude Code's shape checked key by key, each
//! problem an error (or, for unknown keys and handler types corvid does not run, a warning)
//! naming `file:line:column` and the key.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::HookEvent;
use super::config::{DEFAULT_TIMEOUT, Handler, HookConfigError, HookScope, HookSource};
use super::locate::{Step, position};
use super::matcher::Matcher;

/// Reads one file's `hooks` value.
pub(super) struct Reader<'a> {
    pub path: &'a Path,
    pub text: &'a str,
    pub scope: HookScope,
    pub warnings: &'a mut Vec<String>,
    pub handlers: Vec<Handler>,
}

impl Reader<'_> {
    pub(super) fn hooks(&mut self, value: &Value) -> Result<(), HookConfigError> {
        let mut at = vec![Step::Key("hooks".into())];
        let events = match value {
            Value::Null => return Ok(()),
            Value::Object(events) => events,
            other => return Err(self.wrong_type(&at, "an object of events", other)),
        };
        for (name, entries) in events {
            if name == super::config::IMPORT_CLAUDE {
                // A switch, not an event; checked where the file is read.
                continue;
            }
            at.push(Step::Key(name.clone()));
            let Some(event) = HookEvent::parse(name) else {
                let known: Vec<&str> = HookEvent::ALL.iter().map(|e| e.as_str()).collect();
                return Err(self.error(
                    &at,
                    &format!("is not a hook event; expected one of {}", known.join(", ")),
                ));
            };
            let entries = match entries {
                Value::Null => &Vec::new(),
                Value::Array(entries) => entries,
                other => return Err(self.wrong_type(&at, "a list of matcher entries", other)),
            };
            for (i, entry) in entries.iter().enumerate() {
                at.push(Step::Index(i));
                self.entry(event, entry, &mut at)?;
                at.pop();
            }
            at.pop();
        }
        Ok(())
    }

    fn entry(
        &mut self,
        event: HookEvent,
        entry: &Value,
        at: &mut Vec<Step>,
    ) -> Result<(), HookConfigError> {
        let Value::Object(entry) = entry else {
            return Err(self.wrong_type(at, "an object with `matcher` and `hooks`", entry));
        };
        let mut matcher = Matcher::all();
        for (key, value) in entry {
            at.push(Step::Key(key.clone()));
            match key.as_str() {
                "matcher" => match value {
                    Value::Null => {}
                    Value::String(raw) => {
                        matcher = Matcher::new(raw).map_err(|e| {
                            self.error(at, &format!("is not a valid regular expression: {e}"))
                        })?;
                    }
                    other => return Err(self.wrong_type(at, "a string", other)),
                },
                "hooks" => {}
                _ => self.unknown(at),
            }
            at.pop();
        }
        at.push(Step::Key("hooks".into()));
        let list = match entry.get("hooks") {
            Some(Value::Array(list)) => list,
            Some(Value::Null) | None => &Vec::new(),
            Some(other) => return Err(self.wrong_type(at, "a list of handlers", other)),
        };
        for (i, handler) in list.iter().enumerate() {
            at.push(Step::Index(i));
            if let Some(handler) = self.handler(event, &matcher, handler, at)? {
                self.handlers.push(handler);
            }
            at.pop();
        }
        at.pop();
        Ok(())
    }

    fn handler(
        &mut self,
        event: HookEvent,
        matcher: &Matcher,
        value: &Value,
        at: &mut Vec<Step>,
    ) -> Result<Option<Handler>, HookConfigError> {
        let Value::Object(fields) = value else {
            return Err(self.wrong_type(at, "an object with `type` and `command`", value));
        };
        let mut command = None;
        let mut timeout = DEFAULT_TIMEOUT;
        let mut block_on_error = false;
        let mut condition = None;
        let mut kind = None;
        for (key, value) in fields {
            at.push(Step::Key(key.clone()));
            match key.as_str() {
                "type" => match value {
                    Value::String(t) => kind = Some(t.clone()),
                    other => return Err(self.wrong_type(at, "a string", other)),
                },
                "command" => match value {
                    Value::String(c) if !c.trim().is_empty() => command = Some(c.clone()),
                    Value::String(_) => return Err(self.error(at, "is empty")),
                    other => return Err(self.wrong_type(at, "a string", other)),
                },
                "timeout" => {
                    let seconds = value.as_f64().filter(|_| value.is_number());
                    match seconds {
                        Some(s) if s > 0.0 && s.is_finite() => {
                            timeout = Duration::from_secs_f64(s.min(86_400.0));
                        }
                        Some(_) => {
                            return Err(
                                self.error(at, &format!("is `{value}`; expected seconds above 0"))
                            );
                        }
                        None if value.is_null() => {}
                        None => return Err(self.wrong_type(at, "a number of seconds", value)),
                    }
                }
                "if" => match value {
                    Value::String(rule) if event.is_tool_event() => {
                        condition =
                            Some(super::condition::Condition::parse(rule).map_err(|e| {
                                self.error(at, &format!("is not a permission rule: it {e}"))
                            })?);
                    }
                    Value::String(_) => {
                        return Err(self.error(
                            at,
                            "applies only to tool events (PreToolUse, PostToolUse, \
                             PostToolUseFailure)",
                        ));
                    }
                    other => {
                        return Err(self.wrong_type(at, "a string such as \"Bash(git *)\"", other));
                    }
                },
                "onError" => match value {
                    Value::String(s) if s == "block" => block_on_error = true,
                    Value::String(s) if s == "continue" => {}
                    Value::Null => {}
                    other => {
                        return Err(self.error(
                            at,
                            &format!("is {}; expected \"block\" or \"continue\"", describe(other)),
                        ));
                    }
                },
                _ => self.unknown(at),
            }
            at.pop();
        }
        match kind.as_deref() {
            Some("command") => {}
            Some(other) => {
                self.warnings.push(format!(
                    "{}: hook handler `{}` has type `{other}`, which corvid does not run yet \
                     (only \"command\"); it is skipped",
                    self.location(at),
                    key_name(at)
                ));
                return Ok(None);
            }
            None => {
                return Err(self.error(at, "has no `type`; expected \"type\": \"command\""));
            }
        }
        let Some(command) = command else {
            return Err(self.error(at, "has no `command`"));
        };
        Ok(Some(Handler {
            event,
            matcher: matcher.clone(),
            command,
            timeout,
            block_on_error,
            condition,
            source: HookSource {
                path: self.path.to_owned(),
                scope: self.scope,
            },
        }))
    }

    fn unknown(&mut self, at: &[Step]) {
        self.warnings.push(format!(
            "{}: unknown settings key `{}` (ignored)",
            self.location(at),
            key_name(at)
        ));
    }

    pub(super) fn location(&self, at: &[Step]) -> String {
        match position(self.text, at) {
            Some((line, column)) => format!("{}:{line}:{column}", self.path.display()),
            None => self.path.display().to_string(),
        }
    }

    fn wrong_type(&self, at: &[Step], expected: &str, found: &Value) -> HookConfigError {
        self.error(
            at,
            &format!("must be {expected}, found {}", describe(found)),
        )
    }

    pub(super) fn error(&self, at: &[Step], message: &str) -> HookConfigError {
        let (line, column) = position(self.text, at).unwrap_or((0, 0));
        HookConfigError::Invalid {
            path: self.path.to_owned(),
            line,
            column,
            key: key_name(at),
            message: message.to_owned(),
        }
    }
}

/// `hooks.PreToolUse[0].hooks[1].timeout`.
fn key_name(at: &[Step]) -> String {
    let mut out = String::new();
    for step in at {
        match step {
            Step::Key(k) if out.is_empty() => out.push_str(k),
            Step::Key(k) => {
                out.push('.');
                out.push_str(k);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

pub(super) fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {s:?}"),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "an object".into(),
    }
}
