//! The session actor: owns the history, routes operations, runs one task at a time.

use std::collections::{HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use corvid_protocol::{
    ApprovalDecision, ApprovalMode, CoreEvent, FileDiff, MAIN_PROMPT_ID, Message, Messages, Op,
    ToolStatus, subagent_call_id,
};
use futures::FutureExt;
use tokio::sync::{mpsc, oneshot};
use tokio::task::{JoinError, JoinHandle};
use tokio_util::sync::CancellationToken;

use super::ids::ids_in_history;
use super::{AgentConfig, EventHook, HistoryObserver};
use crate::context::ContextMeter;
use crate::context::meter::message_bytes;
use crate::hooks::lifecycle::Lifecycle;
use crate::retry::RetryPolicy;
use crate::summary::SummaryConfig;

/// Locks a mutex whose data stays consistent even if a holder panicked (every critical
/// section here is a single insert, remove or assignment).
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The settings of a session that never change while it runs.
#[derive(Clone)]
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

/// What operations change while a task runs. A subagent has its own, sharing the parent's
/// approval mode, pending approvals and "always" answers (the user answers for both).
pub(super) struct Shared {
    pub approval_mode: Arc<Mutex<ApprovalMode>>,
    pub model: Mutex<String>,
    /// Approvals waiting for the user, by call id.
    approvals: Arc<Mutex<PendingApprovals>>,
    /// "Always" answers, each scoped to a command prefix, a file or a tool.
    pub remembered: Arc<Mutex<crate::policy::scope::Remembered>>,
    /// Sequence number of the latest completed batch (stale summaries are dropped); held
    /// while a batch completion or a summary is announced so the two never cross.
    pub latest_batch: Mutex<u64>,
    /// Reads whose results are in the history (repeats become short notes).
    pub reads: Mutex<crate::context::read_cache::ReadCache>,
    /// Batches of calls started so far: the `task` tool counts its children per batch (one
    /// model turn's calls).
    pub batches_started: std::sync::atomic::AtomicU64,
    /// Prompts the user sends into the running task (`Op::Steer`); a subagent's stays idle.
    pub steers: super::steer::SteerQueue,
    /// The `task` call a subagent runs for: its approvals wait under
    /// [`subagent_call_id`], the id front ends answer a child's request with.
    approval_scope: Option<String>,
    /// Rules a custom command's `allowed-tools` grants while its prompt runs (issue 29).
    pub prompt_grants: Mutex<crate::policy::rules::PermissionRules>,
    /// `ask_user` calls waiting for the user's answers (a subagent asks none).
    pub questions: super::questions::PendingQuestions,
}

#[derive(Default)]
struct PendingApprovals {
    waiting: HashMap<String, oneshot::Sender<ApprovalDecision>>,
    /// Nobody can answer any more: every new request resolves as cancelled.
    closed: bool,
}

impl Shared {
    fn new(approval_mode: ApprovalMode, model: String) -> Self {
        Self {
            approval_mode: Arc::new(Mutex::new(approval_mode)),
            model: Mutex::new(model),
            approvals: Arc::default(),
            remembered: Arc::default(),
            latest_batch: Mutex::new(0),
            reads: Mutex::default(),
            batches_started: Default::default(),
            steers: Default::default(),
            approval_scope: None,
            prompt_grants: Mutex::default(),
            questions: Default::default(),
        }
    }

    /// The state of a subagent running `model` for the `task` call `parent_call_id`: its own
    /// model, batches and read cache, the parent's approvals (under ids of its own).
    pub(super) fn for_child(&self, model: String, parent_call_id: &str) -> Self {
        Self {
            approval_mode: self.approval_mode.clone(),
            model: Mutex::new(model),
            approvals: self.approvals.clone(),
            remembered: self.remembered.clone(),
            latest_batch: Mutex::new(0),
            reads: Mutex::default(),
            batches_started: Default::default(),
            steers: Default::default(),
            approval_scope: Some(parent_call_id.to_owned()),
            prompt_grants: Mutex::default(),
            questions: Default::default(),
        }
    }

    /// The id an approval of `call_id` waits under.
    fn approval_key(&self, call_id: &str) -> String {
        match &self.approval_scope {
            Some(parent) => subagent_call_id(parent, call_id),
            None => call_id.to_owned(),
        }
    }

    /// Registers an approval request; the receiver gets the user's answer.
    pub(super) fn wait_for_approval(&self, call_id: &str) -> oneshot::Receiver<ApprovalDecision> {
        let (tx, rx) = oneshot::channel();
        let mut approvals = lock(&self.approvals);
        if approvals.closed {
            let _ = tx.send(ApprovalDecision::Cancelled);
        } else {
            approvals.waiting.insert(self.approval_key(call_id), tx);
        }
        rx
    }

    /// Forgets an approval request that was resolved some other way (cancellation).
    pub(super) fn forget_approval(&self, call_id: &str) {
        lock(&self.approvals)
            .waiting
            .remove(&self.approval_key(call_id));
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
    /// The front end's hook, called after each event but a delta is queued.
    hook: Arc<OnceLock<EventHook>>,
    observer: Option<Arc<dyn HistoryObserver>>,
    /// A task's emitter sets this before its `TaskFinished` goes out, so the session knows
    /// the task is done even before it handed its state back.
    task_done: Option<Arc<AtomicBool>>,
    /// Set for a subagent: the `task` call whose child emits here (its events go out tagged).
    parent_call: Option<String>,
    /// A subagent's file changes (the diffs of its completed calls), for its report.
    changes: Option<Arc<Mutex<Vec<FileDiff>>>>,
}

impl Emitter {
    pub(super) fn new(
        tx: mpsc::UnboundedSender<CoreEvent>,
        observer: Option<Arc<dyn HistoryObserver>>,
        hook: Arc<OnceLock<EventHook>>,
    ) -> Self {
        Self {
            tx,
            hook,
            observer,
            task_done: None,
            parent_call: None,
            changes: None,
        }
    }

    /// The emitter of one task, and the flag its `TaskFinished` sets.
    fn for_task(&self) -> (Self, Arc<AtomicBool>) {
        let done = Arc::new(AtomicBool::new(false));
        let emitter = Self {
            task_done: Some(done.clone()),
            ..self.clone()
        };
        (emitter, done)
    }

    /// The emitter of the subagent run by the `task` call `parent_call_id`, and where the
    /// diffs of its completed calls collect.
    pub(super) fn for_child(&self, parent_call_id: &str) -> (Self, Arc<Mutex<Vec<FileDiff>>>) {
        let changes = Arc::new(Mutex::new(Vec::new()));
        let emitter = Self {
            task_done: None,
            parent_call: Some(parent_call_id.to_owned()),
            changes: Some(changes.clone()),
            ..self.clone()
        };
        (emitter, changes)
    }

    pub(super) fn emit(&self, event: CoreEvent) {
        if let (Some(changes), CoreEvent::ToolFinished { status, output, .. }) =
            (&self.changes, &event)
            && *status == ToolStatus::Completed
        {
            lock(changes).extend(output.diffs.iter().cloned());
        }
        // Usage stays untagged so every front end adds it to the session's totals.
        let event = match (&self.parent_call, event) {
            (Some(parent), event) if !matches!(event, CoreEvent::Usage { .. }) => {
                CoreEvent::Subagent {
                    parent_call_id: parent.clone(),
                    event: Box::new(event),
                }
            }
            (_, event) => event,
        };
        if let (CoreEvent::TaskFinished { .. }, Some(done)) = (&event, &self.task_done) {
            done.store(true, Ordering::Release);
        }
        let notice = self
            .observer
            .as_ref()
            .and_then(|observer| observer.event_emitted(&event));
        let delta = matches!(
            event,
            CoreEvent::TextDelta { .. } | CoreEvent::ThoughtDelta { .. }
        );
        if self.tx.send(event).is_err() {
            tracing::trace!("core event dropped: no receiver");
        } else if !delta && let Some(hook) = self.hook.get() {
            hook();
        }
        self.notice(notice);
    }

    /// Tells the observer about an appended message (and the user about its notice, if any).
    fn message_appended(&self, message: &Message) {
        // A child's history is its own: the recording keeps it apart from the session's.
        let notice = self
            .observer
            .as_ref()
            .and_then(|observer| match &self.parent_call {
                Some(parent) => observer.subagent_message_appended(parent, message),
                None => observer.message_appended(message),
            });
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
    /// Shared with the requests built from it, so a request copies no message.
    pub history: Messages,
    pub used_ids: HashSet<String>,
    /// How many tokens the history makes, calibrated on the provider's counts.
    pub meter: ContextMeter,
    /// The bytes the history adds to a request, kept up to date on every change so sizing
    /// a request never walks the whole history.
    history_bytes: u64,
    /// Where appended messages are announced to the observer (session recording).
    recording: Emitter,
}

impl SessionState {
    /// Appends a message to the history and tells the observer (session recording).
    pub(super) fn append(&mut self, message: Message) {
        self.recording.message_appended(&message);
        self.history_bytes += message_bytes(&message);
        self.history.push(message);
    }

    /// Swaps in a compacted history (the `Compacted` event records it).
    pub(super) fn replace_history(&mut self, history: Messages) {
        self.history_bytes = history.iter().map(message_bytes).sum();
        self.history = history;
        self.meter.history_replaced();
    }

    /// The state for a task to work on, moved out of the session (which keeps an empty one
    /// until the task hands it back): copying a long history per task would make every
    /// turn cost more as the session grows.
    fn hand_over(&mut self) -> SessionState {
        SessionState {
            history: std::mem::take(&mut self.history),
            used_ids: std::mem::take(&mut self.used_ids),
            meter: self.meter,
            history_bytes: std::mem::take(&mut self.history_bytes),
            recording: self.recording.clone(),
        }
    }

    /// An empty history (a subagent's), its messages announced to `recording`.
    pub(super) fn fresh(recording: Emitter) -> Self {
        Self {
            history: Messages::default(),
            used_ids: HashSet::new(),
            meter: ContextMeter::default(),
            history_bytes: 0,
            recording,
        }
    }

    /// The bytes the history adds to a request.
    pub(super) fn history_bytes(&self) -> u64 {
        self.history_bytes
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
    /// Where the task's main-model usage is counted (`main`, or `subagent` for a child).
    pub usage_prompt_id: &'static str,
}

struct Running {
    handle: JoinHandle<TaskEnd>,
    cancel: CancellationToken,
    task_id: String,
    /// Set once the task sent its `TaskFinished`.
    done: Arc<AtomicBool>,
}

/// What a task hands back: the session state it worked on (moved to it, never copied) and
/// whether it panicked (its state then holds what it appended before).
struct TaskEnd {
    state: SessionState,
    panicked: bool,
}

/// Runs `op`'s task on `state`, catching a panic so the state comes back either way.
async fn run_caught(ctx: TaskCtx, mut state: SessionState, op: Op, span: tracing::Span) -> TaskEnd {
    let run = super::user_shell::run_job(ctx, &mut state, op, span);
    let panicked = AssertUnwindSafe(run).catch_unwind().await.is_err();
    TaskEnd { state, panicked }
}

/// Puts a finished task's state back into the session.
fn take_back(
    state: &mut SessionState,
    joined: Result<TaskEnd, JoinError>,
    events: &Emitter,
    task_id: &str,
    shared: &Shared,
) {
    if let Some(warning) = super::steer::untaken_warning(&shared.steers.reset()) {
        events.emit(warning);
    }
    match joined {
        Ok(end) => {
            *state = end.state;
            if end.panicked {
                abnormal_end(events, task_id, "it panicked");
            }
        }
        Err(err) => {
            // The task took the history with it: its reads are gone too.
            lock(&shared.reads).clear();
            abnormal_end(events, task_id, &err.to_string());
        }
    }
}

/// Takes back the state of a task that already said it finished: a front end may send the
/// next prompt the moment it sees `TaskFinished`, while the task is still returning. A task
/// still at work stays running.
async fn settle_finished(
    running: &mut Option<Running>,
    state: &mut SessionState,
    events: &Emitter,
    shared: &Shared,
) {
    let Some(r) = running.take_if(|r| r.done.load(Ordering::Acquire)) else {
        return;
    };
    take_back(state, r.handle.await, events, &r.task_id, shared);
}

async fn finished(running: &mut Option<Running>) -> Result<TaskEnd, JoinError> {
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
    hook: Arc<OnceLock<EventHook>>,
) {
    let events = Emitter::new(events, observer, hook);
    let session_id = config.session_id;
    let shared = Arc::new(Shared::new(config.approval_mode, config.model));
    let mut stat = Static {
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
    };
    if let crate::policy::Subagents::On {
        max_turns,
        time_limit,
        types,
    } = &stat.policy.subagents
    {
        let limits = super::subagent::Limits {
            turns: *max_turns,
            time: *time_limit,
            caps: stat.policy.subagent_caps,
        };
        let types = types.types.clone();
        stat.tools = super::subagent::with_task_tool(&stat, &shared, &events, limits, types);
    }
    let stat = Arc::new(stat);
    let lifecycle = stat.policy.hooks.as_ref().map(|hooks| {
        let out = events.clone();
        let (mode, model) = (shared.approval_mode.clone(), lock(&shared.model).clone());
        let resumed = !config.history.is_empty();
        let emit = Arc::new(move |e| out.emit(e));
        Lifecycle::start(
            (**hooks).clone(),
            stat.cwd.clone(),
            mode,
            resumed,
            &model,
            emit,
        )
    });
    let mut state = SessionState {
        used_ids: ids_in_history(&config.history),
        history_bytes: config.history.iter().map(message_bytes).sum(),
        history: config.history.into(),
        meter: ContextMeter::default(),
        recording: events.clone(),
    };
    let mut running: Option<Running> = None;
    let mut tasks = 0u64;
    loop {
        tokio::select! {
            // A task that has ended is taken back before the next operation, whenever both are
            // ready: a cancel queued as the task finished then finds no task (its summaries
            // still land), and a replayed schedule gives the same events (issue 33).
            biased;
            joined = finished(&mut running) => {
                if let Some(r) = running.take() {
                    take_back(&mut state, joined, &events, &r.task_id, &shared);
                }
                lifecycle.iter().for_each(Lifecycle::idle);
            }
            op = ops.recv() => {
                let Some(op) = op else { break };
                lifecycle.iter().for_each(Lifecycle::active);
                match op {
                    op @ (Op::UserTurn { .. } | Op::UserShell { .. } | Op::Compact | Op::Steer { .. }) => {
                        settle_finished(&mut running, &mut state, &events, &shared).await;
                        let op = match op {
                            Op::Steer { prompt } => match shared.steers.offer(prompt) {
                                super::steer::Offer::Queued => continue,
                                // The task already found nothing waiting and is returning:
                                // the prompt starts the next one.
                                super::steer::Offer::TaskEnding(prompt) => {
                                    if let Some(r) = running.take() {
                                        take_back(&mut state, r.handle.await, &events, &r.task_id, &shared);
                                    }
                                    Op::user_turn(prompt)
                                }
                                super::steer::Offer::NoTask(prompt) => Op::user_turn(prompt),
                            },
                            op => op,
                        };
                        if running.is_some() {
                            events.emit(CoreEvent::Warning {
                                message: "a task is already running; wait for it to finish or cancel it first".into(),
                            });
                            continue;
                        }
                        tasks += 1;
                        let cancel = CancellationToken::new();
                        let (task_events, done) = events.for_task();
                        let ctx = TaskCtx {
                            stat: stat.clone(),
                            shared: shared.clone(),
                            events: task_events,
                            cancel: cancel.clone(),
                            task_id: format!("{session_id}-{tasks}"),
                            usage_prompt_id: MAIN_PROMPT_ID,
                        };
                        let task_id = ctx.task_id.clone();
                        if matches!(op, Op::UserTurn { .. }) {
                            shared.steers.open();
                        }
                        let span = crate::telemetry::task_span(&session_id, &task_id);
                        let handle = tokio::spawn(run_caught(ctx, state.hand_over(), op, span));
                        running = Some(Running { handle, cancel, task_id, done });
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
                    Op::AnswerQuestion { call_id, reply } => {
                        if !shared.questions.answer(&call_id, reply) {
                            tracing::debug!(%call_id, "answer for a question that is not waiting; ignored");
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
                    Op::SetReasoningEffort { effort } => {
                        let model = lock(&shared.model).clone();
                        if stat.provider.reasoning_efforts(&model).contains(&effort) {
                            let before = stat.provider.reasoning_effort();
                            stat.provider.set_reasoning_effort(effort);
                            if before != Some(effort) {
                                events.emit(CoreEvent::ReasoningEffortChanged { effort });
                            }
                        } else {
                            events.emit(CoreEvent::Warning {
                                message: format!(
                                    "{model} takes no reasoning effort through {}; the effort \
                                     stays as it was",
                                    stat.provider.name()
                                ),
                            });
                        }
                    }
                    Op::ClearHistory => {
                        settle_finished(&mut running, &mut state, &events, &shared).await;
                        if running.is_some() {
                            events.emit(CoreEvent::Warning {
                                message: "a task is running; the history is cleared only between tasks".into(),
                            });
                        } else {
                            // Call ids stay reserved: a later call must not reuse one.
                            state.replace_history(Messages::default());
                            lock(&shared.reads).clear();
                            events.emit(CoreEvent::HistoryCleared);
                            if let Some(lifecycle) = &lifecycle {
                                let model = lock(&shared.model).clone();
                                lifecycle.cleared(&model).await;
                            }
                        }
                    }
                    Op::Rewind { turn, scope, overwrite_conflicts } => {
                        settle_finished(&mut running, &mut state, &events, &shared).await;
                        if running.is_some() {
                            events.emit(CoreEvent::Warning {
                                message: "a task is running; rewind once it finished or after cancelling it".into(),
                            });
                        } else if super::rewind::rewind(&stat, &mut state, &events, turn, scope, overwrite_conflicts).await
                            && scope.conversation()
                        {
                            lock(&shared.reads).clear();
                        }
                    }
                }
            }
        }
    }
    shared.close_approvals();
    if let Some(r) = running.take() {
        take_back(&mut state, r.handle.await, &events, &r.task_id, &shared);
    }
    // Background processes end with their session.
    if let Some(background) = &stat.policy.shell.background {
        background.kill_all();
    }
    if let Some(lifecycle) = &lifecycle {
        lifecycle.end().await;
    }
}

/// A task that panicked still ends visibly; the history keeps what the task appended.
fn abnormal_end(events: &Emitter, task_id: &str, err: &str) {
    tracing::error!(%err, "the task ended abnormally");
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

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex, OnceLock};

    use corvid_protocol::CoreEvent;
    use pretty_assertions::assert_eq;
    use tokio::sync::mpsc;

    use super::{Emitter, EventHook};

    /// The hook runs after the event is queued, so it can take it at once, and deltas are
    /// left to the reader: only the warning's emit finds both events waiting.
    #[test]
    fn the_hook_runs_after_each_event_but_a_delta_with_the_event_already_queued() {
        let (tx, rx) = mpsc::unbounded_channel();
        let rx = Arc::new(Mutex::new(rx));
        let taken: Arc<Mutex<Vec<Vec<CoreEvent>>>> = Arc::default();
        let slot: Arc<OnceLock<EventHook>> = Arc::default();
        let (reader, seen) = (rx.clone(), taken.clone());
        let hook: EventHook = Arc::new(move || {
            let mut rx = reader.lock().unwrap();
            let mut now = Vec::new();
            while let Ok(event) = rx.try_recv() {
                now.push(event);
            }
            seen.lock().unwrap().push(now);
        });
        assert!(slot.set(hook).is_ok());
        let emitter = Emitter::new(tx, None, slot);

        let delta = CoreEvent::TextDelta { text: "a".into() };
        let warning = CoreEvent::Warning {
            message: "w".into(),
        };
        emitter.emit(delta.clone());
        emitter.emit(warning.clone());

        assert_eq!(*taken.lock().unwrap(), vec![vec![delta, warning]]);
    }
}
