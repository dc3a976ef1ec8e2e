//! One ACP session: the core agent's queue pair, the running prompt, and the task that
//! turns the agent's events into frames for as long as the agent lives.
//!
//! The pump outlives each prompt on purpose: tool-use summaries may arrive after the
//! prompt's response (SPEC §7.2), and they still reach the client.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    ConfigOptionUpdate, PromptResponse, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SessionConfigOption, SessionNotification, SessionUpdate,
    StopReason as AcpStopReason,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error, ErrorCode, UntypedMessage};
use corvid_core::agent::{AgentClosed, EventReceiver, OpSender};
use corvid_core::usage::UsageStats;
use corvid_protocol::{
    ApprovalDecision, ApprovalMode, CoreEvent, ErrorInfo, ErrorKind, MAIN_PROMPT_ID, Op,
    StopReason, Usage,
};
use corvid_providers::Provider;
use futures::FutureExt;
use tokio_util::sync::CancellationToken;

use crate::coalesce::{ChunkKind, Coalescer, Item};
use crate::commands::{self, Command, Reply};
use crate::mapping::{self, Frame, Mapper, PermissionAsk, SESSION_UPDATE_METHOD};
use crate::model_option;
use crate::output::{Output, SendError};

/// Items a session may queue for a slow client before it stops reading its agent's events
/// (text coalesces into the last item, so a text-only answer needs one).
const QUEUE_CAPACITY: usize = 64;
/// Events the pump takes in one go, when they are already waiting, before it sends.
const EVENTS_PER_WAKEUP: usize = 1024;

/// How long a provider may take to list its models before the picker goes without them.
const MODEL_LIST_TIMEOUT: Duration = Duration::from_secs(15);

/// A live session, shared by the request handlers.
pub(crate) struct Session {
    ops: OpSender,
    /// Asked once for the models it serves (`offer_provider_models`).
    provider: Arc<dyn Provider>,
    state: Arc<Mutex<State>>,
    /// Where command answers go, framed as the agent's own text.
    mapper: Mapper,
    cx: ConnectionTo<Client>,
}

/// What handlers and the pump both touch. Never held across an await.
struct State {
    mode: ApprovalMode,
    /// The main model later turns use (`/model` shows and switches it).
    model: String,
    /// The models the `model` config option offers: the configured ones plus every model
    /// chosen in this session.
    models: Vec<String>,
    /// Token usage per prompt id, turns and tool calls, for `/stats`.
    stats: UsageStats,
    prompt: Option<ActivePrompt>,
}

/// How a session starts: its mode and model, and the statistics of a replayed transcript.
pub(crate) struct Start {
    pub mode: ApprovalMode,
    pub model: String,
    /// Other models to offer (the configured fallback).
    pub other_models: Vec<String>,
    pub stats: UsageStats,
    /// The provider, asked for the models it serves.
    pub provider: Arc<dyn Provider>,
}

/// The prompt being answered: its responder, its cancellation, its usage so far.
struct ActivePrompt {
    responder: Responder<PromptResponse>,
    /// Tripped by `session/cancel`; abandons pending permission requests.
    cancel: CancellationToken,
    /// Tripped when the prompt was answered; ends its `$/cancel_request` watcher.
    done: CancellationToken,
    usage: Usage,
}

impl Session {
    /// Wraps a spawned agent and starts pumping its events to the client through `output`.
    pub(crate) fn start(
        ops: OpSender,
        events: EventReceiver,
        start: Start,
        mapper: Mapper,
        cx: ConnectionTo<Client>,
        output: Output,
    ) -> Arc<Self> {
        let mut models = vec![start.model.clone()];
        for model in start.other_models {
            if !models.contains(&model) {
                models.push(model);
            }
        }
        let state = Arc::new(Mutex::new(State {
            mode: start.mode,
            model: start.model,
            models,
            stats: start.stats,
            prompt: None,
        }));
        Arc::new_cyclic(|session| {
            let pump = Pump {
                events,
                session: session.clone(),
                state: state.clone(),
                mapper: mapper.clone(),
                cx: cx.clone(),
                output,
                queue: Coalescer::new(QUEUE_CAPACITY),
                held: VecDeque::new(),
            };
            tokio::spawn(pump.run());
            Self {
                ops,
                provider: start.provider,
                state,
                mapper,
                cx,
            }
        })
    }

    /// The current approval mode.
    pub(crate) fn mode(&self) -> ApprovalMode {
        lock(&self.state).mode
    }

    /// Starts a task for this prompt; the pump answers `responder` when the task ends.
    /// Returns a token tripped once the prompt was answered, or `None` when the prompt was
    /// refused (and already answered with an error).
    pub(crate) fn prompt(
        &self,
        input: crate::prompt::Prompt,
        responder: Responder<PromptResponse>,
    ) -> Option<CancellationToken> {
        let mut state = lock(&self.state);
        if state.prompt.is_some() {
            refuse(
                responder,
                ErrorCode::INVALID_REQUEST,
                "a prompt is already running in this session; wait for its answer or send \
                 session/cancel first",
            );
            return None;
        }
        let task = match commands::parse(&input.text) {
            Some(Command::Task(op)) => op,
            Some(Command::Reply(command)) => {
                self.run_command(&mut state, command, responder);
                return None;
            }
            None => Op::UserTurn {
                prompt: input.text,
                images: input.images,
                context: Vec::new(),
            },
        };
        if self.ops.submit(task).is_err() {
            refuse(responder, ErrorCode::INTERNAL_ERROR, AGENT_GONE);
            return None;
        }
        let done = CancellationToken::new();
        state.prompt = Some(ActivePrompt {
            responder,
            cancel: CancellationToken::new(),
            done: done.clone(),
            usage: Usage::default(),
        });
        Some(done)
    }

    /// Cancels the running prompt: pending permission requests are abandoned and the core
    /// ends the task (discarding prepared calls), which answers the prompt `cancelled`.
    pub(crate) fn cancel(&self) {
        if let Some(prompt) = &lock(&self.state).prompt {
            prompt.cancel.cancel();
        }
        // Nothing to cancel is fine; a closed agent is reported by the pump.
        let _ = self.ops.submit(Op::Cancel);
    }

    /// Runs a slash command at once; its answer is the agent's text, then `end_turn`.
    fn run_command(&self, state: &mut State, command: Reply, responder: Responder<PromptResponse>) {
        let reply = match command {
            Reply::Stats => state.stats.report(),
            Reply::Clear => match self.ops.submit(Op::ClearHistory) {
                Ok(()) => "History cleared: the next prompt starts a fresh conversation in \
                           this session."
                    .to_owned(),
                Err(_) => return refuse(responder, ErrorCode::INTERNAL_ERROR, AGENT_GONE),
            },
            Reply::Model(None) => format!("Model: {}", state.model),
            Reply::Model(Some(model)) => {
                if !self.switch_model_locked(state, &model) {
                    return refuse(responder, ErrorCode::INTERNAL_ERROR, AGENT_GONE);
                }
                // Keep the client's model selector in step with the command.
                self.send_model_options(state);
                format!("Model set to {model} for later turns")
            }
        };
        let sent = self
            .mapper
            .frames(&CoreEvent::TextDelta { text: reply })
            .into_iter()
            .try_for_each(|frame| {
                self.cx
                    .send_notification(UntypedMessage::new(frame.method, frame.params)?)
            })
            .and_then(|()| responder.respond(PromptResponse::new(AcpStopReason::EndTurn)));
        if let Err(e) = sent {
            tracing::debug!(error = %e, "could not answer the command");
        }
    }

    /// The session's config options (the model selector).
    pub(crate) fn config_options(&self) -> Vec<SessionConfigOption> {
        let state = lock(&self.state);
        model_option::options(&state.model, &state.models)
    }

    /// Fetches the provider's model list in the background and adds it to the `model`
    /// option's choices with a `config_option_update`. A server without a list (or slow to
    /// answer) leaves the choices as they are; the log says why.
    pub(crate) fn offer_provider_models(self: &Arc<Self>) {
        let session = Arc::downgrade(self);
        let listing = self.provider.list_models();
        tokio::spawn(async move {
            let models = match tokio::time::timeout(MODEL_LIST_TIMEOUT, listing).await {
                Ok(Ok(models)) => models,
                Ok(Err(e)) => {
                    tracing::debug!(error = %e, "the provider did not list its models");
                    return;
                }
                Err(_) => {
                    tracing::debug!("the provider's model list took too long; not offered");
                    return;
                }
            };
            if let Some(session) = session.upgrade() {
                session.add_models(models);
            }
        });
    }

    fn add_models(&self, listed: Vec<String>) {
        let mut state = lock(&self.state);
        let before = state.models.len();
        for model in listed {
            if !state.models.contains(&model) {
                state.models.push(model);
            }
        }
        if state.models.len() == before {
            return;
        }
        self.send_model_options(&state);
    }

    /// Tells the client the `model` option's current value and choices.
    fn send_model_options(&self, state: &State) {
        let update = SessionNotification::new(
            self.mapper.session_id().clone(),
            SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(model_option::options(
                &state.model,
                &state.models,
            ))),
        );
        if let Err(e) = self.cx.send_notification(update) {
            tracing::debug!(error = %e, "could not send the model options");
        }
    }

    /// Switches the main model for later turns; false when the agent is gone.
    pub(crate) fn switch_model(&self, model: &str) -> bool {
        self.switch_model_locked(&mut lock(&self.state), model)
    }

    fn switch_model_locked(&self, state: &mut State, model: &str) -> bool {
        let op = Op::SetModel {
            model: model.to_owned(),
        };
        if self.ops.submit(op).is_err() {
            return false;
        }
        state.model = model.to_owned();
        if !state.models.iter().any(|m| m == model) {
            state.models.push(model.to_owned());
        }
        true
    }

    /// Switches the approval mode for later calls.
    pub(crate) fn set_mode(&self, mode: ApprovalMode) -> bool {
        // Known before the agent can report it, so the pump never echoes the client's own
        // choice back as a `current_mode_update` (it raced the pump before).
        let before = std::mem::replace(&mut lock(&self.state).mode, mode);
        if self.ops.submit(Op::SetApprovalMode { mode }).is_err() {
            lock(&self.state).mode = before;
            return false;
        }
        true
    }
}

/// Reads one agent's events until it closes and sends what they become, in order, through
/// a bounded queue in which text coalesces while the client reads slower than the model
/// writes (see [`crate::coalesce`]).
struct Pump {
    events: EventReceiver,
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
    async fn run(mut self) {
        let mut agent_closed = false;
        loop {
            while let Some(item) = self.held.pop_front() {
                if let Err(back) = self.queue.offer(item) {
                    self.held.push_front(back);
                    break;
                }
            }
            if self.send_queued().is_err() {
                tracing::debug!("client connection closed; stopping the session pump");
                return;
            }
            if agent_closed && self.queue.is_empty() && self.held.is_empty() {
                return;
            }
            tokio::select! {
                () = self.output.room(), if !self.queue.is_empty() => {}
                event = self.events.next_event(), if self.held.is_empty() && !agent_closed => {
                    agent_closed = !self.take(event);
                    // Everything else already waiting is taken before anything is sent, so a
                    // burst of deltas becomes one frame and the agent's queue stays short.
                    for _ in 0..EVENTS_PER_WAKEUP {
                        if agent_closed || !self.held.is_empty() {
                            break;
                        }
                        match self.events.next_event().now_or_never() {
                            Some(event) => agent_closed = !self.take(event),
                            None => break,
                        }
                    }
                }
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

    /// A mode the agent switched itself (leaving plan mode) is told to the client; one the
    /// client set is already known there.
    fn mode_changed(&mut self, mode: ApprovalMode) {
        let known = std::mem::replace(&mut lock(&self.state).mode, mode) == mode;
        if known {
            return;
        }
        let update = crate::plan_mode::mode_update(self.mapper.session_id().clone(), mode);
        self.enqueue_action(Outgoing::Update(Box::new(update)));
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
            let decision = tokio::select! {
                // Dropping the pending request sends `$/cancel_request`; the core already
                // settles the call as part of the cancelled task.
                () = cancel.cancelled() => return,
                answer = sent.block_task() => decision(answer),
            };
            if let Some(session) = session.upgrade() {
                // A closed agent is reported by the pump.
                let _ = session.ops.submit(Op::Approval { call_id, decision });
            }
        });
    }
}

/// What to tell the client when the session's agent is no longer running.
pub(crate) const AGENT_GONE: &str = "the agent of this session stopped; start a new session";

/// Answers a prompt with an error; a client that went away needs no answer.
fn refuse(responder: Responder<PromptResponse>, code: ErrorCode, message: &str) {
    if let Err(e) = responder.respond_with_error(Error::new(code, message)) {
        tracing::debug!(error = %e, "could not answer the prompt");
    }
}

/// The decision a permission answer stands for; errors and `cancelled` abandon the call.
fn decision(answer: Result<RequestPermissionResponse, Error>) -> ApprovalDecision {
    match answer {
        Ok(response) => match response.outcome {
            RequestPermissionOutcome::Selected(selected) => {
                mapping::decision_for_option(&selected.option_id.0)
            }
            _ => ApprovalDecision::Cancelled,
        },
        Err(e) => {
            tracing::warn!(error = %e, "permission request failed; treating it as cancelled");
            ApprovalDecision::Cancelled
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

/// Locks the state; a panic while it was held cannot leave it inconsistent (every critical
/// section is a single field update), so a poisoned lock is used as is.
fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
