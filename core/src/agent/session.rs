//! The session actor: owns the history, routes operations, runs one task at a time.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use corvid_protocol::{ApprovalDecision, ApprovalMode, CoreEvent, Message, Op};
use tokio::sync::{mpsc, oneshot};
use tokio::task::{JoinError, JoinHandle};
use tokio_util::sync::CancellationToken;

use super::ids::ids_in_history;
use super::{AgentConfig, HistoryObserver};
use crate::retry::RetryPolicy;
use crate::summary::SummaryConfig;

/// Locks a mutex whose data stays consistent even if a holder panicked (every critical
/// section here is a single insert, remove or assignment).
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The settings of a session that never change while it runs.
pub(super) struct Static {
    pub provider: Arc<dyn corvid_providers::Provider>,
    pub fallback_model: Option<String>,
    pub max_output_tokens: Option<u32>,
    pub system_prompt: String,
    pub cwd: PathBuf,
    pub tools: corvid_tools::ToolRegistry,
    pub fs: Arc<dyn corvid_tools::FileSystem>,
    pub retry: RetryPolicy,
    pub shell_timeout: Duration,
    pub summaries: Option<SummaryConfig>,
    /// Permission rules, protected paths and the other policies of the session.
    pub policy: crate::policy::SessionPolicy,
}

/// What operations change while a task runs.
pub(super) struct Shared {
    pub approval_mode: Mutex<ApprovalMode>,
    pub model: Mutex<String>,
    /// Approvals waiting for the user, by call id.
    approvals: Mutex<PendingApprovals>,
    /// "Always" answers, each scoped to a command prefix, a file or a tool.
    pub remembered: Mutex<crate::policy::scope::Remembered>,
    /// Sequence number of the latest completed batch (stale summaries are dropped); held
    /// while a batch completion or a summary is announced so the two never cross.
    pub latest_batch: Mutex<u64>,
    /// Reads whose results are in the history (repeats become short notes).
    pub reads: Mutex<crate::context::read_cache::ReadCache>,
}

#[derive(Default)]
struct PendingApprovals {
    waiting: HashMap<String, oneshot::Sender<ApprovalDecision>>,
    /// Nobody can answer any more: every new request resolves as cancelled.
    closed: bool,
}

impl Shared {
    /// Registers an approval request; the receiver gets the user's answer.
    pub(super) fn wait_for_approval(&self, call_id: &str) -> oneshot::Receiver<ApprovalDecision> {
        let (tx, rx) = oneshot::channel();
        let mut approvals = lock(&self.approvals);
        if approvals.closed {
            let _ = tx.send(ApprovalDecision::Cancelled);
        } else {
            approvals.waiting.insert(call_id.to_owned(), tx);
        }
        rx
    }

    /// Forgets an approval request that was resolved some other way (cancellation).
    pub(super) fn forget_approval(&self, call_id: &str) {
        lock(&self.approvals).waiting.remove(call_id);
    }

    fn answer(&self, call_id: &str, decision: ApprovalDecision) -> bool {
        match lock(&self.approvals).waiting.remove(call_id) {
            Some(tx) => tx.send(decision).is_ok(),
            None => false,
        }
    }

    fn close_approvals(&self) {
        let mut approvals = lock(&self.approvals);
        approvals.closed = true;
        for (_, tx) in approvals.waiting.drain() {
            let _ = tx.send(ApprovalDecision::Cancelled);
        }
    }
}

/// The core-event sender; a front end that stopped listening does not stop the agent.
/// The observer (session recording) sees every event first, so nothing a front end misses
/// (a summary arriving after the prompt's answer) goes unrecorded.
#[derive(Clone)]
pub(super) struct Emitter {
    tx: mpsc::UnboundedSender<CoreEvent>,
    observer: Option<Arc<dyn HistoryObserver>>,
}

impl Emitter {
    pub(super) fn new(
        tx: mpsc::UnboundedSender<CoreEvent>,
        observer: Option<Arc<dyn HistoryObserver>>,
    ) -> Self {
        Self { tx, observer }
    }

    pub(super) fn emit(&self, event: CoreEvent) {
        let notice = self
            .observer
            .as_ref()
            .and_then(|observer| observer.event_emitted(&event));
        if self.tx.send(event).is_err() {
            tracing::trace!("core event dropped: no receiver");
        }
        self.notice(notice);
    }

    /// Tells the observer about an appended message (and the user about its notice, if any).
    fn message_appended(&self, message: &Message) {
        let notice = self
            .observer
            .as_ref()
            .and_then(|observer| observer.message_appended(message));
        self.notice(notice);
    }

    fn notice(&self, notice: Option<String>) {
        if let Some(message) = notice {
            self.emit(CoreEvent::Warning { message });
        }
    }
}

/// The history of a session and the call ids it already uses.
#[derive(Clone)]
pub(super) struct SessionState {
    pub history: Vec<Message>,
    pub used_ids: HashSet<String>,
    /// Where appended messages are announced to the observer (session recording).
    recording: Emitter,
}

impl SessionState {
    /// Appends a message to the history and tells the observer (session recording).
    pub(super) fn append(&mut self, message: Message) {
        self.recording.message_appended(&message);
        self.history.push(message);
    }
}

/// Everything a running task needs.
#[derive(Clone)]
pub(super) struct TaskCtx {
    pub stat: Arc<Static>,
    pub shared: Arc<Shared>,
    pub events: Emitter,
    pub cancel: CancellationToken,
    pub task_id: String,
}

struct Running {
    handle: JoinHandle<SessionState>,
    cancel: CancellationToken,
    task_id: String,
}

async fn finished(running: &mut Option<Running>) -> Result<SessionState, JoinError> {
    match running {
        Some(r) => (&mut r.handle).await,
        None => std::future::pending().await,
    }
}

/// The actor: runs until every operation sender is dropped and the running task finished.
pub(super) async fn run_session(
    config: AgentConfig,
    observer: Option<Arc<dyn HistoryObserver>>,
    mut ops: mpsc::UnboundedReceiver<Op>,
    events: mpsc::UnboundedSender<CoreEvent>,
) {
    let events = Emitter::new(events, observer);
    let session_id = config.session_id;
    let stat = Arc::new(Static {
        provider: config.provider,
        fallback_model: config.fallback_model,
        max_output_tokens: config.max_output_tokens,
        system_prompt: config.system_prompt,
        cwd: config.cwd,
        tools: config.tools,
        fs: config.fs,
        retry: config.retry,
        shell_timeout: config.shell_timeout,
        summaries: config.summaries,
        policy: config.policy,
    });
    let shared = Arc::new(Shared {
        approval_mode: Mutex::new(config.approval_mode),
        model: Mutex::new(config.model),
        approvals: Mutex::new(PendingApprovals::default()),
        remembered: Mutex::new(Default::default()),
        latest_batch: Mutex::new(0),
        reads: Mutex::default(),
    });
    let mut state = SessionState {
        used_ids: ids_in_history(&config.history),
        history: config.history,
        recording: events.clone(),
    };
    let mut running: Option<Running> = None;
    let mut tasks = 0u64;
    loop {
        tokio::select! {
            op = ops.recv() => {
                let Some(op) = op else { break };
                match op {
                    op @ (Op::UserTurn { .. } | Op::UserShell { .. }) => {
                        if running.is_some() {
                            events.emit(CoreEvent::Warning {
                                message: "a task is already running; wait for it to finish or cancel it first".into(),
                            });
                            continue;
                        }
                        tasks += 1;
                        let cancel = CancellationToken::new();
                        let ctx = TaskCtx {
                            stat: stat.clone(),
                            shared: shared.clone(),
                            events: events.clone(),
                            cancel: cancel.clone(),
                            task_id: format!("{session_id}-{tasks}"),
                        };
                        let task_id = ctx.task_id.clone();
                        let handle = tokio::spawn(super::user_shell::run_job(ctx, state.clone(), op));
                        running = Some(Running { handle, cancel, task_id });
                    }
                    Op::Cancel => {
                        if let Some(r) = &running {
                            r.cancel.cancel();
                        }
                    }
                    Op::Approval { call_id, decision } => {
                        if !shared.answer(&call_id, decision) {
                            tracing::debug!(%call_id, "approval for a call that is not waiting; ignored");
                        }
                    }
                    Op::SetApprovalMode { mode } => {
                        let before = std::mem::replace(&mut *lock(&shared.approval_mode), mode);
                        if before != mode {
                            events.emit(CoreEvent::ApprovalModeChanged { mode });
                        }
                    }
                    Op::SetModel { model } => {
                        let from = std::mem::replace(&mut *lock(&shared.model), model.clone());
                        if from != model {
                            events.emit(CoreEvent::ModelChanged { from, to: model });
                        }
                    }
                    Op::ClearHistory => {
                        if running.is_some() {
                            events.emit(CoreEvent::Warning {
                                message: "a task is running; the history is cleared only between tasks".into(),
                            });
                        } else {
                            // Call ids stay reserved: a later call must not reuse one.
                            state.history.clear();
                            lock(&shared.reads).clear();
                            events.emit(CoreEvent::HistoryCleared);
                        }
                    }
                }
            }
            joined = finished(&mut running) => {
                if let Some(r) = running.take() {
                    match joined {
                        Ok(after) => state = after,
                        Err(err) => {
                            // The history is back at the task's start, without its reads.
                            lock(&shared.reads).clear();
                            abnormal_end(&events, &r.task_id, &err);
                        }
                    }
                }
            }
        }
    }
    shared.close_approvals();
    if let Some(r) = running.take()
        && let Err(err) = r.handle.await
    {
        abnormal_end(&events, &r.task_id, &err);
    }
}

/// A task that panicked still ends visibly; the history stays as it was before the task.
fn abnormal_end(events: &Emitter, task_id: &str, err: &JoinError) {
    tracing::error!(%err, "the task ended abnormally; history restored to its start");
    events.emit(CoreEvent::TaskFinished {
        task_id: task_id.to_owned(),
        stop_reason: corvid_protocol::StopReason::Error,
        error: Some(corvid_protocol::ErrorInfo::new(
            corvid_protocol::ErrorKind::Server,
            format!("internal error: the task ended abnormally ({err})"),
        )),
        pending_summaries: 0,
    });
}
