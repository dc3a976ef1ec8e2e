//! What the editor is shown about each running `task` call: its label (the description the
//! model gave it) and the steps its child took so far. The label names the child's approval
//! requests, so a user asked to allow a write knows which subagent wants it.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// One running task's card.
#[derive(Debug, Default)]
struct TaskCard {
    /// The task card's title (the `description` argument).
    label: String,
    /// Titles of the child's calls, oldest first.
    steps: Vec<String>,
}

/// The running tasks of one session, by the `task` call's id.
#[derive(Debug, Default)]
pub struct TaskCards(Mutex<HashMap<String, TaskCard>>);

impl TaskCards {
    fn cards(&self) -> MutexGuard<'_, HashMap<String, TaskCard>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A `task` call started under `label`; a card of an earlier task with the same id (a
    /// resumed session) is replaced.
    pub fn started(&self, task_call: &str, label: &str) {
        self.cards().insert(
            task_call.to_owned(),
            TaskCard {
                label: label.to_owned(),
                steps: Vec::new(),
            },
        );
    }

    /// The child of `task_call` started a call titled `title`: the card's step list, the latest
    /// step last.
    pub fn step(&self, task_call: &str, title: &str) -> String {
        let mut cards = self.cards();
        let card = cards.entry(task_call.to_owned()).or_default();
        card.steps.push(format!("↳ {title}"));
        card.steps.join("\n")
    }

    /// The title of a request about the child's call `title`: `<task label>: <title>`.
    pub fn child_title(&self, task_call: &str, title: &str) -> String {
        match self.cards().get(task_call) {
            Some(card) if !card.label.is_empty() => format!("{}: {title}", card.label),
            _ => format!("Task: {title}"),
        }
    }

    /// The call finished; forgets its card if it was a task.
    pub fn finished(&self, call_id: &str) {
        self.cards().remove(call_id);
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn a_childs_request_is_titled_with_its_tasks_label() {
        let cards = TaskCards::default();
        cards.started("t1", "Fix the parser");
        assert_eq!(
            cards.child_title("t1", "Write src/a.rs"),
            "Fix the parser: Write src/a.rs"
        );
        // An unknown task (its start was not seen) still says it is a subagent's request.
        assert_eq!(cards.child_title("t9", "Run ls"), "Task: Run ls");
    }

    #[test]
    fn steps_accumulate_until_the_task_finishes() {
        let cards = TaskCards::default();
        cards.started("t1", "Explore");
        cards.step("t1", "Read a.rs");
        assert_eq!(cards.step("t1", "Grep x"), "↳ Read a.rs\n↳ Grep x");
        cards.finished("t1");
        cards.started("t1", "Again");
        assert_eq!(cards.step("t1", "Read b.rs"), "↳ Read b.rs");
    }
}
