//! The `/stats` report, from the core's usage statistics.

use corvid_core::usage::UsageStats;

/// Token usage per prompt id, turns and tool calls, one fact per line.
pub fn report(stats: &UsageStats) -> String {
    let calls = stats.tool_calls;
    let mut out = format!(
        "Session stats\nturns {} · tool calls {} ({} completed, {} failed)",
        stats.turns, calls.total, calls.completed, calls.failed
    );
    if stats.by_prompt.is_empty() {
        out.push_str("\nno token usage reported yet");
    }
    for (id, u) in &stats.by_prompt {
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
