//! The contract with a handler, byte for byte as Claude Code's: the JSON it reads on stdin,
//! and what its exit code and output mean.
//!
//! Exit 0: stdout is JSON when it starts with `{`, else plain text (context for
//! `UserPromptSubmit` and `SessionStart`). Exit 2: a block, stderr the reason; JSON is not
//! read. Anything else (another code, a signal, a timeout, no such command) is a failure the
//! user is shown, which blocks only when the handler says `onError: "block"`.

use std::path::{Path, PathBuf};

use corvid_protocol::ApprovalMode;
use corvid_tools::hooks_runner::{HookExit, HookRun};
use serde_json::{Map, Value, json};

use super::HookEvent;
use super::claude_names::{claude_input, claude_name};
use super::config::Handler;
use super::outcome::{Effect, HandlerReport, Permission};

/// What every event's input carries about the session.
#[derive(Debug, Clone, PartialEq)]
pub struct HookContext {
    pub session_id: String,
    /// The session's transcript file, when it has one.
    pub transcript_path: Option<PathBuf>,
    /// The project folder: handlers run there and it is `CLAUDE_PROJECT_DIR`.
    pub project_dir: PathBuf,
    /// The working folder of the session (`cwd` in the input).
    pub cwd: PathBuf,
    pub approval_mode: ApprovalMode,
    /// Set inside a subagent: its id and type.
    pub agent: Option<(String, String)>,
}

/// One event's own fields and what its matchers look at.
#[derive(Debug, Clone, PartialEq)]
pub struct HookPayload {
    pub event: HookEvent,
    /// The names a matcher may select (a tool's Claude and corvid names, a session source);
    /// empty for events without matchers.
    pub match_names: Vec<String>,
    /// The event's fields, merged into the input after the common ones.
    pub fields: Map<String, Value>,
    /// For tool events: corvid's tool name and input, to map `updatedInput` back.
    pub tool: Option<(String, Value)>,
    /// For tool events: the folder relative paths of an `if` rule are anchored in.
    pub cwd: PathBuf,
}

impl HookPayload {
    /// An event without fields of its own (`Stop` etc. fill theirs with [`Self::with`]).
    pub fn new(event: HookEvent) -> Self {
        Self {
            event,
            match_names: Vec::new(),
            fields: Map::new(),
            tool: None,
            cwd: PathBuf::new(),
        }
    }

    /// Adds a field of the event's input.
    pub fn with(mut self, key: &str, value: Value) -> Self {
        self.fields.insert(key.to_owned(), value);
        self
    }

    /// Sets what the event's matchers select on (`startup`, `auto`, `permission_prompt`).
    pub fn matching(mut self, name: &str) -> Self {
        self.match_names = vec![name.to_owned()];
        self
    }

    /// A tool event about corvid's tool `name` called with `input` (`call_id` is
    /// `tool_use_id`): the hook sees Claude's name and field names, with absolute paths.
    pub fn tool(event: HookEvent, name: &str, call_id: &str, input: &Value, cwd: &Path) -> Self {
        let claude = claude_name(name);
        let mut match_names = vec![claude.to_owned()];
        if claude != name {
            match_names.push(name.to_owned());
        }
        Self {
            event,
            match_names,
            fields: Map::from_iter([
                ("tool_name".to_owned(), Value::from(claude)),
                ("tool_input".to_owned(), claude_input(name, input, cwd)),
                ("tool_use_id".to_owned(), Value::from(call_id)),
            ]),
            tool: Some((name.to_owned(), input.clone())),
            cwd: cwd.to_owned(),
        }
    }

    /// The document written to a handler's stdin.
    pub fn stdin(&self, ctx: &HookContext) -> Vec<u8> {
        let mut doc = json!({
            "session_id": ctx.session_id,
            "transcript_path": ctx.transcript_path.as_ref().map(|p| p.to_string_lossy()),
            "cwd": ctx.cwd.to_string_lossy(),
            "permission_mode": permission_mode(ctx.approval_mode),
            "hook_event_name": self.event.as_str(),
        });
        if let Some(obj) = doc.as_object_mut() {
            if let Some((id, kind)) = &ctx.agent {
                obj.insert("agent_id".into(), Value::from(id.as_str()));
                obj.insert("agent_type".into(), Value::from(kind.as_str()));
            }
            for (k, v) in &self.fields {
                obj.insert(k.clone(), v.clone());
            }
        }
        doc.to_string().into_bytes()
    }
}

/// Claude Code's word for corvid's approval mode.
pub fn permission_mode(mode: ApprovalMode) -> &'static str {
    match mode {
        ApprovalMode::Default => "default",
        // `auto` accepts edits too; its unasked sandboxed commands have no Claude word.
        ApprovalMode::AutoEdit | ApprovalMode::Auto => "acceptEdits",
        ApprovalMode::Yolo => "bypassPermissions",
        ApprovalMode::Plan => "plan",
    }
}

/// What one handler's run means for `event`.
pub fn interpret(event: HookEvent, handler: &Handler, run: HookRun) -> HandlerReport {
    let mut report = HandlerReport {
        handler: handler.clone(),
        exit: run.exit.clone(),
        stdout: run.stdout,
        stderr: run.stderr,
        truncated: run.truncated,
        duration: run.duration,
        effect: Effect::default(),
        warnings: Vec::new(),
    };
    let failure = match &run.exit {
        HookExit::Code(0) => {
            let out = report.stdout.trim_start();
            if out.starts_with('{') {
                match serde_json::from_str::<Map<String, Value>>(out.trim_end()) {
                    Ok(fields) => {
                        read_json(event, &fields, &mut report);
                        None
                    }
                    Err(e) => Some(format!(
                        "its output starts with `{{` but is not a JSON object ({e})"
                    )),
                }
            } else {
                let text = report.stdout.trim();
                if !text.is_empty()
                    && matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart)
                {
                    report.effect.context = Some(text.to_owned());
                }
                None
            }
        }
        HookExit::Code(2) => {
            let reason = report.stderr.trim();
            report.effect.block = Some(if reason.is_empty() {
                "a hook exited 2 (block) without writing a reason to stderr".to_owned()
            } else {
                reason.to_owned()
            });
            None
        }
        HookExit::Code(127) => Some(format!(
            "exit 127: the command was not found ({})",
            first_line(&report.stderr)
        )),
        HookExit::Code(code) => Some(format!("exit {code}: {}", first_line(&report.stderr))),
        HookExit::Signal(signal) => Some(format!("killed by signal {signal}")),
        HookExit::TimedOut => Some(format!(
            "timed out after {} s; its process group was killed",
            handler.timeout.as_secs_f64()
        )),
        HookExit::SpawnFailed(e) => Some(format!("could not be started: {e}")),
    };
    if let Some(cause) = failure {
        if handler.block_on_error {
            report.effect.block = Some(format!(
                "hook `{}` failed and has onError \"block\": {cause}",
                handler.command
            ));
        } else {
            report.effect.failure = Some(cause);
        }
    }
    report
}

fn first_line(text: &str) -> &str {
    text.trim().lines().next().unwrap_or("no output on stderr")
}

/// The JSON output's fields; a misspelled or misplaced one is a warning naming it.
fn read_json(event: HookEvent, fields: &Map<String, Value>, report: &mut HandlerReport) {
    let name = report.handler.command.clone();
    let warn = |report: &mut HandlerReport, msg: String| {
        report.warnings.push(format!("hook `{name}`: {msg}"));
    };
    for (key, value) in fields {
        match key.as_str() {
            "continue" => {
                if value == &Value::Bool(false) {
                    let reason = fields
                        .get("stopReason")
                        .and_then(Value::as_str)
                        .unwrap_or("a hook asked to stop");
                    report.effect.stop = Some(reason.to_owned());
                }
            }
            "stopReason" | "suppressOutput" | "reason" => {}
            "systemMessage" => {
                report.effect.system_message = value.as_str().map(str::to_owned);
            }
            "decision" => match value.as_str() {
                Some("block") => {
                    let reason = fields
                        .get("reason")
                        .and_then(Value::as_str)
                        .unwrap_or("blocked by a hook");
                    report.effect.block = Some(reason.to_owned());
                }
                // Claude Code's older spelling of "let it go ahead".
                Some("approve") | None => {}
                Some(other) => warn(
                    report,
                    format!("field `decision` is `{other}`; only \"block\" means anything"),
                ),
            },
            "hookSpecificOutput" => match value {
                Value::Object(specific) => read_specific(event, specific, report),
                _ => warn(report, "field `hookSpecificOutput` is not an object".into()),
            },
            other => warn(
                report,
                format!("unknown field `{other}` in its JSON output (ignored)"),
            ),
        }
    }
}

fn read_specific(event: HookEvent, fields: &Map<String, Value>, report: &mut HandlerReport) {
    let name = report.handler.command.clone();
    let mut warnings = Vec::new();
    match fields.get("hookEventName").and_then(Value::as_str) {
        None => warnings.push(format!(
            "`hookSpecificOutput` has no `hookEventName` (Claude Code would ignore it; corvid \
             applies it as {event})"
        )),
        Some(named) if named != event.as_str() => warnings.push(format!(
            "`hookSpecificOutput.hookEventName` is `{named}` but the event is {event}"
        )),
        Some(_) => {}
    }
    for (key, value) in fields {
        match key.as_str() {
            "hookEventName" | "permissionDecisionReason" => {}
            "permissionDecision" => {
                if event != HookEvent::PreToolUse {
                    warnings.push(format!(
                        "`hookSpecificOutput.permissionDecision` means nothing for {event}"
                    ));
                    continue;
                }
                let reason = fields
                    .get("permissionDecisionReason")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                report.effect.permission = match value.as_str() {
                    Some("deny") => Some(Permission::Deny(reason)),
                    Some("ask") => Some(Permission::Ask(reason)),
                    Some("allow") => Some(Permission::Allow(reason)),
                    _ => {
                        warnings.push(format!(
                            "`hookSpecificOutput.permissionDecision` is {value}; expected \
                             \"allow\", \"deny\" or \"ask\""
                        ));
                        None
                    }
                };
            }
            "updatedInput" => {
                if event == HookEvent::PreToolUse && value.is_object() {
                    report.effect.updated_input = Some(value.clone());
                } else {
                    warnings.push(format!(
                        "`hookSpecificOutput.updatedInput` is ignored for {event} (only a \
                         PreToolUse object counts)"
                    ));
                }
            }
            "additionalContext" => match value.as_str() {
                Some(text) => report.effect.context = Some(text.to_owned()),
                None => {
                    warnings.push("`hookSpecificOutput.additionalContext` is not a string".into())
                }
            },
            other => warnings.push(format!(
                "unknown field `hookSpecificOutput.{other}` in its JSON output (ignored)"
            )),
        }
    }
    report
        .warnings
        .extend(warnings.into_iter().map(|w| format!("hook `{name}`: {w}")));
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use pretty_assertions::assert_eq;

    use super::super::config::{HookScope, HookSource};
    use super::super::matcher::Matcher;
    use super::*;

    fn handler(block_on_error: bool) -> Handler {
        Handler {
            event: HookEvent::PreToolUse,
            matcher: Matcher::all(),
            command: "./h.sh".into(),
            timeout: Duration::from_secs(5),
            block_on_error,
            condition: None,
            source: HookSource {
                path: "/u/settings.json".into(),
                scope: HookScope::User,
            },
        }
    }

    fn ran(code: i32, stdout: &str, stderr: &str) -> HookRun {
        HookRun {
            exit: HookExit::Code(code),
            stdout: stdout.into(),
            stderr: stderr.into(),
            truncated: false,
            duration: Duration::ZERO,
        }
    }

    #[test]
    fn a_decision_without_hook_event_name_is_a_warning_naming_handler_and_field() {
        let out = r#"{"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "no"}}"#;
        let report = interpret(HookEvent::PreToolUse, &handler(false), ran(0, out, ""));
        assert_eq!(
            report.effect.permission,
            Some(Permission::Deny("no".into()))
        );
        assert_eq!(report.warnings.len(), 1);
        assert!(
            report.warnings[0]
                .starts_with("hook `./h.sh`: `hookSpecificOutput` has no `hookEventName`"),
            "{:?}",
            report.warnings
        );
    }

    #[test]
    fn a_misspelled_field_is_a_warning_naming_it() {
        let out = r#"{"decison": "block", "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecison": "deny"}}"#;
        let report = interpret(HookEvent::PreToolUse, &handler(false), ran(0, out, ""));
        assert_eq!(report.effect, Effect::default());
        assert_eq!(
            report.warnings,
            vec![
                "hook `./h.sh`: unknown field `decison` in its JSON output (ignored)".to_owned(),
                "hook `./h.sh`: unknown field `hookSpecificOutput.permissionDecison` in its JSON output (ignored)".to_owned(),
            ]
        );
    }

    #[test]
    fn plain_stdout_is_context_for_a_prompt_but_not_for_a_tool_call() {
        let report = interpret(
            HookEvent::UserPromptSubmit,
            &handler(false),
            ran(0, "today is Friday\n", ""),
        );
        assert_eq!(report.effect.context.as_deref(), Some("today is Friday"));
        let report = interpret(
            HookEvent::PreToolUse,
            &handler(false),
            ran(0, "today is Friday\n", ""),
        );
        assert_eq!(report.effect.context, None);
    }

    #[test]
    fn unparseable_json_fails_and_blocks_only_under_on_error_block() {
        let report = interpret(HookEvent::PreToolUse, &handler(false), ran(0, "{oops", ""));
        assert!(
            report
                .effect
                .failure
                .as_deref()
                .unwrap()
                .contains("not a JSON object")
        );
        assert_eq!(report.effect.block, None);
        let report = interpret(HookEvent::PreToolUse, &handler(true), ran(0, "{oops", ""));
        assert!(report.effect.block.as_deref().unwrap().starts_with(
            "hook `./h.sh` failed and has onError \"block\": its output starts with `{`"
        ));
    }

    #[test]
    fn exit_2_ignores_stdout_json_and_uses_stderr() {
        let out = r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}"#;
        let report = interpret(
            HookEvent::PreToolUse,
            &handler(false),
            ran(2, out, "no rm\n"),
        );
        assert_eq!(report.effect.block.as_deref(), Some("no rm"));
        assert_eq!(report.effect.permission, None);
    }

    #[test]
    fn the_input_carries_the_common_fields_and_claudes_tool_shape() {
        let ctx = HookContext {
            session_id: "s".into(),
            transcript_path: None,
            project_dir: "/p".into(),
            cwd: "/p".into(),
            approval_mode: ApprovalMode::AutoEdit,
            agent: Some(("a1".into(), "explore".into())),
        };
        let payload = HookPayload::tool(
            HookEvent::PreToolUse,
            "write_file",
            "c1",
            &json!({"file_path": "x.txt", "content": "hi"}),
            Path::new("/p"),
        );
        let doc: Value = serde_json::from_slice(&payload.stdin(&ctx)).unwrap_or_default();
        assert_eq!(
            doc,
            json!({
                "session_id": "s", "transcript_path": null, "cwd": "/p",
                "permission_mode": "acceptEdits", "hook_event_name": "PreToolUse",
                "agent_id": "a1", "agent_type": "explore",
                "tool_name": "Write", "tool_input": {"file_path": "/p/x.txt", "content": "hi"},
                "tool_use_id": "c1"
            })
        );
        assert_eq!(payload.match_names, vec!["Write", "write_file"]);
    }
}
