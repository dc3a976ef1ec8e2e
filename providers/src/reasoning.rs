//! How much a reasoning model thinks and what it tells about it (`model.reasoningEffort`,
//! `model.reasoningSummary`), in the words the OpenAI APIs use.

use std::sync::{Arc, Mutex, PoisonError};

pub use corvid_protocol::ReasoningEffort;

/// The effort chosen while the session runs (`/model NAME EFFORT`, ACP's `reasoning_effort`
/// option), shared by a provider's clones; once set it wins over the configured one.
#[derive(Debug, Clone, Default)]
pub(crate) struct LiveEffort(Arc<Mutex<Option<ReasoningEffort>>>);

impl LiveEffort {
    pub(crate) fn set(&self, effort: ReasoningEffort) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(effort);
    }

    /// The effort asked for: the chosen one, else `configured`.
    pub(crate) fn or(&self, configured: Option<ReasoningEffort>) -> Option<ReasoningEffort> {
        let live = *self.0.lock().unwrap_or_else(PoisonError::into_inner);
        live.or(configured)
    }

    /// The effort of a request to a model that takes one (`takes_effort`) or not: a chosen
    /// effort is never sent to a model that takes none (the session may have switched to one
    /// since), a configured one always is (the user asked for it).
    pub(crate) fn for_request(
        &self,
        configured: Option<ReasoningEffort>,
        takes_effort: bool,
    ) -> Option<ReasoningEffort> {
        if takes_effort {
            self.or(configured)
        } else {
            configured
        }
    }
}

/// Every effort, for models that take one; none for the others.
pub(crate) fn efforts_if(supported: bool) -> &'static [ReasoningEffort] {
    if supported {
        &ReasoningEffort::ALL
    } else {
        &[]
    }
}

/// `model.reasoningSummary`: whether the Responses API streams a summary of the reasoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReasoningSummary {
    Auto,
    Concise,
    Detailed,
    /// No summary is asked for (the encrypted reasoning is still carried across turns).
    Off,
}

impl ReasoningSummary {
    /// Every value, in settings order.
    pub const ALL: [Self; 4] = [Self::Auto, Self::Concise, Self::Detailed, Self::Off];

    /// The settings and wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Concise => "concise",
            Self::Detailed => "detailed",
            Self::Off => "off",
        }
    }

    /// Parses a settings value.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == s)
    }
}

/// The reasoning settings of a session; unset values are the provider's defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reasoning {
    pub effort: Option<ReasoningEffort>,
    pub summary: Option<ReasoningSummary>,
}

impl Reasoning {
    /// What to ask of `model`: nothing for a model that does not reason (such models reject
    /// the reasoning fields) unless the user set something, and a summary (`auto`) by
    /// default for one that does, so its thinking shows.
    pub fn for_model(self, model: &str) -> Option<Reasoning> {
        let set = self.effort.is_some() || self.summary.is_some();
        if !set && !is_reasoning_model(model) {
            return None;
        }
        Some(Reasoning {
            effort: self.effort,
            summary: Some(self.summary.unwrap_or(ReasoningSummary::Auto)),
        })
    }
}

/// OpenAI's reasoning model families (`o1`, `o3`, `o4-mini`, `gpt-5*`, the Codex models).
pub fn is_reasoning_model(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model);
    ["o1", "o3", "o4", "gpt-5"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
        || name.contains("codex")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasoning_models_get_a_summary_by_default_and_others_nothing_unless_asked() {
        let none = Reasoning::default();
        assert_eq!(
            none.for_model("gpt-5.1-codex"),
            Some(Reasoning {
                effort: None,
                summary: Some(ReasoningSummary::Auto)
            })
        );
        assert_eq!(none.for_model("gpt-4.1"), None);
        let low = Reasoning {
            effort: Some(ReasoningEffort::Low),
            summary: None,
        };
        assert!(low.for_model("gpt-4.1").is_some());
        assert_eq!(
            ReasoningEffort::parse("xhigh"),
            Some(ReasoningEffort::Xhigh)
        );
        assert_eq!(ReasoningEffort::parse("max"), None);
    }
}
