//! The core's metric events (`corvid_core::telemetry::METRIC_TARGET`) as OpenTelemetry
//! instruments: `corvid.tokens`, `corvid.cost` (for models with a configured price),
//! `corvid.tool.duration` and `corvid.session.count`.

use std::collections::BTreeMap;

use corvid_core::telemetry::Metric;
use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, Meter};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

use super::config::Price;

/// Records every metric event on its instrument.
pub struct MetricsLayer {
    tokens: Counter<u64>,
    cost: Counter<f64>,
    tool_duration: Histogram<f64>,
    sessions: Counter<u64>,
    prices: BTreeMap<String, Price>,
}

impl MetricsLayer {
    /// The instruments, made on `meter`.
    pub fn new(meter: &Meter, prices: BTreeMap<String, Price>) -> Self {
        Self {
            tokens: meter
                .u64_counter(Metric::Tokens.name())
                .with_description("Tokens used, by model, prompt id and type")
                .with_unit("{token}")
                .build(),
            cost: meter
                .f64_counter("corvid.cost")
                .with_description("Cost of the model requests from telemetry.prices")
                .with_unit("USD")
                .build(),
            tool_duration: meter
                .f64_histogram(Metric::ToolDuration.name())
                .with_description("How long tool calls took, approval included")
                .with_unit("ms")
                .build(),
            sessions: meter
                .u64_counter(Metric::SessionCount.name())
                .with_description("Sessions started")
                .build(),
            prices,
        }
    }

    fn tokens(&self, f: &Fields) {
        let base = [
            KeyValue::new("model", f.model.clone()),
            KeyValue::new("prompt_id", f.prompt_id.clone()),
        ];
        for (kind, count) in [
            ("input", f.input),
            ("output", f.output),
            ("cached_input", f.cached),
            ("reasoning", f.reasoning),
        ] {
            if count == 0 && matches!(kind, "cached_input" | "reasoning") {
                continue;
            }
            let mut attrs = base.to_vec();
            attrs.push(KeyValue::new("type", kind));
            self.tokens.add(count, &attrs);
        }
        if let Some(price) = self.prices.get(&f.model) {
            self.cost
                .add(price.cost(f.input, f.cached, f.output), &base);
        }
    }
}

impl<S: Subscriber> Layer<S> for MetricsLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut f = Fields::default();
        event.record(&mut f);
        match Metric::parse(&f.metric) {
            Some(Metric::Tokens) => self.tokens(&f),
            Some(Metric::ToolDuration) => self.tool_duration.record(
                f.duration_ms,
                &[
                    KeyValue::new("tool", f.tool),
                    KeyValue::new("outcome", f.outcome),
                ],
            ),
            Some(Metric::SessionCount) => self.sessions.add(1, &[]),
            None => {}
        }
    }
}

/// The fields a metric event may carry.
#[derive(Default)]
struct Fields {
    metric: String,
    model: String,
    prompt_id: String,
    tool: String,
    outcome: String,
    input: u64,
    output: u64,
    cached: u64,
    reasoning: u64,
    duration_ms: f64,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        let slot = match field.name() {
            "metric" => &mut self.metric,
            "model" => &mut self.model,
            "prompt_id" => &mut self.prompt_id,
            "tool" => &mut self.tool,
            "outcome" => &mut self.outcome,
            _ => return,
        };
        value.clone_into(slot);
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        let slot = match field.name() {
            "input" => &mut self.input,
            "output" => &mut self.output,
            "cached" => &mut self.cached,
            "reasoning" => &mut self.reasoning,
            _ => return,
        };
        *slot = value;
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        if field.name() == "duration_ms" {
            self.duration_ms = value;
        }
    }

    fn record_debug(&mut self, _field: &Field, _value: &dyn std::fmt::Debug) {}
}
