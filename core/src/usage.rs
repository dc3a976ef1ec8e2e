//! Usage statistics of a session, accumulated from core events: token usage per prompt id,
//! turns and tool calls. Headless JSON output and `/stats` read them.

use std::collections::BTreeMap;

use corvid_protocol::{CoreEvent, ToolStatus, Usage};
use serde::{Deserialize, Serialize};

/// Counts of executed tool calls by outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallCounts {
    /// Every call that finished.
    pub total: u32,
    /// Calls that ran successfully.
    pub completed: u32,
    /// Calls that failed, were refused or were rejected.
    pub failed: u32,
}

/// What a session (or task) consumed so far, built by feeding it every core event.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageStats {
    /// Token usage per prompt id (`main`, `tool_use_summary_generation`, ...).
    pub by_prompt: BTreeMap<String, Usage>,
    /// Model turns started.
    pub turns: u32,
    /// Tool calls that finished (plans from `todo_write` are not tool cards and not counted).
    pub tool_calls: ToolCallCounts,
    /// How full the context window was at the last report (none before the first answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextFill>,
}

/// Tokens in the model's context window, of its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextFill {
    pub used: u64,
    pub window: u64,
}

impl ContextFill {
    /// The share of the window in use, in whole percent.
    pub fn percent(&self) -> u64 {
        (self.used.saturating_mul(100)) / self.window.max(1)
    }
}

impl UsageStats {
    /// The `/stats` answer of every front end: token usage per prompt id, turns and tool
    /// calls, one fact per line.
    pub fn report(&self) -> String {
        let calls = self.tool_calls;
        let mut out = format!(
            "Session stats\nturns {} · tool calls {} ({} completed, {} failed)",
            self.turns, calls.total, calls.completed, calls.failed
        );
        if let Some(fill) = self.context {
            out.push_str(&format!(
                "\ncontext: {} of {} tokens ({}%)",
                fill.used,
                fill.window,
                fill.percent()
            ));
        }
        if self.by_prompt.is_empty() {
            out.push_str("\nno token usage reported yet");
        }
        for (id, u) in &self.by_prompt {
            out.push_str(&format!(
                "\n{id}: input {} (cached {}) · output {} (reasoning {}) · total {}",
                u.input_tokens,
                u.cached_input_tokens,
                u.output_tokens,
                u.reasoning_tokens,
                u.total_tokens
            ));
        }
        out
    }

    /// Updates the statistics with one event of the agent's stream.
    pub fn observe(&mut self, ev: &CoreEvent) {
        match ev {
            CoreEvent::TurnStarted { .. } => self.turns += 1,
            CoreEvent::Usage { prompt_id, usage } => {
                self.by_prompt
                    .entry(prompt_id.clone())
                    .or_default()
                    .add(usage);
            }
            CoreEvent::ContextUsage { used, window } => {
                self.context = Some(ContextFill {
                    used: *used,
                    window: *window,
                });
            }
            CoreEvent::ToolFinished { status, .. } => {
                self.tool_calls.total += 1;
                match status {
                    ToolStatus::Completed => self.tool_calls.completed += 1,
                    ToolStatus::Failed => self.tool_calls.failed += 1,
                }
            }
            _ => {}
        }
    }

    /// The usage of one prompt id (zero when it made no calls).
    pub fn for_prompt(&self, prompt_id: &str) -> Usage {
        self.by_prompt.get(prompt_id).copied().unwrap_or_default()
    }

    /// The usage of all prompt ids together.
    pub fn total(&self) -> Usage {
        let mut sum = Usage::default();
        for usage in self.by_prompt.values() {
            sum.add(usage);
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use corvid_protocol::{MAIN_PROMPT_ID, Provenance, SUMMARY_PROMPT_ID, ToolOutput};
    use pretty_assertions::assert_eq;

    use super::*;

    fn usage(input: u64, output: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            total_tokens: input + output,
            ..Usage::default()
        }
    }

    #[test]
    fn usage_is_accumulated_per_prompt_id_with_turn_and_tool_counts() {
        let mut stats = UsageStats::default();
        let events = [
            CoreEvent::TurnStarted {
                turn: 1,
                model: "m".into(),
            },
            CoreEvent::Usage {
                prompt_id: MAIN_PROMPT_ID.into(),
                usage: usage(10, 2),
            },
            CoreEvent::ToolFinished {
                call_id: "a".into(),
                tool_name: "read_file".into(),
                status: ToolStatus::Completed,
                output: ToolOutput::text("x"),
                provenance: Provenance::Builtin,
            },
            CoreEvent::ToolFinished {
                call_id: "b".into(),
                tool_name: "edit".into(),
                status: ToolStatus::Failed,
                output: ToolOutput::text("no"),
                provenance: Provenance::Builtin,
            },
            CoreEvent::TurnStarted {
                turn: 2,
                model: "m".into(),
            },
            CoreEvent::Usage {
                prompt_id: MAIN_PROMPT_ID.into(),
                usage: usage(20, 3),
            },
            CoreEvent::Usage {
                prompt_id: SUMMARY_PROMPT_ID.into(),
                usage: usage(5, 1),
            },
        ];
        for ev in &events {
            stats.observe(ev);
        }
        let mut by_prompt = BTreeMap::new();
        by_prompt.insert(MAIN_PROMPT_ID.to_owned(), usage(30, 5));
        by_prompt.insert(SUMMARY_PROMPT_ID.to_owned(), usage(5, 1));
        assert_eq!(
            stats,
            UsageStats {
                by_prompt,
                turns: 2,
                tool_calls: ToolCallCounts {
                    total: 2,
                    completed: 1,
                    failed: 1
                },
                context: None,
            }
        );
        assert_eq!(stats.total(), usage(35, 6));
    }
}
