//! `corvid hooks list` and `corvid hooks test`: what hooks are configured where, and what
//! they decide for a given input, without a model or a session, so a guard can be checked
//! before it is trusted with one.

use std::io::Write;
use std::path::{Path, PathBuf};

use corvid_core::hooks::claude_names::{absolute_paths, claude_name, corvid_name};
use corvid_core::hooks::{
    Decision, HandlerReport, HookContext, HookEvent, HookPayload, HookScope, Hooks,
};
use corvid_core::settings::{SettingsFiles, process_env};
use corvid_tools::hooks_runner::HookExit;
use serde_json::{Map, Value};

use crate::wiring::{ConfigError, Setup};

/// The session's hooks as a session in `setup` would load them; warnings go to stderr.
fn load(setup: &Setup) -> Result<Hooks, ConfigError> {
    let files = SettingsFiles::discover(&setup.cwd, process_env);
    let home = process_env("HOME").map(PathBuf::from);
    let hooks = Hooks::load(&setup.settings, &files, home.as_deref())
        .map_err(|e| ConfigError(e.to_string()))?;
    for warning in &hooks.config().warnings {
        eprintln!("corvid: warning: {warning}");
    }
    Ok(hooks)
}

/// Prints every handler with its event, matcher, command and file.
pub fn list(setup: &Setup, out: &mut impl Write) -> Result<(), ConfigError> {
    let hooks = load(setup)?;
    let config = hooks.config();
    if config.handlers.is_empty() && config.pending.is_empty() {
        writeln!(
            out,
            "No hooks configured. Add Claude Code's `hooks` block to ~/.corvid/settings.json \
             or the project's .corvid/settings.json."
        )
        .map_err(write_error)?;
        return Ok(());
    }
    if config.disabled {
        writeln!(out, "All hooks are off (`disableAllHooks: true`).").map_err(write_error)?;
    }
    for event in HookEvent::ALL {
        for h in config.handlers.iter().filter(|h| h.event == event) {
            let matcher = match h.matcher.as_str() {
                "" => "*",
                m => m,
            };
            let scope = match h.source.scope {
                HookScope::User => "user",
                HookScope::Project => "project",
            };
            let mut notes = format!("{}, {scope}", h.source.path.display());
            notes.push_str(&format!(", timeout {} s", h.timeout.as_secs_f64()));
            if h.block_on_error {
                notes.push_str(", onError block");
            }
            writeln!(out, "{event}  {matcher}  {}\n  from {notes}", h.command)
                .map_err(write_error)?;
        }
    }
    for hook in &config.pending {
        let h = &hook.handler;
        writeln!(
            out,
            "{}  {}  {}  (waits for review: `corvid hooks trust`)\n  from {}, project",
            h.event,
            match h.matcher.as_str() {
                "" => "*",
                m => m,
            },
            h.command,
            h.source.path.display()
        )
        .map_err(write_error)?;
    }
    Ok(())
}

/// `corvid hooks test`: runs the handlers `event` selects on the input in `input_file` and
/// prints each one's exit code, output and the decision corvid derived.
///
/// The file is a JSON object: the event's input fields (merged over the common ones corvid
/// fills in). With `--tool`, a file without `tool_input` is the tool's input itself.
pub async fn test(
    setup: &Setup,
    event: &str,
    tool: Option<&str>,
    input_file: &Path,
    out: &mut impl Write,
) -> Result<(), ConfigError> {
    let event = HookEvent::parse(event).ok_or_else(|| {
        let names: Vec<&str> = HookEvent::ALL.iter().map(|e| e.as_str()).collect();
        ConfigError(format!(
            "`{event}` is not a hook event; expected one of {}",
            names.join(", ")
        ))
    })?;
    let text = std::fs::read_to_string(input_file)
        .map_err(|e| ConfigError(format!("cannot read {}: {e}", input_file.display())))?;
    let fields: Map<String, Value> = match serde_json::from_str(&text) {
        Ok(Value::Object(fields)) => fields,
        Ok(_) => {
            return Err(ConfigError(format!(
                "{} must hold a JSON object",
                input_file.display()
            )));
        }
        Err(e) => {
            return Err(ConfigError(format!("{}: {e}", input_file.display())));
        }
    };
    let payload = payload(event, tool, fields, &setup.cwd);
    let hooks = load(setup)?;
    let files = SettingsFiles::discover(&setup.cwd, process_env);
    let project_dir = files
        .project_folder()
        .filter(|f| f.is_dir())
        .unwrap_or(&setup.cwd)
        .to_owned();
    let ctx = HookContext {
        session_id: "corvid-hooks-test".into(),
        transcript_path: None,
        project_dir,
        cwd: setup.cwd.clone(),
        approval_mode: setup.settings.tools.approval_mode,
        agent: None,
    };
    let outcome = hooks.run(&ctx, &payload).await;
    if outcome.reports.is_empty() {
        writeln!(
            out,
            "No handler matches {event}{}.",
            match tool {
                Some(t) => format!(" for tool {t}"),
                None => String::new(),
            }
        )
        .map_err(write_error)?;
    }
    for report in &outcome.reports {
        write_report(report, out).map_err(write_error)?;
    }
    for warning in &outcome.warnings {
        writeln!(out, "warning: {warning}").map_err(write_error)?;
    }
    for context in &outcome.context {
        writeln!(out, "context for the model: {context}").map_err(write_error)?;
    }
    for message in &outcome.system_messages {
        writeln!(out, "message for the user: {message}").map_err(write_error)?;
    }
    if let Some(reason) = &outcome.stop {
        writeln!(out, "stop: {reason}").map_err(write_error)?;
    }
    if let Some(input) = &outcome.updated_input {
        writeln!(out, "updatedInput: {input}").map_err(write_error)?;
    }
    let decision = match &outcome.decision {
        Decision::Proceed => "decision: proceed".to_owned(),
        d => format!("decision: {}: {}", d.word(), d.reason().unwrap_or_default()),
    };
    writeln!(out, "{decision}").map_err(write_error)?;
    Ok(())
}

/// The event's payload from the file's fields; the matcher looks at the tool (from `--tool`
/// or the file's `tool_name`) or the event's own selector field.
fn payload(
    event: HookEvent,
    tool: Option<&str>,
    mut fields: Map<String, Value>,
    cwd: &Path,
) -> HookPayload {
    let mut payload = HookPayload::new(event);
    if event.is_tool_event() {
        let named = tool.map(str::to_owned).or_else(|| {
            fields
                .get("tool_name")
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
        if let Some(named) = named {
            let corvid = corvid_name(&named).to_owned();
            let claude = claude_name(&corvid).to_owned();
            if tool.is_some() && !fields.contains_key("tool_input") {
                let input = Value::Object(std::mem::take(&mut fields));
                fields.insert("tool_input".into(), input);
            }
            if let Some(input) = fields.get_mut("tool_input") {
                absolute_paths(input, cwd);
            }
            fields.insert("tool_name".into(), Value::from(claude.as_str()));
            payload.match_names = vec![claude, corvid];
        }
    } else {
        let selector = match event {
            HookEvent::SessionStart => "source",
            HookEvent::PreCompact => "trigger",
            HookEvent::Notification => "notification_type",
            _ => "",
        };
        if let Some(value) = fields.get(selector).and_then(Value::as_str) {
            payload.match_names = vec![value.to_owned()];
        }
    }
    payload.fields = fields;
    payload
}

fn write_report(report: &HandlerReport, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "handler: {}  ({})",
        report.handler.command,
        report.handler.source.path.display()
    )?;
    let exit = match &report.exit {
        HookExit::Code(code) => format!("exit code {code}"),
        HookExit::Signal(signal) => format!("killed by signal {signal}"),
        HookExit::TimedOut => "timed out (process group killed)".to_owned(),
        HookExit::SpawnFailed(e) => format!("not started: {e}"),
    };
    writeln!(out, "  {exit} in {} ms", report.duration.as_millis())?;
    for (name, text) in [("stdout", &report.stdout), ("stderr", &report.stderr)] {
        let text = text.trim_end();
        if !text.is_empty() {
            writeln!(out, "  {name}: {}", text.replace('\n', "\n    "))?;
        }
    }
    if report.truncated {
        writeln!(out, "  (output cut at 10000 characters)")?;
    }
    Ok(())
}

fn write_error(e: std::io::Error) -> ConfigError {
    ConfigError(format!("cannot write the output: {e}"))
}
