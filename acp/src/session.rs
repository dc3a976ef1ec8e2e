//! One ACP session: the core agent's queue pair, the running prompt, and the task that
//! turns the agent's events into frames for as long as the agent lives.
//!
//! The pump outlives each prompt on purpose: tool-use summaries may arrive after the
//! prompt's response (SPEC §7.2), and they still reach the client.

use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    ConfigOptionUpdate, PromptResponse, RequestPermissionOutcome, RequestPermissionResponse,
    SessionConfigOption, SessionNotification, SessionUpdate, StopReason as AcpStopReason,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error, ErrorCode, UntypedMessage};
use corvid_core::agent::{EventReceiver, OpSender};
use corvid_core::usage::UsageStats;
use corvid_protocol::{
    ApprovalDecision, ApprovalMode, CoreEvent, ErrorInfo, ErrorKind, MAIN_PROMPT_ID, Op,
    StopReason, Usage,
};
use corvid_providers::Provider;
use tokio_util::sync::CancellationToken;

use crate::commands::{self, Command};
use crate::mapping::{self, Mapper, PermissionAsk};
use crate::model_option;

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
    /// Wraps a spawned agent and starts pumping its events to the client.
    pub(crate) fn start(
        ops: OpSender,
        events: EventReceiver,
        start: Start,
        mapper: Mapper,
        cx: ConnectionTo<Client>,
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
        if let Some(command) = commands::parse(&input.text) {
            self.run_command(&mut state, command, responder);
            return None;
        }
        let turn = Op::UserTurn {
            prompt: input.text,
            images: input.images,
            context: Vec::new(),
        };
        if self.ops.submit(turn).is_err() {
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
    fn run_command(
        &self,
        state: &mut State,
        command: Command,
        responder: Responder<PromptResponse>,
    ) {
        let reply = match command {
            Command::Stats => state.stats.report(),
            Command::Clear => match self.ops.submit(Op::ClearHistory) {
                Ok(()) => "History cleared: the next prompt starts a fresh conversation in \
                           this session."
                    .to_owned(),
                Err(_) => return refuse(responder, ErrorCode::INTERNAL_ERROR, AGENT_GONE),
            },
            Command::Model(None) => format!("Model: {}", state.model),
            Command::Model(Some(model)) => {
                if !self.switch_model_locked(state, &model) {
                    return refuse(responder, ErrorCode::INTERNAL_ERROR, AGENT_GONE);
                }
                // Keep the client's model selector in step with the command.
                let update = SessionNotification::new(
                    self.mapper.session_id().clone(),
                    SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(
                        model_option::options(&state.model, &state.models),
                    )),
                );
                if let Err(e) = self.cx.send_notification(update) {
                    tracing::debug!(error = %e, "could not send the model update");
                }
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
        let update = SessionNotification::new(
            self.mapper.session_id().clone(),
            SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(model_option::options(
                &state.model,
                &state.models,
            ))),
        );
        if let Err(e) = self.cx.send_notification(update) {
            tracing::debug!(error = %e, "could not offer the listed models");
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

/// Reads one agent's events until it closes and sends what they become.
struct Pump {
    events: EventReceiver,
    /// Weak, so that dropping the session (connection gone) drops the last `OpSender` and
    /// lets the agent end, which in turn ends this pump.
    session: Weak<Session>,
    state: Arc<Mutex<State>>,
    mapper: Mapper,
    cx: ConnectionTo<Client>,
}

impl Pump {
    async fn run(mut self) {
        loop {
            match self.events.next_event().await {
                Ok(event) => {
                    if self.handle(event).is_err() {
                        tracing::debug!("client connection closed; stopping the session pump");
                        return;
                    }
                }
                Err(_) => {
                    if let Some(prompt) = lock(&self.state).prompt.take() {
                        prompt.done.cancel();
                        refuse(prompt.responder, ErrorCode::INTERNAL_ERROR, AGENT_GONE);
                    }
                    return;
                }
            }
        }
    }

    /// Sends the event's frames, then does what the event asks of the session.
    fn handle(&mut self, event: CoreEvent) -> Result<(), Error> {
        for frame in self.mapper.frames(&event) {
            self.cx
                .send_notification(UntypedMessage::new(frame.method, frame.params)?)?;
        }
        self.mapper
            .terminals()
            .forwarded(&event, &self.cx, self.mapper.session_id());
        lock(&self.state).stats.observe(&event);
        match event {
            CoreEvent::PermissionRequested {
                call_id,
                tool_name,
                display,
                preview,
                reason,
                always_scope,
            } => self.ask_permission(PermissionAsk {
                call_id: &call_id,
                tool_name: &tool_name,
                display: &display,
                preview: &preview,
                reason: reason.as_deref(),
                always_scope: always_scope.as_deref(),
            }),
            CoreEvent::TurnStarted { model, .. } => lock(&self.state).model = model,
            CoreEvent::ApprovalModeChanged { mode } => self.mode_changed(mode),
            CoreEvent::Usage { prompt_id, usage } if prompt_id == MAIN_PROMPT_ID => {
                if let Some(prompt) = &mut lock(&self.state).prompt {
                    prompt.usage.add(&usage);
                }
            }
            CoreEvent::TaskFinished {
                stop_reason, error, ..
            } => self.finish(stop_reason, error),
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
        Ok(())
    }

    /// A mode the agent switched itself (leaving plan mode) is told to the client; one the
    /// client set is already known there.
    fn mode_changed(&self, mode: ApprovalMode) {
        let known = std::mem::replace(&mut lock(&self.state).mode, mode) == mode;
        if known {
            return;
        }
        let update = crate::plan_mode::mode_update(self.mapper.session_id().clone(), mode);
        if let Err(e) = self.cx.send_notification(update) {
            tracing::debug!(error = %e, "could not send the mode update");
        }
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
    fn ask_permission(&self, ask: PermissionAsk<'_>) {
        let request = self.mapper.permission_request(ask);
        let call_id = ask.call_id.to_owned();
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
