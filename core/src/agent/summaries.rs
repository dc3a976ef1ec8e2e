//! When tool-use summaries are requested and how they settle (SPEC §7.2): after each main-agent
//! batch, in the background, never delaying the next turn; stale or cancelled results dropped.

use std::sync::{Arc, Mutex};

use corvid_protocol::{CoreEvent, ErrorInfo, SUMMARY_PROMPT_ID, StopReason};

use super::session::{TaskCtx, lock};
use crate::summary::{BatchForSummary, INTENT_MAX_CHARS, SummaryCall, summarize_batch};

/// The summaries of one task that have not settled yet.
pub(super) struct SummaryTracker {
    in_flight: Arc<Mutex<u32>>,
}

impl SummaryTracker {
    pub(super) fn new() -> Self {
        Self {
            in_flight: Arc::new(Mutex::new(0)),
        }
    }

    /// Announces a finished batch and, when summaries are on and a card-showing call
    /// succeeded, starts its summary in the background.
    pub(super) fn batch_completed(
        &self,
        ctx: &TaskCtx,
        call_ids: Vec<String>,
        calls: Vec<(String, SummaryCall)>,
        intent: Option<String>,
    ) {
        let seq = {
            let mut latest = lock(&ctx.shared.latest_batch);
            // Only batches with cards make earlier labels stale: a plan update (`todo_write`
            // alone) is no tool group a label could be mistaken for (front ends agree).
            if !calls.is_empty() {
                *latest += 1;
            }
            ctx.events.emit(CoreEvent::BatchCompleted { call_ids });
            *latest
        };
        let Some(cfg) = ctx.stat.summaries.clone() else {
            return;
        };
        if ctx.cancel.is_cancelled() || !calls.iter().any(|(_, c)| c.succeeded) {
            return;
        }
        let (ids, calls): (Vec<String>, Vec<SummaryCall>) = calls.into_iter().unzip();
        let batch = BatchForSummary {
            intent: intent.map(|text| text.chars().take(INTENT_MAX_CHARS).collect()),
            calls,
        };
        *lock(&self.in_flight) += 1;
        let in_flight = self.in_flight.clone();
        let ctx = ctx.clone();
        tokio::spawn(async move {
            let outcome = tokio::select! {
                biased;
                _ = ctx.cancel.cancelled() => None,
                outcome = summarize_batch(&cfg, &batch) => Some(outcome),
            };
            let latest = lock(&ctx.shared.latest_batch);
            let mut pending = lock(&in_flight);
            // The usage goes out before the label or its drop: that one settles the batch, and
            // a front end waiting for the last settlement (headless) stops reading there.
            if let Some(usage) = outcome.as_ref().and_then(|o| o.usage) {
                crate::telemetry::tokens(&cfg.model, SUMMARY_PROMPT_ID, &usage);
                ctx.events.emit(CoreEvent::Usage {
                    prompt_id: SUMMARY_PROMPT_ID.to_owned(),
                    usage,
                });
            }
            let dropped = match outcome {
                _ if ctx.cancel.is_cancelled() => Some("the task was cancelled".to_owned()),
                _ if *latest > seq => Some("stale: a later batch already completed".to_owned()),
                None => Some("the task was cancelled".to_owned()),
                Some(o) => match o.label {
                    Some(summary) => {
                        ctx.events.emit(CoreEvent::ToolUseSummary {
                            summary,
                            preceding_tool_use_ids: ids.clone(),
                        });
                        None
                    }
                    None => Some(o.drop_reason.unwrap_or_else(|| "no label".to_owned())),
                },
            };
            if let Some(reason) = dropped {
                ctx.events.emit(CoreEvent::SummaryDropped {
                    preceding_tool_use_ids: ids,
                    reason,
                });
            }
            *pending = pending.saturating_sub(1);
            drop(latest);
        });
    }

    /// Ends the task; summaries still running are counted and settle later.
    pub(super) fn finish_task(
        &self,
        ctx: &TaskCtx,
        stop_reason: StopReason,
        error: Option<ErrorInfo>,
    ) {
        let pending = lock(&self.in_flight);
        ctx.events.emit(CoreEvent::TaskFinished {
            task_id: ctx.task_id.clone(),
            stop_reason,
            error,
            pending_summaries: *pending,
        });
    }
}
