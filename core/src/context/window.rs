//! How many tokens a model's context window holds, and when corvid compacts before a request
//! would overflow it.

/// The window assumed for a model corvid does not know: small enough that compaction starts
/// before most servers would refuse (a wrong guess costs an early summary, not a dead session).
pub const DEFAULT_WINDOW: u64 = 32_768;

/// The share of the window a request may fill before corvid compacts first.
pub const DEFAULT_THRESHOLD: f64 = 0.8;

/// Known families, matched on the model name without its provider prefix (`openai/gpt-4.1`,
/// `accounts/fireworks/models/qwen3-coder`), first match wins, so more specific names come
/// first.
const KNOWN_WINDOWS: &[(&str, u64)] = &[
    ("claude", 200_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4", 8_192),
    ("gpt-3.5", 16_385),
    // GPT-5.x and its Codex models (Responses API): 400k, except the chat snapshots.
    ("gpt-5-chat", 128_000),
    ("gpt-5.1-chat", 128_000),
    ("gpt-5.2-chat", 128_000),
    ("gpt-5", 400_000),
    ("o1-mini", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4", 200_000),
    ("codex-mini", 200_000),
    ("codex", 400_000),
    ("qwen3-coder", 262_144),
    ("qwen3", 131_072),
    ("qwen2.5-coder", 32_768),
    ("qwen2.5", 32_768),
    ("qwen-max", 32_768),
    ("qwen-plus", 131_072),
    ("qwen-turbo", 1_000_000),
    ("qwq", 131_072),
    ("deepseek", 131_072),
    ("llama-4", 1_048_576),
    ("llama4", 1_048_576),
    ("llama-3.1", 131_072),
    ("llama3.1", 131_072),
    ("llama-3.2", 131_072),
    ("llama3.2", 131_072),
    ("llama-3.3", 131_072),
    ("llama3.3", 131_072),
    ("llama", 8_192),
    ("gemini", 1_048_576),
    ("mistral-large", 131_072),
    ("codestral", 262_144),
    ("devstral", 131_072),
    ("kimi-k2", 131_072),
    ("glm-4.5", 131_072),
];

/// The context window of `model` from the built-in table, if its family is known.
pub fn known_window(model: &str) -> Option<u64> {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    KNOWN_WINDOWS
        .iter()
        .find(|(family, _)| name.starts_with(family) || name.contains(&format!("-{family}")))
        .map(|(_, window)| *window)
}

/// The session's context settings (`model.contextWindow`, `model.compactThreshold`,
/// `model.autoCompact`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContextPolicy {
    /// The window the user set, for every model of the session; else the table decides.
    pub window_override: Option<u64>,
    /// Share of the window (0 < t <= 1) a request may fill before compacting first.
    pub threshold: f64,
    /// Whether corvid compacts on its own (off: only `/compress` and the recovery from a
    /// "context too long" answer do).
    pub auto_compact: bool,
}

impl Default for ContextPolicy {
    fn default() -> Self {
        Self {
            window_override: None,
            threshold: DEFAULT_THRESHOLD,
            auto_compact: true,
        }
    }
}

impl ContextPolicy {
    /// The window of `model`: the setting, the table, or the conservative default.
    pub fn window(&self, model: &str) -> u64 {
        self.window_override
            .or_else(|| known_window(model))
            .unwrap_or(DEFAULT_WINDOW)
    }

    /// How many tokens a request to `model` may have before corvid compacts first.
    pub fn limit(&self, model: &str) -> u64 {
        // The product of a window (< 2^53) and a share <= 1 fits back into u64.
        (self.window(model) as f64 * self.threshold) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_matched_with_or_without_a_provider_prefix_and_unknown_names_get_the_default() {
        assert_eq!(known_window("claude-sonnet-4-5-20250929"), Some(200_000));
        assert_eq!(known_window("gpt-4.1-mini"), Some(1_047_576));
        assert_eq!(known_window("gpt-4o-2024-08-06"), Some(128_000));
        assert_eq!(known_window("openai/gpt-5"), Some(400_000));
        assert_eq!(known_window("o3-mini"), Some(200_000));
        assert_eq!(known_window("gpt-5.1-codex"), Some(400_000));
        assert_eq!(known_window("gpt-5.1-codex-max"), Some(400_000));
        assert_eq!(known_window("gpt-5.2"), Some(400_000));
        assert_eq!(known_window("gpt-5-codex-mini"), Some(400_000));
        assert_eq!(known_window("gpt-5.1-chat-latest"), Some(128_000));
        assert_eq!(known_window("codex-mini-latest"), Some(200_000));
        assert_eq!(
            known_window("Qwen3-Coder-480B-A35B-Instruct"),
            Some(262_144)
        );
        assert_eq!(known_window("qwen2.5-coder:7b"), Some(32_768));
        assert_eq!(known_window("deepseek-chat"), Some(131_072));
        assert_eq!(
            known_window("meta-llama/llama-3.1-8b-instruct"),
            Some(131_072)
        );
        assert_eq!(known_window("gemini-2.5-pro"), Some(1_048_576));
        assert_eq!(known_window("my-finetune"), None);
        assert_eq!(
            ContextPolicy::default().window("my-finetune"),
            DEFAULT_WINDOW
        );
    }

    #[test]
    fn the_setting_wins_over_the_table_and_the_threshold_sets_the_limit() {
        let policy = ContextPolicy {
            window_override: Some(40_000),
            threshold: 0.5,
            auto_compact: true,
        };
        assert_eq!(policy.window("claude-sonnet-4-5"), 40_000);
        assert_eq!(policy.limit("claude-sonnet-4-5"), 20_000);
    }
}
