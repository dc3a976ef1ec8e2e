//! Telemetry as plain `tracing`: the spans, fields and metric events the loop records where
//! the work happens. Nothing here exports: the binary decides whether a layer turns them into
//! OpenTelemetry (off by default), and which of the targets below it listens to.
//!
//! Three targets keep what may leave the machine apart:
//! - [`SPAN_TARGET`]: spans of tasks, model requests, tool calls and compactions, with counts,
//!   names, durations and outcomes only;
//! - [`METRIC_TARGET`]: one event per measurement (see [`Metric`]);
//! - [`CONTENT_TARGET`]: prompt text, tool input and tool output, exported only when the user
//!   asks for it (`telemetry.logPrompts`).

use std::time::{Duration, Instant};

use corvid_protocol::{ErrorKind, StopReason, Usage};
use tracing::field::Empty;
use tracing::{Instrument, Span};

/// Target of the telemetry spans.
pub const SPAN_TARGET: &str = "corvid::telemetry";
/// Target of the metric events.
pub const METRIC_TARGET: &str = "corvid::metrics";
/// Target of the events carrying conversation content.
pub const CONTENT_TARGET: &str = "corvid::content";

/// The tool name recorded for a call of a tool corvid does not have: the name the model made
/// up is its own text, which may carry anything (what it read, the prompt).
pub const UNKNOWN_TOOL: &str = "unknown";

/// The metric names, the `metric` field of every event on [`METRIC_TARGET`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Tokens of one model response: fields `model`, `prompt_id`, `input`, `output`,
    /// `cached`, `reasoning`.
    Tokens,
    /// One finished tool call: fields `tool`, `outcome`, `duration_ms`.
    ToolDuration,
    /// A session started.
    SessionCount,
}

impl Metric {
    /// The exported instrument name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Tokens => "corvid.tokens",
            Self::ToolDuration => "corvid.tool.duration",
            Self::SessionCount => "corvid.session.count",
        }
    }

    /// The metric an event's `metric` field names.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Tokens, Self::ToolDuration, Self::SessionCount]
            .into_iter()
            .find(|m| m.name() == name)
    }
}

/// The span of one task (a user turn, `!command` or `/compress`) of session `session_id`.
pub fn task_span(session_id: &str, task_id: &str) -> Span {
    tracing::info_span!(
        target: SPAN_TARGET,
        "corvid.task",
        session.id = session_id,
        task.id = task_id,
        stop_reason = Empty,
        otel.status_code = Empty,
    )
}

/// Records how a task ended on its span.
pub fn task_finished(span: &Span, stop_reason: StopReason) {
    let reason = match stop_reason {
        StopReason::EndTurn => "end_turn",
        StopReason::Cancelled => "cancelled",
        StopReason::MaxTokens => "max_tokens",
        StopReason::Refusal => "refusal",
        StopReason::MaxTurns => "max_turns",
        StopReason::Error => "error",
    };
    span.record("stop_reason", reason);
    failed_if(span, stop_reason == StopReason::Error);
}

/// Marks `span` as failed in the OpenTelemetry sense when `failed` (backends show it as an
/// error); other spans keep the unset status.
fn failed_if(span: &Span, failed: bool) {
    if failed {
        span.record("otel.status_code", "error");
    }
}

/// The span of one model request; `retries` is how many attempts at this turn failed before.
pub fn request_span(model: &str, prompt_id: &str, retries: u32) -> Span {
    tracing::info_span!(
        target: SPAN_TARGET,
        "corvid.model_request",
        model,
        prompt_id,
        retries,
        input_tokens = Empty,
        output_tokens = Empty,
        cached_tokens = Empty,
        reasoning_tokens = Empty,
        ttft_ms = Empty,
        outcome = Empty,
        error_kind = Empty,
        otel.status_code = Empty,
    )
}

/// Records the time to the first streamed event on the current request span.
pub fn first_token(after: Duration) {
    Span::current().record("ttft_ms", millis(after));
}

/// Records how a request ended, with its usage when the provider reported one and the kind
/// of its error when it failed (the kind only: a server's message may quote the prompt).
pub fn request_finished(
    span: &Span,
    usage: Option<&Usage>,
    outcome: &str,
    error: Option<ErrorKind>,
) {
    if let Some(kind) = error {
        span.record("error_kind", kind.as_str());
    }
    if let Some(u) = usage {
        span.record("input_tokens", u.input_tokens);
        span.record("output_tokens", u.output_tokens);
        span.record("cached_tokens", u.cached_input_tokens);
        span.record("reasoning_tokens", u.reasoning_tokens);
    }
    span.record("outcome", outcome);
    failed_if(span, error.is_some_and(|kind| kind != ErrorKind::Cancelled));
}

/// The span of one tool call, with its input as content.
pub fn tool_span(tool: &str, call_id: &str, args: &serde_json::Value) -> Span {
    let span = tracing::info_span!(
        target: SPAN_TARGET,
        "corvid.tool_call",
        tool,
        call_id,
        duration_ms = Empty,
        approval_wait_ms = Empty,
        outcome = Empty,
    );
    span.in_scope(
        || tracing::info!(target: CONTENT_TARGET, tool_input = %args, "corvid.tool_input"),
    );
    span
}

/// Runs one tool call in `span`, then records its outcome and output (`ended` reads them from
/// the call's result) and its duration.
pub async fn tool_call<T>(
    span: Span,
    tool: String,
    call: impl Future<Output = T>,
    ended: impl FnOnce(&T) -> (&'static str, &str),
) -> T {
    let started = Instant::now();
    let end = call.instrument(span.clone()).await;
    let (outcome, output) = ended(&end);
    span.in_scope(
        || tracing::info!(target: CONTENT_TARGET, tool_output = output, "corvid.tool_output"),
    );
    tool_finished(&span, &tool, outcome, started.elapsed());
    end
}

/// Records how long the current tool call waited for the user's approval.
pub fn approval_waited(wait: Duration) {
    Span::current().record("approval_wait_ms", millis(wait));
}

/// Records how a tool call ended on its span, and its duration as a metric.
fn tool_finished(span: &Span, tool: &str, outcome: &str, took: Duration) {
    span.record("duration_ms", millis(took));
    span.record("outcome", outcome);
    tracing::info!(
        target: METRIC_TARGET,
        metric = Metric::ToolDuration.name(),
        tool,
        outcome,
        duration_ms = took.as_secs_f64() * 1000.0,
    );
}

/// The span of one compaction of the conversation.
pub fn compaction_span(model: &str, trigger: &str) -> Span {
    tracing::info_span!(
        target: SPAN_TARGET,
        "corvid.compaction",
        model,
        trigger,
        tokens_before = Empty,
        tokens_after = Empty,
        outcome = Empty,
        otel.status_code = Empty,
    )
}

/// Records how a compaction ended, with the estimated size of the next request before and
/// after when the history was replaced.
pub fn compaction_finished(span: &Span, outcome: &str, sizes: Option<(u64, u64)>) {
    if let Some((before, after)) = sizes {
        span.record("tokens_before", before);
        span.record("tokens_after", after);
    }
    span.record("outcome", outcome);
    failed_if(span, outcome == "failed");
}

/// The tokens one response used, for `model` under `prompt_id`.
pub fn tokens(model: &str, prompt_id: &str, usage: &Usage) {
    tracing::info!(
        target: METRIC_TARGET,
        metric = Metric::Tokens.name(),
        model,
        prompt_id,
        input = usage.input_tokens,
        output = usage.output_tokens,
        cached = usage.cached_input_tokens,
        reasoning = usage.reasoning_tokens,
    );
}

/// A session started.
pub fn session_started() {
    tracing::info!(target: METRIC_TARGET, metric = Metric::SessionCount.name());
}

/// The user's prompt, on the current (task) span; content, see [`CONTENT_TARGET`].
pub fn prompt(text: &str) {
    tracing::info!(target: CONTENT_TARGET, prompt = text, "corvid.prompt");
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
