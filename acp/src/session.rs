//! One ACP session: the core agent's queue pair, the running prompt, and the task that
//! turns the agent's events into frames for as long as the agent lives.
//!
//! The pump outlives each prompt on purpose: tool-use summaries may arrive after the
//! prompt's response (SPEC §7.2), and they still reach the client.

use std::sync::{Arc, Mutex, MutexGuard, Weak};

use agent_client_protocol::v1::schema::{
    PromptResponse, RequestPermissionOutcome, RequestPermissionResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error, ErrorCode, UntypedMessage};
use corvid_core::agent::{EventReceiver, OpSender};
use corvid_protocol::{
    ApprovalDecision, ApprovalMode, ApprovalPreview, CoreEvent, ErrorInfo, ErrorKind,
    MAIN_PROMPT_ID, Op, StopReason, ToolDisplay, Usage,
};
use tokio_util::sync::CancellationToken;

use crate::mapping::{self, Mapper};

/// A live session, shared by the request handlers.
pub(crate) struct Session {
    ops: OpSender,
    state: Arc<Mutex<State>>,
}

/// What handlers and the pump both touch. Never held across an await.
struct State {
    mode: ApprovalMode,
    prompt: Option<ActivePrompt>,
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
        mode: ApprovalMode,
        mapper: Mapper,
        cx: ConnectionTo<Client>,
    ) -> Arc<Self> {
        let state = Arc::new(Mutex::new(State { mode, prompt: None }));
        Arc::new_cyclic(|session| {
            let pump = Pump {
                events,
                session: session.clone(),
                state: state.clone(),
                mapper,
                cx,
            };
            tokio::spawn(pump.run());
            Self { ops, state }
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
        text: String,
        responder: Responder<PromptResponse>,
    ) -> Option<CancellationToken> {
        let mut state = lock(&self.state);
        if state.prompt.is_some() {
            refuse(
                responder,
                ErrorCode::INVALID_REQUEST,
                "a prompt is already running in this session; cancel it first",
            );
            return None;
        }
        if self.ops.submit(Op::user_turn(text)).is_err() {
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

    /// Switches the approval mode for later calls.
    pub(crate) fn set_mode(&self, mode: ApprovalMode) -> bool {
        if self.ops.submit(Op::SetApprovalMode { mode }).is_err() {
            return false;
        }
        lock(&self.state).mode = mode;
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
        match event {
            CoreEvent::PermissionRequested {
                call_id,
                tool_name,
                display,
                preview,
                ..
            } => self.ask_permission(call_id, &tool_name, &display, &preview),
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
    fn ask_permission(
        &self,
        call_id: String,
        tool_name: &str,
        display: &ToolDisplay,
        preview: &ApprovalPreview,
    ) {
        let request = self
            .mapper
            .permission_request(&call_id, tool_name, display, preview);
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
