//! Call ids (SPEC §3.3): a provider id already used in the session is renamed `ID__dup_N`,
//! consistently for the preparing card and the complete call, so a card's id always equals
//! the id of the call that runs.

use std::collections::{HashMap, HashSet};

use corvid_protocol::{Message, Part};

/// The call ids of a history (calls and results alike).
pub(super) fn ids_in_history(history: &[Message]) -> HashSet<String> {
    let mut ids = HashSet::new();
    for message in history {
        for part in &message.parts {
            match part {
                Part::ToolCall(call) => {
                    ids.insert(call.call_id.clone());
                }
                Part::ToolResult(result) => {
                    ids.insert(result.call_id.clone());
                }
                Part::Hosted(block) => {
                    ids.insert(block.call_id.clone());
                }
                Part::Text { .. } | Part::Thought { .. } | Part::Image(_) => {}
            }
        }
    }
    ids
}

/// A fresh id for a call the provider sent without one.
pub(super) fn generated_call_id() -> String {
    format!("call_{}", uuid::Uuid::new_v4().simple())
}

/// The id mapping of one attempt: every provider id maps to one session-unique id.
pub(super) struct AttemptIds<'a> {
    used: &'a HashSet<String>,
    renamed: HashMap<String, String>,
    taken: HashSet<String>,
}

impl<'a> AttemptIds<'a> {
    /// A mapping for a new attempt of a session whose history uses `used`.
    pub(super) fn new(used: &'a HashSet<String>) -> Self {
        Self {
            used,
            renamed: HashMap::new(),
            taken: HashSet::new(),
        }
    }

    /// The session-unique id for `provider_id`; the same answer every time within the attempt.
    pub(super) fn resolve(&mut self, provider_id: &str) -> String {
        if let Some(id) = self.renamed.get(provider_id) {
            return id.clone();
        }
        let mut id = provider_id.to_owned();
        let mut n = 2u32;
        while self.is_taken(&id) {
            id = format!("{provider_id}__dup_{n}");
            n += 1;
        }
        self.taken.insert(id.clone());
        self.renamed.insert(provider_id.to_owned(), id.clone());
        id
    }

    /// A generated id, reserved so no later provider id can collide with it.
    pub(super) fn generate(&mut self) -> String {
        let mut id = generated_call_id();
        while self.is_taken(&id) {
            id = generated_call_id();
        }
        self.taken.insert(id.clone());
        id
    }

    fn is_taken(&self, id: &str) -> bool {
        self.used.contains(id) || self.taken.contains(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_used_in_history_are_renamed_with_increasing_suffixes() {
        let used: HashSet<String> = ["a", "a__dup_2"].into_iter().map(String::from).collect();
        let mut ids = AttemptIds::new(&used);
        assert_eq!(ids.resolve("a"), "a__dup_3");
        assert_eq!(ids.resolve("a"), "a__dup_3");
        assert_eq!(ids.resolve("b"), "b");
    }
}
