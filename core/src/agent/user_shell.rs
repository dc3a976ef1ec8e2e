//! `!command` from a front end: the user's own shell command, run through the built-in shell
//! tool (so it gets the session's sandbox, environment scrubbing and timeout) without an
//! approval (the user typed it), shown as a card, and added to the history as a user message
//! so the model sees its output next turn.

use corvid_protocol::{CoreEvent, Message, Op, Provenance, StopReason, ToolOutput, ToolStatus};
use serde_json::json;
use tracing::{Instrument, Span};

use super::ids::generated_call_id;
use super::live_feed::LiveFeed;
use super::session::{SessionState, TaskCtx};
use super::task::run_task;

/// The built-in tool `!command` runs through.
const SHELL_TOOL: &str = "run_shell_command";

/// Runs `command` as a task of its own on the session's state.
pub(super) async fn run_user_shell(ctx: TaskCtx, state: &mut SessionState, command: String) {
    ctx.events.emit(CoreEvent::TaskStarted {
        task_id: ctx.task_id.clone(),
        prompt: format!("!{command}"),
    });
    let Some(tool) = ctx.stat.tools.get(SHELL_TOOL) else {
        finish(
            &ctx,
            StopReason::Error,
            Some("this session has no shell tool; `!command` cannot run".into()),
        );
        return;
    };
    let call_id = generated_call_id();
    state.used_ids.insert(call_id.clone());
    let args = json!({ "command": command });
    let feed = LiveFeed::new(ctx.events.clone(), &call_id);
    let tool_ctx = corvid_tools::ToolContext {
        call_id: call_id.clone(),
        cwd: ctx.stat.cwd.clone(),
        fs: ctx.stat.fs.clone(),
        cancel: ctx.cancel.child_token(),
        shell_timeout: ctx.stat.shell_timeout,
        shell: ctx.stat.policy.shell.clone(),
        live_output: Some(feed.sink()),
    };

    ctx.events.emit(CoreEvent::ToolStarted {
        call_id: call_id.clone(),
        tool_name: SHELL_TOOL.into(),
        args: args.clone(),
        display: tool.display(&args, &tool_ctx),
        provenance: Provenance::Builtin,
        was_prepared: false,
    });
    if let Some(checkpoints) = &ctx.stat.policy.checkpoints {
        let notices = checkpoints
            .turn_started(&format!("!{command}"), state.history.len())
            .await;
        super::task::warn_all(&ctx, notices);
    }
    let result = tool.execute(args, tool_ctx).await;
    feed.close();
    if let Some(checkpoints) = &ctx.stat.policy.checkpoints {
        super::task::warn_all(&ctx, checkpoints.turn_finished().await);
    }
    let (status, output) = match result {
        Ok(output) => (ToolStatus::Completed, output),
        Err(e) => (ToolStatus::Failed, ToolOutput::text(e.message)),
    };
    ctx.events.emit(CoreEvent::ToolFinished {
        call_id,
        tool_name: SHELL_TOOL.into(),
        status,
        output: output.clone(),
        provenance: Provenance::Builtin,
    });
    state.append(Message::user_text(format!(
        "I ran this shell command myself:\n$ {command}\n{}",
        output.text
    )));
    let stop = if ctx.cancel.is_cancelled() {
        StopReason::Cancelled
    } else {
        StopReason::EndTurn
    };
    finish(&ctx, stop, None);
}

fn finish(ctx: &TaskCtx, stop_reason: StopReason, error: Option<String>) {
    ctx.events.emit(CoreEvent::TaskFinished {
        task_id: ctx.task_id.clone(),
        stop_reason,
        error: error
            .map(|m| corvid_protocol::ErrorInfo::new(corvid_protocol::ErrorKind::BadRequest, m)),
        pending_summaries: 0,
    });
}

/// Runs the task an operation starts: a model task for a user turn, the command for
/// `!command`, a compaction for `/compress` (other operations start none).
/// `span` is the task's telemetry span.
pub(super) async fn run_job(ctx: TaskCtx, state: &mut SessionState, op: Op, span: Span) {
    match op {
        Op::UserTurn {
            prompt,
            images,
            context,
        } => match super::command::invoked(&ctx, &prompt) {
            Some(command) => {
                let run = super::command::run_command;
                run(ctx, state, prompt, command, images, context, span).await;
            }
            None => run_task(ctx, state, prompt, images, context, span).await,
        },
        Op::UserShell { command } => run_user_shell(ctx, state, command).instrument(span).await,
        Op::Compact => super::compact::run_compaction_task(ctx, state, span).await,
        _ => {}
    }
}
