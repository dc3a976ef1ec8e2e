//! Tool-use summaries: fast-model labels for finished tool batches (SPEC §7).
//!
//! The core loop decides *when* a batch is summarised (main agent only, in the background,
//! stale/cancelled results dropped); this module decides *whether* the feature is on
//! ([`summaries_enabled`]), *what* is asked ([`build_summary_request`]), and *what* the
//! answer becomes ([`clean_label`], [`local_label`]), and runs one bounded call
//! ([`summarize_batch`]).

mod clean;
mod fast_path;
mod gate;
mod request;
mod title;

use std::sync::Arc;
use std::time::Duration;

use corvid_protocol::Usage;
use corvid_providers::Provider;

pub use clean::{LABEL_MAX_CHARS, clean_label};
pub use fast_path::local_label;
pub use gate::{CORVID_ENV, QWEN_ENV, summaries_enabled};
pub use request::{FIELD_MAX_CHARS, INTENT_MAX_CHARS, build_summary_request, truncate_json};
pub use title::{TITLE_MAX_CHARS, build_title_request, clean_title, session_title};

/// How long a summary call may take before its result is dropped (SPEC §7.2).
pub const SUMMARY_TIMEOUT: Duration = Duration::from_secs(10);

/// The fast model that writes labels; the main model is never used for summaries.
#[derive(Clone)]
pub struct SummaryConfig {
    /// The provider serving the fast model.
    pub provider: Arc<dyn Provider>,
    /// The fast model's name, sent as the request's model.
    pub model: String,
}

impl std::fmt::Debug for SummaryConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SummaryConfig")
            .field("provider", &self.provider.name())
            .field("model", &self.model)
            .finish()
    }
}

/// What the summariser needs to know about one finished batch.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchForSummary {
    /// The assistant's last visible text before the batch, if any (the "why" of the batch).
    pub intent: Option<String>,
    /// The batch's calls in order.
    pub calls: Vec<SummaryCall>,
}

/// One executed call of a batch, as the summariser sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryCall {
    /// The tool's name.
    pub name: String,
    /// The call's arguments.
    pub args: serde_json::Value,
    /// The text the tool returned to the model.
    pub output: String,
    /// Whether the call executed successfully.
    pub succeeded: bool,
}

/// The result of one summary attempt: a label, or the reason there is none.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SummaryOutcome {
    /// The cleaned label; `None` means the summary is dropped.
    pub label: Option<String>,
    /// Token usage of the fast-model call, when one was made and reported it.
    pub usage: Option<Usage>,
    /// Why no label was produced (for logs and `SummaryDropped`).
    pub drop_reason: Option<String>,
}

impl SummaryOutcome {
    fn dropped(reason: impl Into<String>, usage: Option<Usage>) -> Self {
        Self {
            label: None,
            usage,
            drop_reason: Some(reason.into()),
        }
    }
}

/// Labels one batch: locally when the fast path applies, otherwise with one fast-model call
/// bounded by [`SUMMARY_TIMEOUT`]. Never fails: problems become a `drop_reason`.
pub async fn summarize_batch(cfg: &SummaryConfig, batch: &BatchForSummary) -> SummaryOutcome {
    summarize_batch_within(cfg, batch, SUMMARY_TIMEOUT).await
}

/// [`summarize_batch`] with a caller-chosen bound, for callers that must settle sooner
/// (and for tests that cannot wait ten seconds).
pub async fn summarize_batch_within(
    cfg: &SummaryConfig,
    batch: &BatchForSummary,
    timeout: Duration,
) -> SummaryOutcome {
    if batch.calls.is_empty() {
        return SummaryOutcome::dropped("the batch has no calls", None);
    }
    if let Some(label) = local_label(batch) {
        return SummaryOutcome {
            label: Some(label),
            usage: None,
            drop_reason: None,
        };
    }
    let request = build_summary_request(&cfg.model, batch);
    let call = cfg.provider.complete(request);
    match tokio::time::timeout(timeout, call).await {
        Err(_) => {
            tracing::debug!(model = %cfg.model, ?timeout, "tool-use summary timed out");
            SummaryOutcome::dropped(
                format!(
                    "the summary call timed out after {} ms",
                    timeout.as_millis()
                ),
                None,
            )
        }
        Ok(Err(error)) => {
            tracing::debug!(model = %cfg.model, %error, "tool-use summary call failed");
            SummaryOutcome::dropped(format!("the summary call failed: {error}"), None)
        }
        Ok(Ok(completion)) => match clean_label(&completion.text) {
            Some(label) => SummaryOutcome {
                label: Some(label),
                usage: completion.usage,
                drop_reason: None,
            },
            None => SummaryOutcome::dropped(
                "the summary was empty or a refusal after cleaning",
                completion.usage,
            ),
        },
    }
}
