//! Compacting a session's history with one main-model call: before a request would fill the
//! context window, when the server still answered "context too long", and on `/compress`.

use corvid_protocol::{
    COMPACTION_PROMPT_ID, CoreEvent, ErrorInfo, ErrorKind, ModelRequest, StopReason, StreamEvent,
};
use futures::StreamExt;
use tracing::{Instrument, Span};

use super::exec::emit_hook_notices;
use super::plan_mode;
use super::session::{SessionState, TaskCtx, lock};
use crate::context::compaction::{
    COMPACTION_SYSTEM, compacted_history, split_point, summary_request,
};
use crate::context::meter::message_bytes;
use crate::hooks::Decision;
use crate::hooks::session_events::StartSource;
use crate::telemetry;

/// The share of the window kept verbatim after a compaction (the recent turns); the rest of
/// the history becomes the summary.
const KEEP_SHARE: f64 = 0.25;
/// The longest summary asked for.
const SUMMARY_MAX_TOKENS: u32 = 4_096;

/// Why a compaction runs (it decides nothing but the log line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Trigger {
    /// The next request would pass `model.compactThreshold`.
    Threshold,
    /// The server refused the request as too long.
    Overflow,
    /// The user asked (`/compress`).
    Requested,
}

impl Trigger {
    /// The name telemetry records.
    fn as_str(self) -> &'static str {
        match self {
            Self::Threshold => "threshold",
            Self::Overflow => "overflow",
            Self::Requested => "requested",
        }
    }
}

/// The estimated size in tokens of the next main request with the current history.
pub(super) fn next_request_tokens(ctx: &TaskCtx, state: &SessionState) -> u64 {
    let fixed = plan_mode::system_prompt(ctx).len() as u64 + plan_mode::tool_bytes(ctx);
    state.meter.tokens(fixed + state.history_bytes())
}

/// Whether the next request should be preceded by a compaction.
pub(super) fn due(ctx: &TaskCtx, state: &SessionState) -> bool {
    let policy = ctx.stat.policy.context;
    let model = lock(&ctx.shared.model).clone();
    policy.auto_compact && next_request_tokens(ctx, state) > policy.limit(&model)
}

/// Replaces the older part of the history with a summary written by the main model, keeping
/// the recent turns verbatim. On failure the history is unchanged.
pub(super) async fn compact(
    ctx: &TaskCtx,
    state: &mut SessionState,
    trigger: Trigger,
) -> Result<(), ErrorInfo> {
    let model = lock(&ctx.shared.model).clone();
    let span = telemetry::compaction_span(&model, trigger.as_str());
    let result = compact_history(ctx, state, trigger)
        .instrument(span.clone())
        .await;
    let (outcome, sizes) = match &result {
        Ok(Some(sizes)) => ("compacted", Some(*sizes)),
        Ok(None) => ("kept", None),
        Err(e) if e.kind == ErrorKind::Cancelled => ("cancelled", None),
        Err(_) => ("failed", None),
    };
    telemetry::compaction_finished(&span, outcome, sizes);
    result.map(drop)
}

/// Compacts; `Ok(None)` when the history was kept (a summary larger than what it replaces),
/// else the estimated tokens of the next request before and after.
async fn compact_history(
    ctx: &TaskCtx,
    state: &mut SessionState,
    trigger: Trigger,
) -> Result<Option<(u64, u64)>, ErrorInfo> {
    let model = lock(&ctx.shared.model).clone();
    let policy = ctx.stat.policy.context;
    let window = policy.window(&model);
    let keep_bytes = state.meter.bytes((window as f64 * KEEP_SHARE) as u64);
    let Some(split) = split_point(&state.history, keep_bytes) else {
        return Err(ErrorInfo::new(
            ErrorKind::ContextTooLong,
            "there is nothing to compact: the conversation is a single message",
        ));
    };
    if let Some(hooks) = &ctx.stat.policy.hooks {
        let mode = *lock(&ctx.shared.approval_mode);
        let manual = trigger == Trigger::Requested;
        let outcome = hooks.pre_compact(&ctx.stat.cwd, mode, manual).await;
        emit_hook_notices(ctx, &outcome);
        if let Decision::Block(reason) = outcome.decision {
            let message = format!("a PreCompact hook kept the conversation as it is: {reason}");
            return Err(ErrorInfo::new(ErrorKind::BadRequest, message));
        }
    }
    tracing::info!(
        ?trigger,
        split,
        messages = state.history.len(),
        "compacting the conversation"
    );
    let tokens_before = next_request_tokens(ctx, state);
    // The part to summarize must itself fit, with room for the instruction and the answer.
    let room = policy
        .limit(&model)
        .saturating_sub(u64::from(SUMMARY_MAX_TOKENS));
    let request = ModelRequest {
        model: model.clone(),
        system: COMPACTION_SYSTEM.to_owned(),
        messages: summary_request(&state.history[..split], state.meter.bytes(room)).into(),
        tools: Vec::new(),
        max_output_tokens: Some(SUMMARY_MAX_TOKENS),
        temperature: None,
    };
    let mut summary = summarize(ctx, request, &model).await?;
    if let Some(hooks) = &ctx.stat.policy.hooks {
        // What `SessionStart` (`compact`) adds survives in the summary the model reads next.
        let (mode, model) = (
            *lock(&ctx.shared.approval_mode),
            lock(&ctx.shared.model).clone(),
        );
        let outcome =
            (hooks.session_start(&ctx.stat.cwd, mode, StartSource::Compact, &model)).await;
        emit_hook_notices(ctx, &outcome);
        for context in outcome.context {
            summary.push_str(&format!("\n\nSessionStart hook context: {context}"));
        }
    }
    let kept = &state.history[split..];
    let kept_messages = u32::try_from(kept.len()).unwrap_or(u32::MAX);
    let summary = match ctx
        .stat
        .policy
        .commands
        .as_ref()
        .and_then(|l| l.reattached())
    {
        // The skills the model loaded would be lost with the turns that loaded them.
        Some(skills) => format!("{summary}\n\n{skills}"),
        None => summary,
    };
    // The calls that started background processes may be gone from the history now.
    let summary = match ctx
        .stat
        .policy
        .shell
        .background
        .as_ref()
        .and_then(|b| b.reminder())
    {
        Some(running) => format!("{summary}\n\n{running}"),
        None => summary,
    };
    let history = compacted_history(&summary, kept);
    // `/compress` on a short conversation can produce a summary longer than what it replaces:
    // keep the history then, and say so.
    let new_bytes: u64 = history.iter().map(message_bytes).sum();
    if trigger == Trigger::Requested && new_bytes >= state.history_bytes() {
        let (old, new) = (
            state.meter.tokens(state.history_bytes()),
            state.meter.tokens(new_bytes),
        );
        ctx.events.emit(CoreEvent::Warning {
            message: format!(
                "Compressing is not worth it: the summary would make the conversation larger \
                 ({old} → {new} tokens). The history is kept as it is."
            ),
        });
        return Ok(None);
    }
    state.replace_history(history.into());
    // The reads the summary replaced are no longer in the conversation to point back to.
    lock(&ctx.shared.reads).clear();
    let tokens_after = next_request_tokens(ctx, state);
    ctx.events.emit(CoreEvent::Compacted {
        summary,
        kept_messages,
        tokens_before,
        tokens_after,
    });
    ctx.events.emit(CoreEvent::ContextUsage {
        used: tokens_after,
        window,
    });
    Ok(Some((tokens_before, tokens_after)))
}

/// Streams the summarizing request and returns its text (counted under `compaction`).
async fn summarize(ctx: &TaskCtx, request: ModelRequest, model: &str) -> Result<String, ErrorInfo> {
    let mut stream = ctx.stat.provider.stream(request);
    let mut text = String::new();
    let mut finished = false;
    loop {
        let item = tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => {
                return Err(ErrorInfo::new(ErrorKind::Cancelled, "the compaction was cancelled"));
            }
            item = stream.next() => item,
        };
        match item {
            None => break,
            Some(Err(err)) => return Err(err),
            Some(Ok(StreamEvent::Text { text: t })) => text.push_str(&t),
            Some(Ok(StreamEvent::Usage(usage))) => {
                telemetry::tokens(model, COMPACTION_PROMPT_ID, &usage);
                ctx.events.emit(CoreEvent::Usage {
                    prompt_id: COMPACTION_PROMPT_ID.to_owned(),
                    usage,
                });
            }
            Some(Ok(StreamEvent::Finished { .. })) => {
                finished = true;
                break;
            }
            Some(Ok(_)) => {}
        }
    }
    if !finished {
        return Err(ErrorInfo::new(
            ErrorKind::StreamTruncated,
            "the summary's response ended before it finished",
        ));
    }
    if text.trim().is_empty() {
        return Err(ErrorInfo::new(
            ErrorKind::BadResponse,
            "the model answered the compaction request with an empty summary",
        ));
    }
    Ok(text)
}

/// `/compress`: a task that only compacts.
pub(super) async fn run_compaction_task(ctx: TaskCtx, state: &mut SessionState, span: Span) {
    ctx.events.emit(CoreEvent::TaskStarted {
        task_id: ctx.task_id.clone(),
        prompt: "/compress".to_owned(),
    });
    let compacted = compact(&ctx, state, Trigger::Requested)
        .instrument(span.clone())
        .await;
    let (stop_reason, error) = match compacted {
        Ok(()) => (StopReason::EndTurn, None),
        Err(e) if e.kind == ErrorKind::Cancelled => (StopReason::Cancelled, None),
        Err(e) => (
            StopReason::Error,
            Some(ErrorInfo {
                message: format!("could not compact the conversation: {}", e.message),
                ..e
            }),
        ),
    };
    telemetry::task_finished(&span, stop_reason);
    drop(span);
    ctx.events.emit(CoreEvent::TaskFinished {
        task_id: ctx.task_id.clone(),
        stop_reason,
        error,
        pending_summaries: 0,
    });
}
