//! A prompt `/name args` naming a custom command or skill (issue 29): the expansion's shell
//! injections run through the shell tool's approval, rules and sandbox (shown as cards), its
//! files are read with `read_file`'s confinement, and the resulting prompt starts the task.
//! A failing or refused injection ends the task with its output; nothing reaches the model.

use corvid_protocol::{
    CoreEvent, ErrorInfo, ErrorKind, ImageData, StopReason, ToolCall, ToolOutput, ToolStatus,
};
use serde_json::{Value, json};

use super::approval::Approval;
use super::ids::generated_call_id;
use super::live_feed::LiveFeed;
use super::plan_mode;
use super::session::{SessionState, TaskCtx, lock};
use super::summaries::SummaryTracker;
use super::task::run_prompt;
use crate::commands::{Command, Piece};
use crate::policy::rules::PermissionRules;

/// The built-in tool injections run through.
const SHELL_TOOL: &str = "run_shell_command";

/// The command `prompt` invokes, if it names one of the session's.
pub(super) fn invoked(ctx: &TaskCtx, prompt: &str) -> Option<(Command, String)> {
    let library = ctx.stat.policy.commands.as_ref()?;
    let (name, args) = crate::commands::invocation(prompt)?;
    let catalog = library.commands();
    let command = catalog.find(name)?.clone();
    Some((command, args.to_owned()))
}

/// Runs the task of `/name args`: expand, run the injections, then the prompt.
pub(super) async fn run_command(
    ctx: TaskCtx,
    state: &mut SessionState,
    prompt: String,
    (command, args): (Command, String),
    images: Vec<ImageData>,
    mut context: Vec<String>,
    span: tracing::Span,
) {
    ctx.events.emit(CoreEvent::TaskStarted {
        task_id: ctx.task_id.clone(),
        prompt,
    });
    let stop = |message: String| {
        let err = ErrorInfo::new(ErrorKind::BadRequest, message);
        SummaryTracker::new().finish_task(&ctx, StopReason::Error, Some(err));
    };
    let expansion = match command.expand(&args) {
        Ok(expansion) => expansion,
        Err(why) => return stop(format!("/{}: {why}", command.name)),
    };
    let grants = allowed_rules(&expansion.allowed_tools);
    *lock(&ctx.shared.prompt_grants) = grants;
    let mut text = String::new();
    for piece in expansion.pieces {
        let added = match piece {
            Piece::Text(t) => Ok(t),
            Piece::Shell(line) => run_injection(&ctx, state, &line).await,
            Piece::File { path, inline } => file(&ctx, &path, inline, &mut context),
        };
        match added {
            Ok(t) => text.push_str(&t),
            Err(why) => {
                *lock(&ctx.shared.prompt_grants) = PermissionRules::default();
                if ctx.cancel.is_cancelled() {
                    SummaryTracker::new().finish_task(&ctx, StopReason::Cancelled, None);
                    return;
                }
                return stop(format!(
                    "/{} stopped; nothing was sent to the model: {why}",
                    command.name
                ));
            }
        }
    }
    if let (Some(skill), Some(library)) = (&command.skill, &ctx.stat.policy.commands) {
        library.mark_loaded(skill);
    }
    let model = expansion
        .model
        .map(|m| std::mem::replace(&mut *lock(&ctx.shared.model), m));
    run_prompt(ctx.clone(), state, text, images, context, span).await;
    if let Some(before) = model {
        *lock(&ctx.shared.model) = before;
    }
    *lock(&ctx.shared.prompt_grants) = PermissionRules::default();
}

/// `allowed-tools` as permission rules: Claude Code's `Bash(...)` is the shell tool (`Bash(*)`
/// all of it, as in Claude Code); rules corvid cannot read are left out (granting less, never
/// more).
fn allowed_rules(allowed: &[String]) -> PermissionRules {
    let rules: Vec<String> = allowed
        .iter()
        .filter_map(|rule| {
            let rule = rule.trim();
            if rule == "Bash(*)" {
                return Some(SHELL_TOOL.to_owned());
            }
            if let Some(spec) = rule.strip_prefix("Bash(") {
                return Some(format!("{SHELL_TOOL}({spec}"));
            }
            (rule == "Bash").then(|| SHELL_TOOL.to_owned()).or_else(|| {
                rule.starts_with(|c: char| c.is_ascii_lowercase())
                    .then(|| rule.to_owned())
            })
        })
        .collect();
    let valid: Vec<String> = rules
        .into_iter()
        .filter(|r| PermissionRules::new(std::slice::from_ref(r), &[]).is_ok())
        .collect();
    PermissionRules::new(&valid, &[]).unwrap_or_default()
}

/// A file reference: confined to the workspace like `read_file`; a missing file is left
/// as written (the text may mention someone, not a file).
fn file(
    ctx: &TaskCtx,
    path: &str,
    inline: bool,
    context: &mut Vec<String>,
) -> Result<String, String> {
    let resolved = corvid_tools::paths::resolve(&ctx.stat.cwd, path).map_err(|e| e.message)?;
    if !resolved.is_file() {
        return if inline {
            Err(format!(
                "`@{{{path}}}`: there is no file {}",
                resolved.display()
            ))
        } else {
            Ok(String::new())
        };
    }
    let attached = crate::attach::file_context(&resolved, path);
    if inline {
        // The text alone, without the context label.
        let body = attached
            .split_once('\n')
            .map_or("", |(_, rest)| rest)
            .trim_end_matches("</context>")
            .trim_end_matches('\n');
        return Ok(body.to_owned());
    }
    context.push(attached);
    Ok(String::new())
}

/// Runs one injection as a shell call the user sees and approves: its output (stdout, then
/// stderr) on success; the reason or the output on failure.
async fn run_injection(
    ctx: &TaskCtx,
    state: &mut SessionState,
    line: &str,
) -> Result<String, String> {
    let tool = ctx
        .stat
        .tools
        .get(SHELL_TOOL)
        .ok_or("this session has no shell tool, so `!command` injections cannot run")?;
    let call = ToolCall {
        call_id: generated_call_id(),
        name: SHELL_TOOL.to_owned(),
        args: json!({ "command": line, "description": "command injection of a custom command" }),
    };
    state.used_ids.insert(call.call_id.clone());
    let mut tool_ctx = corvid_tools::ToolContext {
        call_id: call.call_id.clone(),
        cwd: ctx.stat.cwd.clone(),
        fs: ctx.stat.fs.clone(),
        cancel: ctx.cancel.child_token(),
        shell_timeout: ctx.stat.shell_timeout,
        shell: ctx.stat.policy.shell.clone(),
        live_output: None,
    };
    let display = tool.display(&call.args, &tool_ctx);
    let finished = |status, output: ToolOutput| {
        ctx.events.emit(CoreEvent::ToolFinished {
            call_id: call.call_id.clone(),
            tool_name: SHELL_TOOL.to_owned(),
            status,
            output,
            provenance: corvid_protocol::Provenance::Builtin,
        });
    };
    let started = |display| {
        ctx.events.emit(CoreEvent::ToolStarted {
            call_id: call.call_id.clone(),
            tool_name: SHELL_TOOL.to_owned(),
            args: call.args.clone(),
            display,
            provenance: corvid_protocol::Provenance::Builtin,
            was_prepared: false,
        });
    };
    let refusal = plan_mode::refusal(ctx, tool.as_ref());
    let decision = match refusal {
        Some(message) => Approval::DeniedUnasked(message),
        None => {
            let need = tool.approval(&call.args, &tool_ctx).await;
            plan_mode::decide(ctx, &call, tool.as_ref(), &display, need, false).await
        }
    };
    match decision {
        Approval::Granted { .. } => {}
        Approval::Denied(message) => {
            finished(ToolStatus::Failed, ToolOutput::text(message.clone()));
            return Err(format!("`{line}` did not run: {message}"));
        }
        Approval::DeniedUnasked(message) => {
            started(display);
            finished(ToolStatus::Failed, ToolOutput::text(message.clone()));
            return Err(format!("`{line}` did not run: {message}"));
        }
    }
    if ctx.cancel.is_cancelled() {
        finished(ToolStatus::Failed, ToolOutput::text("cancelled"));
        return Err("cancelled".to_owned());
    }
    let feed = LiveFeed::new(ctx.events.clone(), &call.call_id);
    tool_ctx.live_output = Some(feed.sink());
    started(display);
    let result = tool.execute(call.args.clone(), tool_ctx).await;
    feed.close();
    match result {
        Ok(output) if exit_code(&output.raw) == Some(0) => {
            let text = output_text(&output.raw);
            finished(ToolStatus::Completed, output);
            Ok(text)
        }
        Ok(output) => {
            let shown = output.text.clone();
            finished(ToolStatus::Failed, output);
            Err(format!("`{line}` failed:\n{shown}"))
        }
        Err(e) => {
            finished(ToolStatus::Failed, ToolOutput::text(e.message.clone()));
            Err(format!("`{line}` failed: {}", e.message))
        }
    }
}

fn exit_code(raw: &Value) -> Option<i64> {
    raw.get("exit_code").and_then(Value::as_i64)
}

/// What an injection puts in the prompt: its stdout, then its stderr if any.
fn output_text(raw: &Value) -> String {
    let field = |k: &str| {
        raw.get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim_end()
            .to_owned()
    };
    let (stdout, stderr) = (field("stdout"), field("stderr"));
    match (stdout.is_empty(), stderr.is_empty()) {
        (_, true) => stdout,
        (true, false) => stderr,
        (false, false) => format!("{stdout}\n{stderr}"),
    }
}
