//! Executing a batch: validation, approvals, concurrency (read-only calls together, mutating
//! calls in order), cancellation, and the in_progress → completed | failed events.

use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use corvid_protocol::{
    CoreEvent, DiscardReason, Provenance, Todo, ToolCall, ToolDisplay, ToolKind, ToolOutput,
    ToolResult, ToolStatus,
};
use corvid_tools::ask_user::ASK_USER;
use corvid_tools::enter_plan_mode::ENTER_PLAN_MODE;
use corvid_tools::{ApprovalNeed, Tool, ToolContext, ToolError};
use futures::FutureExt;
use serde_json::Value;

use crate::hooks::session::{blocked_call_message, gate_approval, hook_events, post_tool_note};
use crate::hooks::{Decision, HookOutcome, SessionHooks};

use super::approval::Approval;
use super::bulk;
use super::live_feed::LiveFeed;
use super::plan_mode;
use super::session::{TaskCtx, lock};
use crate::context::tool_results::history_text;
use crate::images::result_images;
use crate::summary::SummaryCall;
use crate::telemetry;

/// How long a cancelled tool may take to report how it stopped before it is abandoned.
const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// What a batch left behind.
pub(super) struct BatchOutcome {
    /// One result per call, in call order (the next request pairs them by id).
    pub results: Vec<ToolResult>,
    /// Calls that reached a result (ran, failed validation, or were rejected), in order.
    pub ran_ids: Vec<String>,
    /// Card-showing calls that ran, for the tool-use summary.
    pub summary_calls: Vec<(String, SummaryCall)>,
}

/// One call of the batch, resolved against the registry.
struct Planned {
    call: ToolCall,
    tool: Option<Arc<dyn Tool>>,
    /// Whether a preparing card is showing for this call.
    prepared: bool,
}

impl Planned {
    fn shows_card(&self) -> bool {
        self.tool.as_ref().is_none_or(|t| t.shows_card())
    }

    fn mutates(&self) -> bool {
        self.tool
            .as_ref()
            .is_some_and(|t| t.mutates_call(&self.call.args))
    }
}

/// How one call ended.
struct CallEnd {
    result: ToolResult,
    /// False when the call never started because the task was cancelled first.
    reached_result: bool,
    summary: Option<SummaryCall>,
}

/// Runs a batch in order, grouping consecutive read-only calls to run concurrently.
pub(super) async fn run_batch(
    ctx: &TaskCtx,
    calls: Vec<ToolCall>,
    prepared: &HashSet<String>,
) -> BatchOutcome {
    ctx.shared
        .batches_started
        .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    let planned: Vec<Planned> = calls
        .into_iter()
        .map(|call| Planned {
            tool: ctx.stat.tools.get(&call.name),
            prepared: prepared.contains(&call.call_id),
            call,
        })
        .collect();
    let mut ends: Vec<CallEnd> = Vec::with_capacity(planned.len());
    let mut group: Vec<Planned> = Vec::new();
    for p in planned {
        if p.mutates() {
            ends.extend(run_group(ctx, std::mem::take(&mut group)).await);
            ends.extend(run_group(ctx, vec![p]).await);
        } else {
            group.push(p);
        }
    }
    ends.extend(run_group(ctx, group).await);
    let mut outcome = BatchOutcome {
        results: Vec::with_capacity(ends.len()),
        ran_ids: Vec::new(),
        summary_calls: Vec::new(),
    };
    for end in ends {
        if end.reached_result {
            outcome.ran_ids.push(end.result.call_id.clone());
        }
        if let Some(s) = end.summary {
            outcome.summary_calls.push((end.result.call_id.clone(), s));
        }
        outcome.results.push(end.result);
    }
    outcome
}

async fn run_group(ctx: &TaskCtx, group: Vec<Planned>) -> Vec<CallEnd> {
    futures::future::join_all(group.into_iter().map(|p| {
        let name = match p.tool {
            Some(_) => p.call.name.as_str(),
            None => telemetry::UNKNOWN_TOOL,
        };
        let span = telemetry::tool_span(name, &p.call.call_id, &p.call.args);
        telemetry::tool_call(span, name.to_owned(), run_call(ctx, p), |end| {
            let outcome = match (end.reached_result, end.result.is_error) {
                (false, _) => "not_started",
                (true, true) => "error",
                (true, false) => "success",
            };
            (outcome, end.result.output.as_str())
        })
    }))
    .await
}

fn tool_context(ctx: &TaskCtx, call_id: &str) -> ToolContext {
    ToolContext {
        call_id: call_id.to_owned(),
        cwd: ctx.stat.cwd.clone(),
        fs: ctx.stat.fs.clone(),
        cancel: ctx.cancel.child_token(),
        shell_timeout: ctx.stat.shell_timeout,
        shell: ctx.stat.policy.shell.clone(),
        live_output: None,
    }
}

async fn run_call(ctx: &TaskCtx, p: Planned) -> CallEnd {
    let shows = p.shows_card();
    let prepared = p.prepared;
    let mut call = p.call;
    if ctx.cancel.is_cancelled() {
        return not_started(ctx, call, prepared);
    }
    let mut tool_ctx = tool_context(ctx, &call.call_id);
    let Some(tool) = p.tool else {
        let known: Vec<String> = ctx.stat.tools.iter().map(|t| t.name().to_owned()).collect();
        let message = format!(
            "unknown tool `{}`; the available tools are: {}",
            call.name,
            known.join(", ")
        );
        let display = fallback_display(&call.name, ToolKind::Other);
        warn_invalid(ctx, &call, &message);
        return refused_call(ctx, call, Some((display, prepared)), message);
    };
    if !call.args.is_object() {
        let message = format!(
            "the arguments of `{}` must be a JSON object, got: {}",
            call.name,
            short(&call.args.to_string())
        );
        let card = shows.then(|| (fallback_display(tool.display_name(), tool.kind()), prepared));
        warn_invalid(ctx, &call, &message);
        return refused_call(ctx, call, card, message);
    }
    let hook = match &ctx.stat.policy.hooks {
        None => Decision::Proceed,
        Some(hooks) => match pre_tool_hook(ctx, hooks, &mut call).await {
            Some(Ok(decision)) => decision,
            Some(Err(message)) => {
                let card = shows.then(|| (tool.display(&call.args, &tool_ctx), prepared));
                return refused_call(ctx, call, card, message);
            }
            None => return not_started(ctx, call, prepared),
        },
    };
    let display = tool.display(&call.args, &tool_ctx);
    if let Some(message) = plan_mode::refusal(ctx, tool.as_ref()) {
        let card = shows.then_some((display, prepared));
        return refused_call(ctx, call, card, message);
    }
    // A plan that never ends (an editor that does not answer a read) must not outlive a cancel.
    let planned = tokio::select! {
        biased;
        need = plan_approval(tool.as_ref(), &call.args, &tool_ctx) => Some(need),
        _ = ctx.cancel.cancelled() => None,
    };
    let Some(need) = planned else {
        return not_started(ctx, call, prepared);
    };
    let hook = match hook {
        // A tool without a card (`todo_write`: it only updates the plan) is never asked
        // about: the prompt would open a card nothing ends (SPEC §5.3). The user saw the
        // hook's `ask`; the call goes the normal way.
        Decision::Ask(_) if !shows => {
            ctx.events.emit(CoreEvent::Warning {
                message: format!(
                    "hook: PreToolUse asked for approval of `{}`, which only updates the plan \
                     and is never put to you; it went ahead",
                    call.name
                ),
            });
            Decision::Proceed
        }
        hook => hook,
    };
    let (need, hook_allows) = gate_approval(&hook, need, &display.title);
    let asking = std::time::Instant::now();
    let approval = plan_mode::decide(ctx, &call, tool.as_ref(), &display, need, hook_allows).await;
    if matches!(
        approval,
        Approval::Granted { asked: true } | Approval::Denied(_)
    ) {
        crate::telemetry::approval_waited(asking.elapsed());
    }
    let asked = match approval {
        Approval::Granted { asked } => asked,
        Approval::Denied(message) => return finished_without_running(ctx, call, message, shows),
        Approval::DeniedUnasked(message) => {
            // No prompt created a card: show the call with its arguments, then its refusal.
            let card = shows.then_some((display, prepared));
            return refused_call(ctx, call, card, message);
        }
    };
    if ctx.cancel.is_cancelled() {
        if asked {
            // The permission prompt made a card: it ends as failed, not as a discarded preparation.
            let message = "The user cancelled the task before this call ran.".to_owned();
            return finished_without_running(ctx, call, message, shows);
        }
        return not_started(ctx, call, prepared);
    }
    let feed = shows.then(|| LiveFeed::new(ctx.events.clone(), &call.call_id));
    if let Some(feed) = &feed {
        emit_started(ctx, &call, display, prepared);
        tool_ctx.live_output = Some(feed.sink());
    }
    // The card is out; the tool's work waits for the other sessions' ready chunks.
    bulk::after_ready_work().await;
    if let Some(checkpoints) = &ctx.stat.policy.checkpoints
        && tool.mutates_call(&call.args)
    {
        super::task::warn_all(ctx, checkpoints.before_call().await);
    }
    let result = execute(ctx, tool.as_ref(), call.args.clone(), tool_ctx).await;
    if let Some(feed) = &feed {
        feed.close();
    }
    let (status, output) = match result {
        Ok(output) => (
            ToolStatus::Completed,
            crate::web_prompt::answer_if_over_budget(
                ctx.stat.summaries.as_ref(),
                ctx.stat.policy.result_budget,
                output,
                crate::web_prompt::PROMPT_TIMEOUT,
                &ctx.cancel,
            )
            .await,
        ),
        Err(err) => (ToolStatus::Failed, ToolOutput::text(err.message)),
    };
    let succeeded = status == ToolStatus::Completed;
    if shows {
        ctx.events.emit(CoreEvent::ToolFinished {
            call_id: call.call_id.clone(),
            tool_name: call.name.clone(),
            status,
            output: output.clone(),
            provenance: provenance_of(ctx, &call.name),
        });
    } else if succeeded && let Some(todos) = plan_from(&output.raw) {
        ctx.events.emit(CoreEvent::Plan { todos });
    }
    let summary = shows.then(|| SummaryCall {
        name: call.name.clone(),
        args: call.args.clone(),
        output: output.text.clone(),
        succeeded,
    });
    let mut kept = history_text(
        ctx.stat.policy.result_budget,
        &ctx.shared.reads,
        &call,
        &output,
        succeeded,
    );
    let (images, notes) = result_images(
        &output.images,
        &lock(&ctx.shared.model),
        ctx.stat.policy.images,
    );
    for note in notes {
        if !kept.is_empty() {
            kept.push('\n');
        }
        kept.push_str(&note);
    }
    if let Some(hooks) = &ctx.stat.policy.hooks {
        let mode = *lock(&ctx.shared.approval_mode);
        let outcome = hooks
            .post_tool_use(
                &ctx.stat.cwd,
                mode,
                &call.name,
                &call.call_id,
                &call.args,
                &output.text,
                !succeeded,
            )
            .await;
        emit_hook_notices(ctx, &outcome);
        kept.extend(post_tool_note(&outcome));
    }
    CallEnd {
        result: ToolResult {
            call_id: call.call_id,
            name: call.name,
            output: kept,
            is_error: !succeeded,
            images,
        },
        reached_result: true,
        summary,
    }
}

/// Runs the PreToolUse hooks on `call`, applying an `updatedInput` to it: `Err` with the
/// model's answer when they block it, `None` when the task was cancelled meanwhile.
async fn pre_tool_hook(
    ctx: &TaskCtx,
    hooks: &SessionHooks,
    call: &mut ToolCall,
) -> Option<Result<Decision, String>> {
    let mode = *lock(&ctx.shared.approval_mode);
    let run = hooks.pre_tool_use(&ctx.stat.cwd, mode, &call.name, &call.call_id, &call.args);
    let outcome = tokio::select! {
        biased;
        _ = ctx.cancel.cancelled() => return None,
        outcome = run => outcome,
    };
    emit_hook_notices(ctx, &outcome);
    if let Decision::Block(reason) = &outcome.decision {
        return Some(Err(blocked_call_message(&call.name, reason)));
    }
    match outcome.updated_input {
        Some(input) if input.is_object() => call.args = input,
        Some(_) => ctx.events.emit(CoreEvent::Warning {
            message: format!(
                "hook: PreToolUse: an `updatedInput` for `{}` is not a JSON object; the \
                 call keeps its input",
                call.name
            ),
        }),
        None => {}
    }
    Some(Ok(outcome.decision))
}

/// Fires `Notification` of `kind` in the background (a permission prompt for `tool`).
pub(super) fn notify_hooks(ctx: &TaskCtx, kind: &'static str, tool: &str) {
    if let Some(hooks) = &ctx.stat.policy.hooks {
        let mode = *lock(&ctx.shared.approval_mode);
        let message = format!("corvid needs your permission to use {tool}");
        let events = ctx.events.clone();
        hooks.spawn_notification(&ctx.stat.cwd, mode, kind, message, move |e| events.emit(e));
    }
}

/// Shows every front end what a hook event did that the user must see; a handler's
/// `continue: false` ends the task (as a cancel does, so every card ends properly).
pub(super) fn emit_hook_notices(ctx: &TaskCtx, outcome: &HookOutcome) {
    if outcome.stop.is_some() {
        ctx.cancel.cancel();
    }
    for event in hook_events(outcome) {
        ctx.events.emit(event);
    }
    // Several handlers rewrote the input: only the first one's applies, and the user sees it.
    for message in outcome
        .warnings
        .iter()
        .filter(|w| w.contains("`updatedInput`"))
    {
        ctx.events.emit(CoreEvent::Warning {
            message: message.clone(),
        });
    }
}

/// The tool's approval need; a tool that panics while planning refuses its call (it must not
/// take the task down, and a crash is never "nothing to approve").
async fn plan_approval(tool: &dyn Tool, args: &Value, tool_ctx: &ToolContext) -> ApprovalNeed {
    let name = tool.name();
    let crashed = || {
        tracing::error!(tool = name, "tool panicked while planning its approval");
        ApprovalNeed::Refuse(ToolError::new(format!(
            "internal error: the `{name}` tool crashed while planning the call; it did not run"
        )))
    };
    match std::panic::catch_unwind(AssertUnwindSafe(|| tool.approval(args, tool_ctx))) {
        Ok(fut) => AssertUnwindSafe(fut)
            .catch_unwind()
            .await
            .unwrap_or_else(|_| crashed()),
        Err(_) => crashed(),
    }
}

/// Runs the tool; on cancellation it gets a short grace to report how it stopped.
async fn execute(
    ctx: &TaskCtx,
    tool: &dyn Tool,
    args: Value,
    tool_ctx: ToolContext,
) -> Result<ToolOutput, ToolError> {
    let name = tool.name();
    // The tools that talk to the user or change the session's mode run here, in the loop.
    match name {
        ASK_USER => return super::questions::ask(ctx, &tool_ctx.call_id, &args).await,
        ENTER_PLAN_MODE => return Ok(plan_mode::enter(ctx)),
        _ => {}
    }
    // A panicking tool fails its call instead of taking the task (and its open cards) down.
    let fut = AssertUnwindSafe(tool.execute(args, tool_ctx))
        .catch_unwind()
        .map(move |result| {
            result.unwrap_or_else(|_| {
                tracing::error!(tool = name, "tool panicked");
                Err(ToolError::new(format!(
                    "internal error: the `{name}` tool crashed"
                )))
            })
        });
    tokio::pin!(fut);
    // Biased, as every race of the loop: a result that is ready wins over a cancel in the same
    // poll, so a schedule replays to the same events (issue 33).
    tokio::select! {
        biased;
        result = &mut fut => result,
        _ = ctx.cancel.cancelled() => {
            match tokio::time::timeout(CANCEL_GRACE, &mut fut).await {
                Ok(result) => result,
                Err(_) => Err(ToolError::new("cancelled by the user")),
            }
        }
    }
}

/// A call answered without running: rejected, or its approval was cancelled.
fn finished_without_running(
    ctx: &TaskCtx,
    call: ToolCall,
    message: String,
    shows: bool,
) -> CallEnd {
    if shows {
        ctx.events.emit(CoreEvent::ToolFinished {
            call_id: call.call_id.clone(),
            tool_name: call.name.clone(),
            status: ToolStatus::Failed,
            output: ToolOutput::text(message.clone()),
            provenance: provenance_of(ctx, &call.name),
        });
    }
    CallEnd {
        result: ToolResult {
            call_id: call.call_id,
            name: call.name,
            output: message,
            is_error: true,
            images: Vec::new(),
        },
        reached_result: true,
        summary: None,
    }
}

/// A call answered with an error before any card showed it (unknown tool, arguments not an
/// object, a tool rejected for the session): its card shows the arguments, then the failure.
fn refused_call(
    ctx: &TaskCtx,
    call: ToolCall,
    card: Option<(ToolDisplay, bool)>,
    message: String,
) -> CallEnd {
    let shows = card.is_some();
    if let Some((display, was_prepared)) = card {
        emit_started(ctx, &call, display, was_prepared);
    }
    finished_without_running(ctx, call, message, shows)
}

/// A call of a finished response that never started because the task was cancelled: its card
/// (if one was prepared) is removed; the model is told it did not run.
fn not_started(ctx: &TaskCtx, call: ToolCall, prepared: bool) -> CallEnd {
    if prepared {
        ctx.events.emit(CoreEvent::PreparationDiscarded {
            call_id: call.call_id.clone(),
            tool_name: call.name.clone(),
            reason: DiscardReason::Cancelled,
            provenance: provenance_of(ctx, &call.name),
        });
    }
    CallEnd {
        result: ToolResult {
            call_id: call.call_id,
            name: call.name,
            output: "The user cancelled the task before this call ran.".into(),
            is_error: true,
            images: Vec::new(),
        },
        reached_result: false,
        summary: None,
    }
}

/// Tells the user the model made a malformed call (the model itself gets a tool error).
fn warn_invalid(ctx: &TaskCtx, call: &ToolCall, message: &str) {
    ctx.events.emit(CoreEvent::Warning {
        message: format!("the model made an invalid `{}` call: {message}", call.name),
    });
}

fn fallback_display(title: &str, kind: ToolKind) -> ToolDisplay {
    ToolDisplay {
        title: title.to_owned(),
        kind,
        locations: Vec::new(),
    }
}

fn short(text: &str) -> String {
    const MAX: usize = 200;
    match text.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text.to_owned(),
    }
}

/// The todos of a `todo_write` result (`raw` is the list, or an object holding `todos`).
fn plan_from(raw: &Value) -> Option<Vec<Todo>> {
    let list = match raw {
        Value::Array(_) => raw,
        Value::Object(map) => map.get("todos")?,
        _ => return None,
    };
    serde_json::from_value(list.clone()).ok()
}

/// The card goes `in_progress` with the complete arguments, under the id it was prepared with.
fn emit_started(ctx: &TaskCtx, call: &ToolCall, display: ToolDisplay, was_prepared: bool) {
    ctx.events.emit(CoreEvent::ToolStarted {
        call_id: call.call_id.clone(),
        tool_name: call.name.clone(),
        args: call.args.clone(),
        display,
        provenance: provenance_of(ctx, &call.name),
        was_prepared,
    });
}

/// Where the named tool comes from (an unknown tool counts as built in), for its cards.
pub(super) fn provenance_of(ctx: &TaskCtx, tool_name: &str) -> Provenance {
    ctx.stat
        .tools
        .get(tool_name)
        .map_or(Provenance::Builtin, |tool| tool.provenance())
}
