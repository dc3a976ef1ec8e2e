//! A task: turns until the model stops calling tools, with retry, fallback and cancellation.

use std::collections::HashSet;

use corvid_protocol::{
    CoreEvent, DiscardReason, ErrorInfo, ErrorKind, FinishReason, ImageData, Message, ModelRequest,
    Part, Role, StopReason, ToolCall,
};
use tracing::Instrument;

use super::attempt::{AttemptEnd, AttemptOutput, discard_prepared, run_attempt};
use super::compact::{self, Trigger};
use super::exec::{emit_hook_notices, run_batch};
use super::plan_mode;
use super::session::{SessionState, TaskCtx, lock};
use super::steer;
use super::summaries::SummaryTracker;
use crate::hooks::session::MAX_STOP_BLOCKS;
use crate::hooks::{Decision, SessionHooks};
use crate::policy::MaxTurns;
use crate::telemetry;

/// Consecutive rate-limited/overloaded failures after which the fallback model is tried even
/// if attempts remain: the main model is unlikely to recover within this task.
const PERSISTENT_OVERLOAD_FAILURES: u32 = 3;

/// A turn whose model response finished cleanly.
struct FinishedTurn {
    parts: Vec<Part>,
    /// Ids of the calls whose preparing card is showing.
    prepared: HashSet<String>,
    calls: Vec<ToolCall>,
    reason: FinishReason,
}

/// Why a turn did not produce a finished response.
enum TurnEnd {
    Cancelled { partial: Vec<Part> },
    Failed(ErrorInfo),
}

/// Runs one task for `prompt` on the session's state, in its telemetry `span` (closed
/// before `TaskFinished` goes out, so a front end that exits on it finds it complete).
pub(super) async fn run_task(
    ctx: TaskCtx,
    state: &mut SessionState,
    prompt: String,
    images: Vec<ImageData>,
    context: Vec<String>,
    span: tracing::Span,
) {
    ctx.events.emit(CoreEvent::TaskStarted {
        task_id: ctx.task_id.clone(),
        prompt: prompt.clone(),
    });
    run_prompt(ctx, state, prompt, images, context, span).await;
}

/// The task for `prompt` once its `TaskStarted` is out (a custom command expands first).
pub(super) async fn run_prompt(
    ctx: TaskCtx,
    state: &mut SessionState,
    prompt: String,
    images: Vec<ImageData>,
    context: Vec<String>,
    span: tracing::Span,
) {
    let summaries = SummaryTracker::new();
    let (stop_reason, error) = prompt_turns(&ctx, state, prompt, images, context, &summaries)
        .instrument(span.clone())
        .await;
    telemetry::task_finished(&span, stop_reason);
    drop(span);
    summaries.finish_task(&ctx, stop_reason, error);
}

/// Appends the prompt (after the UserPromptSubmit hooks) and runs the turns it starts.
async fn prompt_turns(
    ctx: &TaskCtx,
    state: &mut SessionState,
    prompt: String,
    images: Vec<ImageData>,
    context: Vec<String>,
    summaries: &SummaryTracker,
) -> (StopReason, Option<ErrorInfo>) {
    telemetry::prompt(&prompt);
    let mut context = context;
    if let Some(hooks) = &ctx.stat.policy.hooks {
        context.extend(hooks.start_context().await);
        let mode = *lock(&ctx.shared.approval_mode);
        let run = hooks.user_prompt_submit(&ctx.stat.cwd, mode, &prompt);
        let outcome = tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => return (StopReason::Cancelled, None),
            outcome = run => outcome,
        };
        emit_hook_notices(ctx, &outcome);
        if let Decision::Block(reason) = outcome.decision {
            let message = format!("a UserPromptSubmit hook blocked this prompt: {reason}");
            let err = ErrorInfo::new(ErrorKind::BadRequest, message);
            return (StopReason::Error, Some(err));
        }
        context.extend(outcome.context);
    }
    if let Some(checkpoints) = &ctx.stat.policy.checkpoints {
        let notices = checkpoints.turn_started(&prompt, state.history.len()).await;
        warn_all(ctx, notices);
    }
    let model = lock(&ctx.shared.model).clone();
    match crate::images::user_message(prompt, context, images, &model, ctx.stat.policy.images) {
        Ok(message) => state.append(message),
        Err(err) => return (StopReason::Error, Some(err)),
    }
    let (stop_reason, error) = run_turns(ctx, state, summaries).await;
    if let Some(warning) = steer::untaken_warning(&ctx.shared.steers.close()) {
        ctx.events.emit(warning);
    }
    if let Some(checkpoints) = &ctx.stat.policy.checkpoints {
        warn_all(ctx, checkpoints.turn_finished().await);
    }
    (stop_reason, error)
}

/// Shows each checkpoint notice (a failure never stops the turn).
pub(super) fn warn_all(ctx: &TaskCtx, notices: Vec<String>) {
    for message in notices {
        ctx.events.emit(CoreEvent::Warning { message });
    }
}

/// Runs turns until the model stops calling tools (or the task must stop), on `state`.
pub(super) async fn run_turns(
    ctx: &TaskCtx,
    state: &mut SessionState,
    summaries: &SummaryTracker,
) -> (StopReason, Option<ErrorInfo>) {
    let mut turn = 0u32;
    let mut fell_back = false;
    let mut stop_blocks = 0u32;
    let max_turns = ctx.stat.policy.max_turns;
    loop {
        if turn >= max_turns.0 {
            ctx.events.emit(CoreEvent::Warning {
                message: max_turns_message(max_turns),
            });
            return (StopReason::MaxTurns, None);
        }
        turn += 1;
        if compact::due(ctx, state) {
            match compact::compact(ctx, state, Trigger::Threshold).await {
                Ok(()) => {}
                Err(err) if err.kind == ErrorKind::Cancelled => {
                    return (StopReason::Cancelled, None);
                }
                // The request may still fit; if not, the overflow recovery tries again.
                Err(err) => ctx.events.emit(CoreEvent::Warning {
                    message: format!(
                        "could not compact the conversation before the next request: {}",
                        err.message
                    ),
                }),
            }
        }
        ctx.events.emit(CoreEvent::TurnStarted {
            turn,
            model: lock(&ctx.shared.model).clone(),
        });
        let finished = match run_turn(ctx, state, &mut fell_back).await {
            Ok(finished) => finished,
            Err(TurnEnd::Cancelled { partial }) => {
                // Keep the text the user saw; an unfinished thought (no signature) could not
                // be sent back to providers that verify thoughts.
                let seen: Vec<Part> = partial
                    .into_iter()
                    .filter(|p| matches!(p, Part::Text { text } if !text.is_empty()))
                    .collect();
                if !seen.is_empty() {
                    state.append(assistant(seen, Vec::new()));
                }
                return (StopReason::Cancelled, None);
            }
            Err(TurnEnd::Failed(err)) => return (StopReason::Error, Some(err)),
        };
        let intent = last_text(&finished.parts);
        if finished.calls.is_empty() {
            // An empty answer is not recorded: providers reject empty assistant messages.
            if !finished.parts.is_empty() {
                state.append(assistant(finished.parts, Vec::new()));
            }
            // A subagent's hooks fire `SubagentStop` here instead of the session's `Stop`.
            if finished.reason == FinishReason::Stop
                && let Some(hooks) = &ctx.stat.policy.hooks
            {
                match stop_hook(ctx, hooks, &mut stop_blocks, intent.as_deref()).await {
                    StopHook::Continue(feedback) => {
                        state.append(Message {
                            role: Role::User,
                            parts: vec![Part::Text { text: feedback }],
                        });
                        continue;
                    }
                    StopHook::Cancelled => return (StopReason::Cancelled, None),
                    StopHook::Stop => {}
                }
            }
            // What the user sent into the task while the model answered gets one more turn.
            if steer::deliver(ctx, state, ctx.shared.steers.take_or_close()).await {
                continue;
            }
            let stop = match finished.reason {
                FinishReason::MaxTokens => StopReason::MaxTokens,
                FinishReason::Refusal | FinishReason::ContentFilter => StopReason::Refusal,
                FinishReason::Stop | FinishReason::ToolCalls | FinishReason::Other(_) => {
                    StopReason::EndTurn
                }
            };
            return (stop, None);
        }
        for call in &finished.calls {
            state.used_ids.insert(call.call_id.clone());
        }
        state.append(assistant(finished.parts, finished.calls.clone()));
        let batch = run_batch(ctx, finished.calls, &finished.prepared).await;
        state.append(Message {
            role: Role::User,
            parts: batch.results.into_iter().map(Part::ToolResult).collect(),
        });
        let intent = intent.or_else(|| last_assistant_text(&state.history));
        summaries.batch_completed(ctx, batch.ran_ids, batch.summary_calls, intent);
        if ctx.cancel.is_cancelled() {
            return (StopReason::Cancelled, None);
        }
        steer::deliver(ctx, state, ctx.shared.steers.take()).await;
    }
}

/// What the Stop hooks decided.
enum StopHook {
    /// A handler blocked: the agent goes on with this message.
    Continue(String),
    Stop,
    Cancelled,
}

/// Runs the Stop hooks when the task would end; a block keeps the agent working with the
/// reason, at most [`MAX_STOP_BLOCKS`] times in a row (then it stops, and says so).
async fn stop_hook(
    ctx: &TaskCtx,
    hooks: &SessionHooks,
    blocks: &mut u32,
    last_message: Option<&str>,
) -> StopHook {
    if *blocks >= MAX_STOP_BLOCKS {
        ctx.events.emit(CoreEvent::Warning {
            message: format!(
                "hook: Stop hooks kept the agent working {MAX_STOP_BLOCKS} times in a row; \
                 it stops now"
            ),
        });
        return StopHook::Stop;
    }
    let mode = *lock(&ctx.shared.approval_mode);
    let run = hooks.stop(&ctx.stat.cwd, mode, *blocks > 0, last_message);
    let outcome = tokio::select! {
        biased;
        _ = ctx.cancel.cancelled() => return StopHook::Cancelled,
        outcome = run => outcome,
    };
    emit_hook_notices(ctx, &outcome);
    match outcome.decision {
        Decision::Block(reason) => {
            *blocks += 1;
            StopHook::Continue(format!("Stop hook feedback: {reason}"))
        }
        Decision::Proceed | Decision::Allow(_) | Decision::Ask(_) => StopHook::Stop,
    }
}

/// One turn's request with every attempt it needs.
async fn run_turn(
    ctx: &TaskCtx,
    state: &mut SessionState,
    fell_back: &mut bool,
) -> Result<FinishedTurn, TurnEnd> {
    let policy = ctx.stat.retry;
    let mut attempt = 1u32;
    let mut overloaded_in_a_row = 0u32;
    let mut compacted_for_overflow = false;
    loop {
        // Tools still starting (MCP servers) get a bounded chance to be listed.
        ctx.stat.tools.settled().await;
        for message in ctx.stat.tools.take_notices() {
            ctx.events.emit(CoreEvent::Warning { message });
        }
        let model = lock(&ctx.shared.model).clone();
        let (tools, tool_bytes) = plan_mode::tool_schemas(ctx);
        let request = ModelRequest {
            model: model.clone(),
            system: plan_mode::system_prompt(ctx),
            messages: state.history.clone(),
            tools,
            max_output_tokens: ctx.stat.max_output_tokens,
            temperature: None,
        };
        let sent_bytes = request.system.len() as u64 + tool_bytes + state.history_bytes();
        let span = telemetry::request_span(&model, ctx.usage_prompt_id, attempt - 1);
        let (out, end) = run_attempt(ctx, request, &state.used_ids)
            .instrument(span.clone())
            .await;
        let error = match &end {
            AttemptEnd::Failed(e) => Some(e.kind),
            AttemptEnd::Finished(_) | AttemptEnd::Cancelled => None,
        };
        telemetry::request_finished(&span, out.usage.as_ref(), attempt_outcome(&end), error);
        drop(span);
        if let Some(usage) = out.usage {
            telemetry::tokens(&model, ctx.usage_prompt_id, &usage);
            ctx.events.emit(CoreEvent::Usage {
                prompt_id: ctx.usage_prompt_id.to_owned(),
                usage,
            });
            state
                .meter
                .calibrate(sent_bytes, usage.input_tokens, usage.output_tokens);
            ctx.events.emit(CoreEvent::ContextUsage {
                used: usage.input_tokens + usage.output_tokens,
                window: ctx.stat.policy.context.window(&model),
            });
        }
        let err = match end {
            AttemptEnd::Finished(reason) => return Ok(finish(ctx, out, reason)),
            AttemptEnd::Cancelled
            | AttemptEnd::Failed(ErrorInfo {
                kind: ErrorKind::Cancelled,
                ..
            }) => {
                discard_prepared(
                    ctx,
                    &out.prepared,
                    &HashSet::new(),
                    DiscardReason::Cancelled,
                );
                return Err(TurnEnd::Cancelled { partial: out.parts });
            }
            AttemptEnd::Failed(err) => err,
        };
        if err.kind == ErrorKind::ContextTooLong {
            discard_prepared(
                ctx,
                &out.prepared,
                &HashSet::new(),
                DiscardReason::StreamError,
            );
            if compacted_for_overflow {
                return Err(TurnEnd::Failed(still_too_long(&model, err)));
            }
            // Compact and send the same turn once more.
            match compact::compact(ctx, state, Trigger::Overflow).await {
                Ok(()) => {
                    compacted_for_overflow = true;
                    continue;
                }
                Err(e) if e.kind == ErrorKind::Cancelled => {
                    return Err(TurnEnd::Cancelled {
                        partial: Vec::new(),
                    });
                }
                Err(e) => return Err(TurnEnd::Failed(not_compacted(err, &e))),
            }
        }
        if !err.is_retryable() {
            discard_prepared(
                ctx,
                &out.prepared,
                &HashSet::new(),
                DiscardReason::StreamError,
            );
            return Err(TurnEnd::Failed(err));
        }
        if matches!(err.kind, ErrorKind::RateLimited | ErrorKind::Overloaded) {
            overloaded_in_a_row += 1;
        } else {
            overloaded_in_a_row = 0;
        }
        let exhausted = attempt >= policy.attempts();
        let persistent = overloaded_in_a_row >= PERSISTENT_OVERLOAD_FAILURES;
        if exhausted || persistent {
            let fallback = ctx
                .stat
                .fallback_model
                .clone()
                .filter(|fb| !*fell_back && *fb != model);
            if let Some(to) = fallback {
                discard_prepared(ctx, &out.prepared, &HashSet::new(), DiscardReason::Fallback);
                ctx.events.emit(CoreEvent::ModelFellBack {
                    from: model,
                    to: to.clone(),
                    error: err,
                });
                *lock(&ctx.shared.model) = to;
                *fell_back = true;
                attempt = 1;
                overloaded_in_a_row = 0;
                continue;
            }
            if exhausted {
                discard_prepared(
                    ctx,
                    &out.prepared,
                    &HashSet::new(),
                    DiscardReason::StreamError,
                );
                return Err(TurnEnd::Failed(err));
            }
        }
        discard_prepared(ctx, &out.prepared, &HashSet::new(), DiscardReason::Retry);
        let delay = policy.delay_after(attempt, &err);
        ctx.events.emit(CoreEvent::AttemptRetried {
            attempt,
            max_attempts: policy.attempts(),
            delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            error: err,
        });
        tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => return Err(TurnEnd::Cancelled { partial: Vec::new() }),
            _ = tokio::time::sleep(delay) => {}
        }
        attempt += 1;
    }
}

/// How an attempt ended, as its request span says it.
fn attempt_outcome(end: &AttemptEnd) -> &'static str {
    match end {
        AttemptEnd::Finished(_) => "finished",
        AttemptEnd::Cancelled => "cancelled",
        AttemptEnd::Failed(err) if err.kind == ErrorKind::Cancelled => "cancelled",
        AttemptEnd::Failed(_) => "failed",
    }
}

/// A clean finish: cards without a complete call are discarded (the provider never delivered
/// their arguments); the others go on to execution.
fn finish(ctx: &TaskCtx, out: AttemptOutput, reason: FinishReason) -> FinishedTurn {
    let complete: HashSet<&str> = out.calls.iter().map(|c| c.call_id.as_str()).collect();
    discard_prepared(ctx, &out.prepared, &complete, DiscardReason::StreamError);
    let prepared = out
        .prepared
        .iter()
        .map(|(id, _)| id.clone())
        .filter(|id| complete.contains(id.as_str()))
        .collect();
    FinishedTurn {
        prepared,
        parts: out.parts,
        calls: out.calls,
        reason,
    }
}

/// The error of a request refused as too long even after compacting: what to do next.
fn still_too_long(model: &str, err: ErrorInfo) -> ErrorInfo {
    ErrorInfo {
        message: format!(
            "{model} refused the request as too long even after the conversation was compacted \
             ({}). Send /clear to start a fresh history, switch to a model with a larger \
             context window, or set model.contextWindow to the server's real window so corvid \
             compacts earlier",
            err.message
        ),
        ..err
    }
}

/// The error of a request refused as too long whose history could not be compacted.
fn not_compacted(err: ErrorInfo, why: &ErrorInfo) -> ErrorInfo {
    ErrorInfo {
        message: format!(
            "{} The conversation could not be compacted ({}); send /clear to start a fresh \
             history or /compress to try again",
            err.message.trim_end_matches('.'),
            why.message
        ),
        ..err
    }
}

/// The final word of a task stopped by `agent.maxTurns`: what happened and what to do.
fn max_turns_message(max_turns: MaxTurns) -> String {
    format!(
        "stopped after {} model turns (agent.maxTurns); send another prompt to continue, \
         or raise agent.maxTurns",
        max_turns.0
    )
}

fn assistant(mut parts: Vec<Part>, calls: Vec<ToolCall>) -> Message {
    parts.extend(calls.into_iter().map(Part::ToolCall));
    Message {
        role: Role::Assistant,
        parts,
    }
}

fn last_text(parts: &[Part]) -> Option<String> {
    parts.iter().rev().find_map(|p| match p {
        Part::Text { text } if !text.trim().is_empty() => Some(text.clone()),
        _ => None,
    })
}

fn last_assistant_text(history: &[Message]) -> Option<String> {
    history
        .iter()
        .rev()
        .filter(|m| m.role == Role::Assistant)
        .find_map(|m| last_text(&m.parts))
}
