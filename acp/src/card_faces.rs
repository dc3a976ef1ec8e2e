//! What each tool card of a session shows (title, kind, locations, raw input, status), so that
//! a later update about the card can restate it. Clients that draw every `tool_call_update`
//! as a line of its own (CodeCompanion, the TypeScript example client) would otherwise show
//! an untitled line for a label, and a rejected call as `WriteFile` with no input.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};

use serde_json::Value;

/// Cards remembered per session; the oldest are forgotten first (a label comes right after
/// its batch, so only the recent cards are ever restated).
const CAPACITY: usize = 512;

/// One card as the client last saw it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Face {
    pub(crate) title: String,
    /// The ACP kind, as its JSON spelling.
    pub(crate) kind: Value,
    pub(crate) locations: Value,
    pub(crate) raw_input: Value,
    /// The ACP status, as its JSON spelling.
    pub(crate) status: Value,
}

/// The session's cards by call id.
#[derive(Debug, Default)]
pub(crate) struct CardFaces(Mutex<Faces>);

#[derive(Debug, Default)]
struct Faces {
    by_id: HashMap<String, Face>,
    /// Ids, oldest first, for forgetting.
    order: VecDeque<String>,
}

impl CardFaces {
    fn faces(&self) -> MutexGuard<'_, Faces> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The card `id` now shows `face`.
    pub(crate) fn show(&self, id: &str, face: Face) {
        let mut faces = self.faces();
        if faces.by_id.insert(id.to_owned(), face).is_none() {
            faces.order.push_back(id.to_owned());
            while faces.order.len() > CAPACITY {
                if let Some(old) = faces.order.pop_front() {
                    faces.by_id.remove(&old);
                }
            }
        }
    }

    /// Changes what card `id` shows, if it is known.
    pub(crate) fn update(&self, id: &str, change: impl FnOnce(&mut Face)) {
        if let Some(face) = self.faces().by_id.get_mut(id) {
            change(face);
        }
    }

    /// What card `id` shows, if it is known.
    pub(crate) fn get(&self, id: &str) -> Option<Face> {
        self.faces().by_id.get(id).cloned()
    }

    /// The card is gone from the client (a discarded preparation).
    pub(crate) fn forget(&self, id: &str) -> Option<Face> {
        let mut faces = self.faces();
        let face = faces.by_id.remove(id);
        if face.is_some() {
            faces.order.retain(|known| known != id);
        }
        face
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    fn face(title: &str) -> Face {
        Face {
            title: title.into(),
            kind: json!("read"),
            locations: json!([]),
            raw_input: json!({}),
            status: json!("pending"),
        }
    }

    #[test]
    fn the_oldest_cards_are_forgotten_past_the_capacity() {
        let faces = CardFaces::default();
        for i in 0..=CAPACITY {
            faces.show(&format!("c{i}"), face(&format!("Read {i}")));
        }
        assert_eq!(faces.get("c0"), None);
        assert_eq!(
            faces.get(&format!("c{CAPACITY}")),
            Some(face(&format!("Read {CAPACITY}")))
        );
        faces.update("c1", |f| f.status = json!("completed"));
        assert_eq!(
            faces.forget("c1").map(|f| f.status),
            Some(json!("completed"))
        );
        assert_eq!(faces.get("c1"), None);
    }
}
