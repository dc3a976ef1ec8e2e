//! The events about the session itself rather than one prompt or call: `SessionStart`,
//! `PreCompact`, `Notification` and `SessionEnd`, each fired from one place of the session.

use std::path::Path;
use std::time::Duration;

use corvid_protocol::{ApprovalMode, CoreEvent};
use serde_json::Value;

use super::session::hook_events;
use super::{HookEvent, HookOutcome, HookPayload, SessionHooks};

/// How long `SessionEnd` handlers may run together (Claude Code's 1.5 s): the session is
/// closing, and a slow handler must not hold its exit up.
pub const SESSION_END_BUDGET: Duration = Duration::from_millis(1_500);

/// Why a `SessionStart` fires (its matcher and `source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartSource {
    Startup,
    Resume,
    Clear,
    Compact,
}

impl StartSource {
    fn as_str(self) -> &'static str {
        match self {
            Self::Startup => "startup",
            Self::Resume => "resume",
            Self::Clear => "clear",
            Self::Compact => "compact",
        }
    }
}

impl SessionHooks {
    /// `SessionStart` for `source`, run now; its `additionalContext` (or plain stdout) is
    /// returned in the outcome's `context`.
    pub async fn session_start(
        &self,
        cwd: &Path,
        mode: ApprovalMode,
        source: StartSource,
        model: &str,
    ) -> HookOutcome {
        let payload = HookPayload::new(HookEvent::SessionStart)
            .matching(source.as_str())
            .with("source", Value::from(source.as_str()))
            .with("model", Value::from(model));
        self.fire(cwd, mode, &payload, None).await
    }

    /// Starts `SessionStart` for `source` in the background and returns at once: its notices
    /// go to `emit`, and its context waits for the next prompt ([`Self::start_context`]),
    /// which waits for it even when sent at once.
    pub fn spawn_session_start(
        &self,
        cwd: &Path,
        mode: ApprovalMode,
        source: StartSource,
        model: &str,
        emit: impl Fn(CoreEvent) + Send + 'static,
    ) {
        // Taken before the spawn, so no prompt can take the context first.
        let Ok(mut waiting) = self.start_context.clone().try_lock_owned() else {
            // Another SessionStart is still running; both contexts would race.
            emit(CoreEvent::Warning {
                message: format!(
                    "hook: SessionStart ({}) skipped: the previous one is still running",
                    source.as_str()
                ),
            });
            return;
        };
        let (hooks, cwd, model) = (self.clone(), cwd.to_owned(), model.to_owned());
        tokio::spawn(async move {
            let outcome = hooks.session_start(&cwd, mode, source, &model).await;
            for event in hook_events(&outcome) {
                emit(event);
            }
            waiting.extend(outcome.context);
        });
    }

    /// The context the last `SessionStart` added, for the next prompt (once); waits while
    /// it still runs.
    pub async fn start_context(&self) -> Vec<String> {
        std::mem::take(&mut *self.start_context.lock().await)
    }

    /// `PreCompact` before the conversation is compacted: `manual` (`/compress`) or `auto`.
    pub async fn pre_compact(&self, cwd: &Path, mode: ApprovalMode, manual: bool) -> HookOutcome {
        let trigger = if manual { "manual" } else { "auto" };
        let payload = HookPayload::new(HookEvent::PreCompact)
            .matching(trigger)
            .with("trigger", Value::from(trigger))
            .with("custom_instructions", Value::from(""));
        self.fire(cwd, mode, &payload, None).await
    }

    /// `Notification` of `kind` (`permission_prompt`, `idle_prompt`) with `message`, in the
    /// background: a notification never waits for its handlers. Notices go to `emit`.
    pub fn spawn_notification(
        &self,
        cwd: &Path,
        mode: ApprovalMode,
        kind: &'static str,
        message: String,
        emit: impl Fn(CoreEvent) + Send + 'static,
    ) {
        let payload = HookPayload::new(HookEvent::Notification)
            .matching(kind)
            .with("message", Value::from(message))
            .with("notification_type", Value::from(kind));
        if self.hooks.matching(&payload).is_empty() {
            return;
        }
        let (hooks, cwd) = (self.clone(), cwd.to_owned());
        tokio::spawn(async move {
            let outcome = hooks.fire(&cwd, mode, &payload, None).await;
            for event in hook_events(&outcome) {
                emit(event);
            }
        });
    }

    /// `SessionEnd` with `reason` (`clear`, `prompt_input_exit`, `other`), every handler
    /// within [`SESSION_END_BUDGET`].
    pub async fn session_end(&self, cwd: &Path, mode: ApprovalMode, reason: &str) -> HookOutcome {
        let payload = HookPayload::new(HookEvent::SessionEnd).with("reason", Value::from(reason));
        self.fire(cwd, mode, &payload, Some(SESSION_END_BUDGET))
            .await
    }
}
