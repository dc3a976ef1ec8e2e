//! `generationConfig.thinkingConfig`: thoughts always asked for, and `model.reasoningEffort`
//! as the knob each model generation takes. Gemini 2.5 takes a token budget; Gemini 3 and later
//! take a `thinkingLevel` (a budget there is only tolerated, and both at once is a 400).

use serde::Serialize;

use crate::reasoning::ReasoningEffort;

#[derive(Serialize, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(super) struct ThinkingConfig {
    include_thoughts: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_budget: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_level: Option<&'static str>,
}

impl ThinkingConfig {
    /// The thinking config of a request to `model`; `None` for a model that does not think
    /// (it would reject the field). No effort leaves Gemini's dynamic default.
    pub(super) fn new(model: &str, effort: Option<ReasoningEffort>) -> Option<Self> {
        if !thinks(model) {
            return None;
        }
        let name = bare(model);
        let levels = !name.starts_with("gemini-2");
        Some(Self {
            include_thoughts: true,
            thinking_budget: effort.filter(|_| !levels).map(budget),
            thinking_level: effort.filter(|_| levels).map(|e| level(name, e)),
        })
    }
}

/// The model name without a `models/` (or other) prefix.
fn bare(model: &str) -> &str {
    model.rsplit('/').next().unwrap_or(model)
}

/// Whether `model` thinks (2.5 and later); older models reject `thinkingConfig`.
pub(super) fn thinks(model: &str) -> bool {
    let name = bare(model);
    !(name.starts_with("gemini-1") || name.starts_with("gemini-2.0"))
}

/// The thinking budget (tokens) of an effort on Gemini 2.5.
fn budget(effort: ReasoningEffort) -> u32 {
    match effort {
        ReasoningEffort::Minimal => 512,
        ReasoningEffort::Low => 2048,
        ReasoningEffort::Medium => 8192,
        ReasoningEffort::High => 24_576,
        ReasoningEffort::Xhigh => 32_768,
    }
}

/// The `thinkingLevel` of an effort on Gemini 3 and later: Flash models take all four levels,
/// Pro models only `low` and `high` (an effort between goes to the nearer one above).
fn level(name: &str, effort: ReasoningEffort) -> &'static str {
    let flash = name.contains("flash");
    match effort {
        ReasoningEffort::Minimal if flash => "minimal",
        ReasoningEffort::Minimal | ReasoningEffort::Low => "low",
        ReasoningEffort::Medium if flash => "medium",
        ReasoningEffort::Medium | ReasoningEffort::High | ReasoningEffort::Xhigh => "high",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn config(model: &str, effort: Option<ReasoningEffort>) -> serde_json::Value {
        serde_json::to_value(ThinkingConfig::new(model, effort)).unwrap()
    }

    #[test]
    fn gemini_2_5_gets_a_budget_gemini_3_a_level_and_older_models_no_thinking_config() {
        use ReasoningEffort::*;
        assert_eq!(
            config("gemini-2.5-pro", Some(High)),
            json!({"includeThoughts": true, "thinkingBudget": 24576})
        );
        assert_eq!(
            config("models/gemini-3-pro-preview", Some(Medium)),
            json!({"includeThoughts": true, "thinkingLevel": "high"})
        );
        assert_eq!(
            config("gemini-3-pro-preview", Some(Minimal)),
            json!({"includeThoughts": true, "thinkingLevel": "low"})
        );
        let flash: Vec<serde_json::Value> = [Minimal, Low, Medium, High, Xhigh]
            .into_iter()
            .map(|e| config("gemini-3-flash-preview", Some(e))["thinkingLevel"].clone())
            .collect();
        assert_eq!(flash, ["minimal", "low", "medium", "high", "high"]);
        assert_eq!(
            config("gemini-3-flash-preview", None),
            json!({"includeThoughts": true})
        );
        assert_eq!(config("gemini-2.0-flash", Some(High)), json!(null));
        assert_eq!(config("gemini-1.5-pro", None), json!(null));
    }
}
