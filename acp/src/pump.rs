//! The pump: turns one agent's events into frames, in order, for as long as the agent lives.
//!
//! It outlives each prompt on purpose: tool-use summaries may arrive after the prompt's
//! response (SPEC §7.2), and they still reach the client.
//!
//! Two callers move it along, one at a time under its lock. The agent's [`EventHook`] runs it
//! in the task that emitted a card, a permission request or a task's end, so that frame is
//! written at once; with 100 sessions busy on two cores, waking a task of its own to do that
//! cost 6 ms at the median (issue 16). Its own task takes bursts of text, waits for room when
//! the client reads slowly, and notices the agent's end.
//!
//! [`EventHook`]: corvid_core::agent::EventHook

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ConfigOptionUpdate, PromptResponse, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SessionNotification, SessionUpdate,
};
use agent_client_protocol::{Client, Error, ErrorCode};
use corvid_core::agent::{AgentClosed, EventReceiver};
use corvid_protocol::{
    ApprovalDecision, ApprovalMode, CoreEvent, ErrorInfo, ErrorKind, MAIN_PROMPT_ID, Op, StopReason,
};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::coalesce::{ChunkKind, Coalescer, Item};
use crate::mapping::{self, Frame, Mapper, PermissionAsk, SESSION_UPDATE_METHOD};
use crate::output::{Output, SendError};
use crate::session::{AGENT_GONE, Session, State, lock, refuse};

/// Items a session may queue for a slow client before it stops reading its agent's events
/// (text coalesces into the last item, so a text-only answer needs one).
const QUEUE_CAPACITY: usize = 64;
/// Events the pump takes in one go, when they are already waiting, before it sends.
const EVENTS_PER_WAKEUP: usize = 1024;

/// Reads one agent's events until it closes and sends what they become, in order, through
/// a bounded queue in which text coalesces while the client reads slower than the model
/// writes (see [`crate::coalesce`]).
pub(crate) struct Pump {
    events: EventReceiver,
    /// The agent ended: no event will come any more.
    agent_closed: bool,
    /// Weak, so that dropping the session (connection gone) drops the last `OpSender` and
    /// lets the agent end, which in turn ends this pump.
    session: Weak<Session>,
    state: Arc<Mutex<State>>,
    mapper: Mapper,
    cx: ConnectionTo<Client>,
    output: Output,
    queue: Coalescer<Outgoing>,
    /// Items of the last event that did not fit the full queue; no event is read until they
    /// are queued.
    held: VecDeque<Item<Outgoing>>,
}

/// What the pump sends besides text, in the order the events came.
enum Outgoing {
    /// A notification frame, written straight to the output.
    Frame(Frame),
    /// A typed `session/update`, written straight to the output.
    Update(Box<SessionNotification>),
    /// The `in_progress` card of this call is out: its client terminal may be shown on it.
    CardOut(String),
    /// Asks the client about a call whose card is out.
    Ask {
        request: Box<RequestPermissionRequest>,
        call_id: String,
    },
    /// Asks the client the questions of an `ask_user` call whose card is out.
    Question {
        call_id: String,
        questions: Vec<corvid_protocol::Question>,
    },
    /// The task ended: answer the prompt, after everything it sent.
    Finish {
        stop_reason: StopReason,
        error: Option<ErrorInfo>,
    },
    /// The agent ended: refuse a prompt still waiting.
    AgentGone,
}

/// The client connection is gone; the pump stops.
struct Disconnected;

impl Pump {
    /// Starts pumping `events` to the client through `output`, from the agent's hook and from
    /// a task of its own.
    pub(crate) fn start(
        events: EventReceiver,
        session: Weak<Session>,
        state: Arc<Mutex<State>>,
        mapper: Mapper,
        cx: ConnectionTo<Client>,
        output: Output,
    ) {
        let pump = Arc::new(Mutex::new(Pump {
            events,
            agent_closed: false,
            session,
            state,
            mapper,
            cx,
            output: output.clone(),
            queue: Coalescer::new(QUEUE_CAPACITY),
            held: VecDeque::new(),
        }));
        // Tells the task to look again at what it waits for: the hook may have left frames
        // waiting for room, which the task then has to wait for instead of the next event.
        let rethink = Arc::new(Notify::new());
        let (hooked, told) = (Arc::downgrade(&pump), rethink.clone());
        lock_pump(&pump).events.set_hook(Arc::new(move || {
            // Busy (its task or another emitter is at it) or outside the runtime (the reply
            // to a permission request spawns): the pump's task, woken by the event, takes it.
            if tokio::runtime::Handle::try_current().is_err() {
                return;
            }
            let Some(pump) = hooked.upgrade() else {
                return;
            };
            let Ok(mut pump) = pump.try_lock() else {
                return;
            };
            if !matches!(pump.advance(), Progress::Waiting { room: false, .. }) {
                told.notify_one();
            }
        }));
        tokio::spawn(run(pump, rethink, output));
    }

    /// Does everything that needs no waiting: queues what was held, sends what fits, and takes
    /// the events already waiting (a burst at a time, so text coalesces before it is sent).
    fn advance(&mut self) -> Progress {
        loop {
            while let Some(item) = self.held.pop_front() {
                if let Err(back) = self.queue.offer(item) {
                    self.held.push_front(back);
                    break;
                }
            }
            if self.send_queued().is_err() {
                tracing::debug!("client connection closed; stopping the session pump");
                return Progress::Done;
            }
            if self.agent_closed && self.queue.is_empty() && self.held.is_empty() {
                return Progress::Done;
            }
            let mut took = 0;
            while took < EVENTS_PER_WAKEUP && self.held.is_empty() && !self.agent_closed {
                let Some(event) = self.events.try_next_event() else {
                    break;
                };
                self.agent_closed = !self.take(event);
                took += 1;
            }
            // Held items that did not fit a full queue move up once it was sent; only when it
            // could not be sent (the output is full) is there nothing to do but wait for room.
            let held_can_move = self.queue.is_empty() && !self.held.is_empty();
            if took == 0 && !held_can_move {
                return Progress::Waiting {
                    room: !self.queue.is_empty(),
                    events: self.held.is_empty() && !self.agent_closed,
                };
            }
        }
    }

    /// Queues what an event becomes; false once the agent has ended.
    fn take(&mut self, event: Result<CoreEvent, AgentClosed>) -> bool {
        match event {
            Ok(event) => {
                self.handle(event);
                true
            }
            Err(AgentClosed) => {
                self.enqueue_action(Outgoing::AgentGone);
                false
            }
        }
    }

    /// Sends queued items until the queue is empty or the output is full.
    fn send_queued(&mut self) -> Result<(), Disconnected> {
        while let Some(item) = self.queue.pop() {
            let sent = match &item {
                Item::Chunk { kind, text } => {
                    let text = text.clone();
                    let event = match kind {
                        ChunkKind::Text => CoreEvent::TextDelta { text },
                        ChunkKind::Thought => CoreEvent::ThoughtDelta { text },
                    };
                    self.mapper
                        .frames(&event)
                        .iter()
                        .try_for_each(|frame| self.output.try_send(frame.method, &frame.params))
                }
                Item::Other(Outgoing::Frame(frame)) => {
                    self.output.try_send(frame.method, &frame.params)
                }
                Item::Other(Outgoing::Update(update)) => {
                    self.output.try_send(SESSION_UPDATE_METHOD, update)
                }
                Item::Other(_) => Ok(()),
            };
            match sent {
                Ok(()) => {}
                Err(SendError::Full) => {
                    self.queue.unpop(item);
                    return Ok(());
                }
                Err(SendError::Closed(_)) => return Err(Disconnected),
            }
            if let Item::Other(action) = item {
                self.act(action);
            }
        }
        Ok(())
    }

    /// Does what an item stands for once everything before it is out.
    fn act(&mut self, action: Outgoing) {
        match action {
            Outgoing::Frame(_) | Outgoing::Update(_) => {}
            Outgoing::CardOut(call_id) => {
                self.mapper
                    .terminals()
                    .forwarded(&call_id, &self.cx, self.mapper.session_id());
            }
            Outgoing::Ask { request, call_id } => self.ask_permission(*request, call_id),
            Outgoing::Question { call_id, questions } => self.ask_questions(call_id, questions),
            Outgoing::Finish { stop_reason, error } => self.finish(stop_reason, error),
            Outgoing::AgentGone => {
                if let Some(prompt) = lock(&self.state).prompt.take() {
                    prompt.done.cancel();
                    refuse(prompt.responder, ErrorCode::INTERNAL_ERROR, AGENT_GONE);
                }
            }
        }
    }

    /// Queues an action (or a frame) behind everything before it.
    fn enqueue_action(&mut self, action: Outgoing) {
        self.enqueue(Item::Other(action));
    }

    /// Queues an item behind everything before it; past the queue's bound it is held and no
    /// event is read until it fits.
    fn enqueue(&mut self, item: Item<Outgoing>) {
        if !self.held.is_empty() {
            self.held.push_back(item);
        } else if let Err(back) = self.queue.offer(item) {
            self.held.push_back(back);
        }
    }

    /// Queues the event's frames and actions and updates the session's state at once.
    fn handle(&mut self, event: CoreEvent) {
        lock(&self.state).stats.observe(&event);
        match event {
            CoreEvent::TextDelta { text } => {
                return self.enqueue(Item::Chunk {
                    kind: ChunkKind::Text,
                    text,
                });
            }
            CoreEvent::ThoughtDelta { text } => {
                return self.enqueue(Item::Chunk {
                    kind: ChunkKind::Thought,
                    text,
                });
            }
            _ => {}
        }
        for frame in self.mapper.frames(&event) {
            self.enqueue_action(Outgoing::Frame(frame));
        }
        // A subagent's approval is asked like the session's own, about the card the editor
        // shows for the child's call (`<task id>/<call id>`); the answer goes to the child's id.
        let (event, task_call) = match event {
            CoreEvent::Subagent {
                parent_call_id,
                event,
            } if matches!(*event, CoreEvent::PermissionRequested { .. }) => {
                (*event, Some(parent_call_id))
            }
            event => (event, None),
        };
        match event {
            CoreEvent::ToolStarted { call_id, .. } => {
                self.enqueue_action(Outgoing::CardOut(call_id))
            }
            CoreEvent::PermissionRequested {
                call_id,
                tool_name,
                args,
                display,
                preview,
                reason,
                always_scope,
                server,
            } => {
                // A child's card and its answer share one id (the core waits under it too).
                let shown_id = match &task_call {
                    Some(task) => corvid_protocol::subagent_call_id(task, &call_id),
                    None => call_id.clone(),
                };
                let request = self.mapper.permission_request(PermissionAsk {
                    call_id: &shown_id,
                    tool_name: &tool_name,
                    args: &args,
                    display: &display,
                    preview: &preview,
                    reason: reason.as_deref(),
                    always_scope: always_scope.as_deref(),
                    task_call: task_call.as_deref(),
                    server: server.as_deref(),
                });
                self.enqueue_action(Outgoing::Ask {
                    request: Box::new(request),
                    call_id: shown_id,
                });
            }
            CoreEvent::QuestionAsked { call_id, questions } => {
                self.enqueue_action(Outgoing::Question { call_id, questions });
            }
            CoreEvent::TurnStarted { model, .. } => lock(&self.state).model = model,
            CoreEvent::ApprovalModeChanged { mode } => self.mode_changed(mode),
            CoreEvent::Usage { prompt_id, usage } if prompt_id == MAIN_PROMPT_ID => {
                if let Some(prompt) = &mut lock(&self.state).prompt {
                    prompt.usage.add(&usage);
                }
            }
            CoreEvent::TaskFinished {
                stop_reason, error, ..
            } => self.enqueue_action(Outgoing::Finish { stop_reason, error }),
            // `/undo` and `/rewind` (crate::rewind) end here: what was done is the answer.
            CoreEvent::Rewound {
                turn,
                scope,
                report,
                error,
            } => {
                self.enqueue(Item::Chunk {
                    kind: ChunkKind::Text,
                    text: report.describe(turn, scope, error.as_deref()),
                });
                self.enqueue_action(Outgoing::Finish {
                    stop_reason: StopReason::EndTurn,
                    error: None,
                });
            }
            CoreEvent::AttemptRetried {
                attempt,
                max_attempts,
                delay_ms,
                error,
            } => tracing::info!(attempt, max_attempts, delay_ms, %error, "retrying model request"),
            CoreEvent::ModelFellBack { from, to, error } => {
                tracing::warn!(%from, %to, %error, "switched to the fallback model");
            }
            CoreEvent::Warning { message } => tracing::warn!(%message, "agent warning"),
            _ => {}
        }
    }

    /// A mode the agent switched itself (leaving plan mode) is told to the client both ways
    /// (`current_mode_update` and the `mode` config option); one the client set is already
    /// known there.
    fn mode_changed(&mut self, mode: ApprovalMode) {
        let options = {
            let mut state = lock(&self.state);
            if state.mode_echoes.front() == Some(&mode) {
                state.mode_echoes.pop_front();
                return;
            }
            if std::mem::replace(&mut state.mode, mode) == mode {
                return;
            }
            state.config_options()
        };
        let session_id = self.mapper.session_id().clone();
        let update = crate::plan_mode::mode_update(session_id.clone(), mode);
        self.enqueue_action(Outgoing::Update(Box::new(update)));
        let options = SessionNotification::new(
            session_id,
            SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(options)),
        );
        self.enqueue_action(Outgoing::Update(Box::new(options)));
    }

    /// Answers the prompt with the task's stop reason, or with an error if it failed.
    fn finish(&mut self, stop_reason: StopReason, error: Option<ErrorInfo>) {
        let Some(prompt) = lock(&self.state).prompt.take() else {
            return;
        };
        prompt.done.cancel();
        let sent = match mapping::stop_reason(stop_reason) {
            Some(reason) => prompt
                .responder
                .respond(PromptResponse::new(reason).meta(mapping::usage_meta(&prompt.usage))),
            None => prompt.responder.respond_with_error(task_error(error)),
        };
        if let Err(e) = sent {
            tracing::debug!(error = %e, "could not answer the prompt");
        }
    }

    /// Asks the client in the background; the pump keeps forwarding events meanwhile.
    fn ask_permission(&self, request: RequestPermissionRequest, call_id: String) {
        let cancel = match &lock(&self.state).prompt {
            Some(prompt) => prompt.cancel.clone(),
            None => CancellationToken::new(),
        };
        let cx = self.cx.clone();
        let session = self.session.clone();
        tokio::spawn(async move {
            let sent = cx.send_request(request);
            let answer = tokio::select! {
                // Dropping the pending request sends `$/cancel_request`; the core already
                // settles the call as part of the cancelled task.
                () = cancel.cancelled() => return,
                answer = sent.block_task() => decision(answer),
            };
            let Some(session) = session.upgrade() else {
                return;
            };
            match answer {
                // A closed agent is reported by the pump.
                Answer::Decided(decision) => {
                    let _ = session.ops.submit(Op::Approval { call_id, decision });
                }
                // The core settles the waiting call as part of the cancelled task, which then
                // answers the prompt `cancelled` without asking the model again.
                Answer::TurnCancelled => session.cancel(),
            }
        });
    }
}

impl Pump {
    /// Asks the client in the background (see [`crate::questions`]); the reply goes to the
    /// core, which cancels the task when the questions were dismissed.
    fn ask_questions(&self, call_id: String, questions: Vec<corvid_protocol::Question>) {
        let cancel = match &lock(&self.state).prompt {
            Some(prompt) => prompt.cancel.clone(),
            None => CancellationToken::new(),
        };
        let (cx, session) = (self.cx.clone(), self.session.clone());
        let (session_id, channel) = (
            self.mapper.session_id().clone(),
            self.mapper.question_channel(),
        );
        tokio::spawn(async move {
            let asked = crate::questions::ask(&cx, session_id, &call_id, &questions, channel);
            let reply = tokio::select! {
                // The core settles the call as part of the cancelled task.
                () = cancel.cancelled() => return,
                reply = asked => reply,
            };
            if let Some(session) = session.upgrade() {
                let _ = session.ops.submit(Op::AnswerQuestion { call_id, reply });
            }
        });
    }
}

/// What the client's answer to a permission request means.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    /// The user picked an option (or the request failed: the call is abandoned).
    Decided(ApprovalDecision),
    /// The `cancelled` outcome: per ACP the client cancelled the whole prompt turn.
    TurnCancelled,
}

/// The answer a permission response stands for; a failed request abandons the call.
fn decision(answer: Result<RequestPermissionResponse, Error>) -> Answer {
    match answer {
        Ok(response) => match response.outcome {
            RequestPermissionOutcome::Selected(selected) => {
                Answer::Decided(mapping::decision_for_option(&selected.option_id.0))
            }
            _ => Answer::TurnCancelled,
        },
        Err(e) => {
            tracing::warn!(error = %e, "permission request failed; treating it as cancelled");
            Answer::Decided(ApprovalDecision::Cancelled)
        }
    }
}

/// The JSON-RPC error for a task that failed after retries (SPEC §6).
fn task_error(error: Option<ErrorInfo>) -> Error {
    match error {
        Some(info) => {
            let code = if info.kind == ErrorKind::Auth {
                ErrorCode::AUTH_REQUIRED
            } else {
                ErrorCode::INTERNAL_ERROR
            };
            Error::new(code, format!("the model request failed: {info}"))
        }
        None => Error::new(ErrorCode::INTERNAL_ERROR, "the task failed"),
    }
}

/// Where the pump stands after [`Pump::advance`].
enum Progress {
    /// The agent ended and everything went out, or the client is gone.
    Done,
    /// What it waits for: room in the output, the next event.
    Waiting { room: bool, events: bool },
}

/// The pump's task: waits for what the pump waits for and moves it along, until it is done.
async fn run(pump: Arc<Mutex<Pump>>, rethink: Arc<Notify>, output: Output) {
    loop {
        let (room, events) = match lock_pump(&pump).advance() {
            Progress::Done => return,
            Progress::Waiting { room, events } => (room, events),
        };
        // The receiver is polled under the lock, which is never held while waiting.
        let next = std::future::poll_fn(|cx| lock_pump(&pump).events.poll_next_event(cx));
        tokio::select! {
            () = output.room(), if room => {}
            event = next, if events => {
                let mut pump = lock_pump(&pump);
                pump.agent_closed = !pump.take(event);
            }
            () = rethink.notified() => {}
        }
    }
}

/// Locks the pump; it stays consistent even if a holder panicked (every step leaves each item
/// either queued, held or sent).
fn lock_pump(pump: &Mutex<Pump>) -> MutexGuard<'_, Pump> {
    pump.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
