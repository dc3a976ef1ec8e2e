//! Prompts the user sends into a running task (`Op::Steer`): queued here by the session,
//! taken by the turn loop at the next tool boundary or just before the task would end.
//!
//! The queue has phases so that no prompt falls between a task deciding to end and the
//! session learning that it ended: a task closes the queue in the same step in which it finds
//! it empty, and a prompt offered after that starts the next task instead.

use std::sync::Mutex;

use corvid_protocol::{CoreEvent, Message, Part, Role};

use super::exec::emit_hook_notices;
use super::session::{SessionState, TaskCtx, lock};
use crate::hooks::Decision;

/// Where a task stands for steering prompts.
#[derive(Debug, Default)]
enum Phase {
    /// No task of the turn loop runs (none at all, or a `!command` or `/compress`).
    #[default]
    Idle,
    /// A task takes prompts at its next boundary; these wait for it.
    Open(Vec<String>),
    /// The task found nothing waiting and is ending: a prompt now goes to a new task.
    Closed,
}

/// What happened to an offered prompt.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Offer {
    /// The running task takes it at its next boundary.
    Queued,
    /// The running task is ending: the prompt is for the next task.
    TaskEnding(String),
    /// No task that takes prompts runs.
    NoTask(String),
}

/// The steering queue of one session (a subagent's stays idle: the user steers the parent).
#[derive(Debug, Default)]
pub(super) struct SteerQueue(Mutex<Phase>);

impl SteerQueue {
    /// A task of the turn loop starts: prompts are taken from now on.
    pub(super) fn open(&self) {
        *lock(&self.0) = Phase::Open(Vec::new());
    }

    /// The session took the ended task back; returns what a task that ended early (a hook
    /// blocked its prompt, it panicked) never took.
    pub(super) fn reset(&self) -> Vec<String> {
        match std::mem::take(&mut *lock(&self.0)) {
            Phase::Open(waiting) => waiting,
            Phase::Idle | Phase::Closed => Vec::new(),
        }
    }

    pub(super) fn offer(&self, prompt: String) -> Offer {
        match &mut *lock(&self.0) {
            Phase::Open(waiting) => {
                waiting.push(prompt);
                Offer::Queued
            }
            Phase::Closed => Offer::TaskEnding(prompt),
            Phase::Idle => Offer::NoTask(prompt),
        }
    }

    /// The prompts waiting now (at a tool boundary).
    pub(super) fn take(&self) -> Vec<String> {
        match &mut *lock(&self.0) {
            Phase::Open(waiting) => std::mem::take(waiting),
            Phase::Idle | Phase::Closed => Vec::new(),
        }
    }

    /// The prompts waiting now; with none, the queue closes in the same step (the task ends).
    pub(super) fn take_or_close(&self) -> Vec<String> {
        let mut phase = lock(&self.0);
        match &mut *phase {
            Phase::Open(waiting) if !waiting.is_empty() => std::mem::take(waiting),
            Phase::Open(_) => {
                *phase = Phase::Closed;
                Vec::new()
            }
            Phase::Idle | Phase::Closed => Vec::new(),
        }
    }

    /// Closes the queue at the task's end and returns what it never took (cancelled, failed).
    pub(super) fn close(&self) -> Vec<String> {
        let mut phase = lock(&self.0);
        match std::mem::replace(&mut *phase, Phase::Closed) {
            Phase::Open(waiting) => waiting,
            Phase::Idle => {
                *phase = Phase::Idle;
                Vec::new()
            }
            Phase::Closed => Vec::new(),
        }
    }
}

/// The warning naming prompts a task never read (none when every one was read).
pub(super) fn untaken_warning(untaken: &[String]) -> Option<CoreEvent> {
    (!untaken.is_empty()).then(|| CoreEvent::Warning {
        message: format!(
            "the task ended before it read what you sent into it; send it again as a prompt: {}",
            untaken.join(" / ")
        ),
    })
}

/// Adds the prompts sent into the task to its history as one user message, each after the
/// UserPromptSubmit hooks (a blocked one is left out, and the user told); whether any joined.
pub(super) async fn deliver(ctx: &TaskCtx, state: &mut SessionState, prompts: Vec<String>) -> bool {
    let mut parts = Vec::new();
    let mut joined = Vec::new();
    for prompt in prompts {
        let mut context = Vec::new();
        if let Some(hooks) = &ctx.stat.policy.hooks {
            let mode = *lock(&ctx.shared.approval_mode);
            let outcome = hooks.user_prompt_submit(&ctx.stat.cwd, mode, &prompt).await;
            emit_hook_notices(ctx, &outcome);
            if let Decision::Block(reason) = outcome.decision {
                ctx.events.emit(CoreEvent::Warning {
                    message: format!(
                        "a UserPromptSubmit hook blocked what you sent into the task: {reason}"
                    ),
                });
                continue;
            }
            context = outcome.context;
        }
        parts.push(Part::Text {
            text: prompt.clone(),
        });
        parts.extend(context.into_iter().map(|text| Part::Text { text }));
        joined.push(prompt);
    }
    if parts.is_empty() {
        return false;
    }
    state.append(Message {
        role: Role::User,
        parts,
    });
    for prompt in joined {
        ctx.events.emit(CoreEvent::Steered { prompt });
    }
    true
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::{Offer, SteerQueue};

    #[test]
    fn a_prompt_offered_to_an_open_queue_is_taken_once() {
        let q = SteerQueue::default();
        q.open();
        assert_eq!(q.offer("a".into()), Offer::Queued);
        assert_eq!(q.take(), vec!["a".to_string()]);
        assert_eq!(q.take(), Vec::<String>::new());
    }

    #[test]
    fn an_empty_queue_closes_when_taken_at_the_end_and_later_prompts_start_a_task() {
        let q = SteerQueue::default();
        q.open();
        assert_eq!(q.take_or_close(), Vec::<String>::new());
        assert_eq!(q.offer("b".into()), Offer::TaskEnding("b".into()));
        assert_eq!(q.reset(), Vec::<String>::new());
        assert_eq!(q.offer("c".into()), Offer::NoTask("c".into()));
    }

    #[test]
    fn closing_returns_the_prompts_never_taken() {
        let q = SteerQueue::default();
        q.open();
        q.offer("d".into());
        assert_eq!(q.close(), vec!["d".to_string()]);
        assert_eq!(q.offer("e".into()), Offer::TaskEnding("e".into()));
    }

    #[test]
    fn a_queue_reset_while_still_open_returns_what_was_never_taken() {
        let q = SteerQueue::default();
        q.open();
        q.offer("g".into());
        assert_eq!(q.reset(), vec!["g".to_string()]);
        assert_eq!(q.offer("h".into()), Offer::NoTask("h".into()));
    }

    #[test]
    fn an_idle_queue_stays_idle_when_a_subagent_loop_ends() {
        let q = SteerQueue::default();
        assert_eq!(q.take_or_close(), Vec::<String>::new());
        assert_eq!(q.close(), Vec::<String>::new());
        assert_eq!(q.offer("f".into()), Offer::NoTask("f".into()));
    }
}
