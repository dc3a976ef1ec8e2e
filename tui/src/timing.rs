//! What `/stats` adds to the core's usage counts: where the session's time went (wall clock,
//! waiting for the model, running tools), the tool success rate and tokens per model. Kept
//! from the events the UI sees, so it needs nothing more from the core.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use corvid_core::usage::UsageStats;
use corvid_protocol::{CoreEvent, MAIN_PROMPT_ID, Usage};

use crate::live::elapsed;

/// Time and per-model tokens of the session, from its events.
#[derive(Debug, Clone)]
pub struct SessionTimes {
    started: Instant,
    /// Waiting for the model: from each turn's start to its usage (or the task's end).
    model: Duration,
    turn_since: Option<Instant>,
    /// Running tools, summed over calls (parallel calls each count).
    tools: Duration,
    running: HashMap<String, Instant>,
    /// The model of the turn in progress, which the next main usage is counted under.
    current_model: Option<String>,
    by_model: BTreeMap<String, Usage>,
}

impl SessionTimes {
    /// A session whose wall clock starts at `now`.
    pub fn new(now: Instant) -> Self {
        Self {
            started: now,
            model: Duration::ZERO,
            turn_since: None,
            tools: Duration::ZERO,
            running: HashMap::new(),
            current_model: None,
            by_model: BTreeMap::new(),
        }
    }

    /// Counts one event that arrived at `now`.
    pub fn observe(&mut self, ev: &CoreEvent, now: Instant) {
        match ev {
            CoreEvent::TurnStarted { model, .. } => {
                self.end_turn(now);
                self.turn_since = Some(now);
                self.current_model = Some(model.clone());
            }
            CoreEvent::Usage { prompt_id, usage } if prompt_id == MAIN_PROMPT_ID => {
                self.end_turn(now);
                if let Some(model) = &self.current_model {
                    self.by_model.entry(model.clone()).or_default().add(usage);
                }
            }
            CoreEvent::TaskFinished { .. } => {
                self.end_turn(now);
                self.running.clear();
            }
            CoreEvent::ToolStarted { call_id, .. } => {
                self.running.insert(call_id.clone(), now);
            }
            CoreEvent::ToolFinished { call_id, .. } => {
                if let Some(since) = self.running.remove(call_id) {
                    self.tools += now.saturating_duration_since(since);
                }
            }
            _ => {}
        }
    }

    fn end_turn(&mut self, now: Instant) {
        if let Some(since) = self.turn_since.take() {
            self.model += now.saturating_duration_since(since);
        }
    }

    /// The lines `/stats` shows after the usage report, as of `now`.
    pub fn report(&self, stats: &UsageStats, now: Instant) -> String {
        let secs = |d: Duration| elapsed(d.as_secs());
        let mut out = format!(
            "time: wall {} · model {} · tools {} (summed over calls)",
            secs(now.saturating_duration_since(self.started)),
            secs(self.model),
            secs(self.tools),
        );
        let calls = stats.tool_calls;
        if calls.total > 0 {
            out.push_str(&format!(
                "\ntool success {}% ({} of {})",
                u64::from(calls.completed) * 100 / u64::from(calls.total),
                calls.completed,
                calls.total
            ));
        }
        for (model, u) in &self.by_model {
            out.push_str(&format!(
                "\nmodel {model}: input {} (cached {}) · output {} · total {}",
                u.input_tokens, u.cached_input_tokens, u.output_tokens, u.total_tokens
            ));
        }
        out.push_str("\ncost: not shown (no prices are configured for these models)");
        out
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use corvid_core::usage::UsageStats;
    use corvid_protocol::{CoreEvent, ToolDisplay, ToolKind, ToolOutput, ToolStatus, Usage};
    use pretty_assertions::assert_eq;

    use super::SessionTimes;

    #[test]
    fn stats_split_the_time_between_model_and_tools_and_count_tokens_per_model() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut times = SessionTimes::new(t0);
        let mut stats = UsageStats::default();
        let usage = |output| CoreEvent::Usage {
            prompt_id: "main".into(),
            usage: Usage {
                input_tokens: 100,
                output_tokens: output,
                total_tokens: 100 + output,
                ..Default::default()
            },
        };
        let turn = |model: &str| CoreEvent::TurnStarted {
            turn: 1,
            model: model.into(),
        };
        let started = CoreEvent::ToolStarted {
            call_id: "c1".into(),
            tool_name: "read_file".into(),
            args: serde_json::json!({}),
            display: ToolDisplay {
                title: "Read a".into(),
                kind: ToolKind::Read,
                locations: Vec::new(),
            },
            provenance: corvid_protocol::Provenance::Builtin,
            was_prepared: false,
        };
        let finished = CoreEvent::ToolFinished {
            call_id: "c1".into(),
            tool_name: "read_file".into(),
            status: ToolStatus::Completed,
            output: ToolOutput::text("a"),
            provenance: corvid_protocol::Provenance::Builtin,
        };
        for (s, ev) in [
            (1, turn("big")),
            (4, usage(10)),
            (4, started),
            (9, finished),
            (9, turn("small")),
            (11, usage(5)),
        ] {
            stats.observe(&ev);
            times.observe(&ev, at(s));
        }
        assert_eq!(
            times.report(&stats, at(75)),
            "time: wall 1m 15s · model 5s · tools 5s (summed over calls)\n\
             tool success 100% (1 of 1)\n\
             model big: input 100 (cached 0) · output 10 · total 110\n\
             model small: input 100 (cached 0) · output 5 · total 105\n\
             cost: not shown (no prices are configured for these models)"
        );
    }
}
