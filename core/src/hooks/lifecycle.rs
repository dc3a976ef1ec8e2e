//! The session's own hook events as the session actor sees them: it started (or was
//! resumed), the history was cleared, it sits idle waiting for the user, it ends. The actor
//! calls one method per moment; the events, their order and the idle timer live here.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use corvid_protocol::{ApprovalMode, CoreEvent};

use super::SessionHooks;
use super::session::hook_events;
use super::session_events::StartSource;

/// How long the session waits for the user after a task before `Notification`
/// (`idle_prompt`) fires (Claude Code's 60 seconds).
pub const IDLE_AFTER: Duration = Duration::from_secs(60);

/// Where hook notices go (the session's event stream).
pub type Emit = Arc<dyn Fn(CoreEvent) + Send + Sync>;

/// One session's lifecycle hooks.
pub struct Lifecycle {
    hooks: SessionHooks,
    cwd: PathBuf,
    mode: Arc<Mutex<ApprovalMode>>,
    emit: Emit,
    /// Bumped by everything the user does: an idle timer fires only if it is unchanged.
    activity: Arc<AtomicU64>,
    /// The running idle timer, stopped when the user acts or the session ends (it holds the
    /// event stream open while it waits).
    timer: Mutex<Option<tokio::task::AbortHandle>>,
}

impl Lifecycle {
    /// Fires `SessionStart` (`resume` when the session had a history, else `startup`) in the
    /// background; `mode` is the session's live approval mode.
    pub fn start(
        hooks: SessionHooks,
        cwd: PathBuf,
        mode: Arc<Mutex<ApprovalMode>>,
        resumed: bool,
        model: &str,
        emit: Emit,
    ) -> Self {
        let this = Self {
            hooks,
            cwd,
            mode,
            emit,
            activity: Arc::default(),
            timer: Mutex::default(),
        };
        let source = if resumed {
            StartSource::Resume
        } else {
            StartSource::Startup
        };
        this.spawn_start(source, model);
        this
    }

    fn mode(&self) -> ApprovalMode {
        *self.mode.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn spawn_start(&self, source: StartSource, model: &str) {
        let emit = self.emit.clone();
        self.hooks
            .spawn_session_start(&self.cwd, self.mode(), source, model, move |e| emit(e));
    }

    /// The user did something (any operation): a pending idle notification is dropped.
    pub fn active(&self) {
        self.activity.fetch_add(1, Ordering::AcqRel);
        self.stop_timer();
    }

    fn stop_timer(&self) {
        if let Some(timer) = self.timer.lock().unwrap_or_else(|p| p.into_inner()).take() {
            timer.abort();
        }
    }

    /// A task ended: unless the user acts within [`IDLE_AFTER`], `Notification`
    /// (`idle_prompt`) fires.
    pub fn idle(&self) {
        let seen = self.activity.fetch_add(1, Ordering::AcqRel) + 1;
        let (activity, hooks, cwd, mode, emit) = (
            self.activity.clone(),
            self.hooks.clone(),
            self.cwd.clone(),
            self.mode.clone(),
            self.emit.clone(),
        );
        let timer = tokio::spawn(async move {
            tokio::time::sleep(IDLE_AFTER).await;
            if activity.load(Ordering::Acquire) != seen {
                return;
            }
            let mode = *mode.lock().unwrap_or_else(|p| p.into_inner());
            let message = "corvid is waiting for your input".to_owned();
            hooks.spawn_notification(&cwd, mode, "idle_prompt", message, move |e| emit(e));
        });
        let old = self
            .timer
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replace(timer.abort_handle());
        if let Some(old) = old {
            old.abort();
        }
    }

    /// `/clear`: `SessionEnd` (`clear`), then `SessionStart` (`clear`) in the background.
    pub async fn cleared(&self, model: &str) {
        self.end_with("clear").await;
        self.spawn_start(StartSource::Clear, model);
    }

    /// The session ends (every front end let go of it): `SessionEnd` (`other`), within its
    /// short budget.
    pub async fn end(&self) {
        self.activity.fetch_add(1, Ordering::AcqRel);
        self.stop_timer();
        self.end_with("other").await;
    }

    async fn end_with(&self, reason: &str) {
        let outcome = self.hooks.session_end(&self.cwd, self.mode(), reason).await;
        for event in hook_events(&outcome) {
            (self.emit)(event);
        }
    }
}
