//! One ACP session: the core agent's queue pair, the running prompt and its state; the
//! agent's events reach the client through the session's [`crate::pump`].

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    ConfigOptionUpdate, PromptResponse, SessionConfigOption, SessionNotification, SessionUpdate,
    StopReason as AcpStopReason,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error, ErrorCode, UntypedMessage};
use corvid_core::agent::{EventReceiver, OpSender};
use corvid_core::models::{CurrentModels, Efforts, ModelChoice};
use corvid_core::usage::UsageStats;
use corvid_protocol::{ApprovalMode, CoreEvent, ErrorInfo, Op, ReasoningEffort, Usage};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::commands::{self, Command, Reply};
use crate::config_options;
use crate::mapping::Mapper;
use crate::output::Output;
use crate::pump::Pump;

/// Client mode switches whose echo from the agent is still awaited, at most.
const MAX_MODE_ECHOES: usize = 16;

/// How long the provider's fresh model list is waited for once the session was answered.
const MODEL_LIST_TIMEOUT: Duration = Duration::from_secs(15);

/// A fresh model listing on its way.
type LaterModels = JoinHandle<Result<Vec<String>, ErrorInfo>>;

/// A live session, shared by the request handlers.
pub(crate) struct Session {
    pub(crate) ops: OpSender,
    /// The provider's fresh model listing still on its way (`offer_provider_models`).
    later_models: Mutex<Option<LaterModels>>,
    pub(crate) state: Arc<Mutex<State>>,
    /// Where command answers go, framed as the agent's own text.
    pub(crate) mapper: Mapper,
    pub(crate) cx: ConnectionTo<Client>,
    /// The session's checkpoints, for `/undo` and `/rewind`.
    pub(crate) checkpoints: Option<Arc<corvid_core::checkpoints::SessionCheckpoints>>,
    /// Where the session is recorded, for `/branch` (`None` when nothing is recorded).
    pub(crate) store: Option<corvid_core::session::SessionStore>,
    /// Custom commands and skills, advertised with `available_commands_update`.
    pub(crate) commands: Option<Arc<corvid_core::commands::Library>>,
    /// The session's background processes, for `/tasks`.
    pub(crate) background: Option<Arc<corvid_tools::shell::BackgroundProcesses>>,
}

/// What handlers and the pump both touch. Never held across an await.
pub(crate) struct State {
    pub(crate) mode: ApprovalMode,
    /// Modes the client set whose `ApprovalModeChanged` the agent has not reported yet, oldest
    /// first: the pump drops those echoes, so two quick switches never bounce the first one
    /// back to the client as if the agent had made it.
    pub(crate) mode_echoes: VecDeque<ApprovalMode>,
    /// The main model later turns use (`/model` shows and switches it).
    pub(crate) model: String,
    /// The models the `model` config option offers: the configured ones, the provider's
    /// listing and every model chosen in this session.
    pub(crate) models: Vec<String>,
    /// Which efforts a model takes, and the provider's current one.
    pub(crate) efforts: Efforts,
    /// The effort the client or `/model` chose (the provider's own until then).
    pub(crate) effort: Option<ReasoningEffort>,
    /// Token usage per prompt id, turns and tool calls, for `/stats`.
    pub(crate) stats: UsageStats,
    pub(crate) prompt: Option<ActivePrompt>,
}

/// How a session starts: its mode and model, and the statistics of a replayed transcript.
pub(crate) struct Start {
    pub mode: ApprovalMode,
    pub model: String,
    /// Other models to offer (the configured fallback).
    pub other_models: Vec<String>,
    pub stats: UsageStats,
    /// The provider's models as known when the session is answered (cached or fresh), and
    /// the fresh listing still on its way.
    pub listed: CurrentModels,
    /// The session provider's reasoning efforts.
    pub efforts: Efforts,
    /// The session's custom commands and skills, listed to the client (issue 29).
    pub commands: Option<Arc<corvid_core::commands::Library>>,
    /// The session's checkpoints, for `/undo` and `/rewind` (`None` when off).
    pub checkpoints: Option<Arc<corvid_core::checkpoints::SessionCheckpoints>>,
    /// The session's background processes (`None` when it runs none).
    pub background: Option<Arc<corvid_tools::shell::BackgroundProcesses>>,
    /// The session store, for `/branch`.
    pub store: Option<corvid_core::session::SessionStore>,
}

impl State {
    /// The config options as they stand: mode, model, and the effort while the model takes one.
    pub(crate) fn config_options(&self) -> Vec<SessionConfigOption> {
        let choices = self.efforts.for_model(&self.model);
        let effort = (!choices.is_empty()).then(|| config_options::EffortOption {
            current: self
                .effort
                .or_else(|| self.efforts.current())
                .unwrap_or(ReasoningEffort::Medium),
            choices,
        });
        config_options::options(self.mode, &self.model, &self.models, effort)
    }
}

/// The prompt being answered: its responder, its cancellation, its usage so far.
pub(crate) struct ActivePrompt {
    pub(crate) responder: Responder<PromptResponse>,
    /// Tripped by `session/cancel`; abandons pending permission requests.
    pub(crate) cancel: CancellationToken,
    /// Tripped when the prompt was answered; ends its `$/cancel_request` watcher.
    pub(crate) done: CancellationToken,
    pub(crate) usage: Usage,
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
        for model in start.other_models.into_iter().chain(start.listed.models) {
            if !models.contains(&model) {
                models.push(model);
            }
        }
        let state = Arc::new(Mutex::new(State {
            mode: start.mode,
            mode_echoes: VecDeque::new(),
            model: start.model,
            models,
            efforts: start.efforts,
            effort: None,
            stats: start.stats,
            prompt: None,
        }));
        Arc::new_cyclic(|session| {
            Pump::start(
                events,
                session.clone(),
                state.clone(),
                mapper.clone(),
                cx.clone(),
                output,
            );
            Self {
                ops,
                later_models: Mutex::new(start.listed.later),
                state,
                mapper,
                cx,
                commands: start.commands,
                checkpoints: start.checkpoints,
                background: start.background,
                store: start.store,
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
            Some(command @ (Command::Rewind(_) | Command::Branch(_))) => {
                let done = CancellationToken::new();
                state.prompt = Some(ActivePrompt {
                    responder,
                    cancel: CancellationToken::new(),
                    done: done.clone(),
                    usage: Usage::default(),
                });
                drop(state);
                match command {
                    Command::Branch(turn) => crate::rewind::start_branch(self, turn),
                    Command::Rewind(ask) => crate::rewind::start(self, ask),
                    _ => {}
                }
                return Some(done);
            }
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
            Reply::Tasks => self.background.as_ref().map_or_else(
                || "This session runs no background processes.".to_owned(),
                |b| b.report(),
            ),
            Reply::Clear => match self.ops.submit(Op::ClearHistory) {
                Ok(()) => "History cleared: the next prompt starts a fresh conversation in \
                           this session."
                    .to_owned(),
                Err(_) => return refuse(responder, ErrorCode::INTERNAL_ERROR, AGENT_GONE),
            },
            Reply::Model(ModelChoice {
                model: None,
                effort: None,
            }) => {
                let effort = state
                    .effort
                    .or_else(|| state.efforts.current())
                    .filter(|_| !state.efforts.for_model(&state.model).is_empty());
                match effort {
                    Some(effort) => format!(
                        "Model: {} (reasoning effort {})",
                        state.model,
                        effort.as_str()
                    ),
                    None => format!("Model: {}", state.model),
                }
            }
            Reply::Model(choice) => {
                let mut said = Vec::new();
                if let Some(model) = &choice.model {
                    if !self.switch_model_locked(state, model) {
                        return refuse(responder, ErrorCode::INTERNAL_ERROR, AGENT_GONE);
                    }
                    said.push(format!("Model set to {model}"));
                }
                let refused = match choice.effort {
                    Some(effort) => match self.set_effort_locked(state, effort) {
                        Ok(()) => {
                            said.push(format!("reasoning effort {}", effort.as_str()));
                            None
                        }
                        Err(e) => Some(e.message),
                    },
                    None => None,
                };
                // Keep the client's selectors in step with the command.
                self.send_config_options(state);
                let mut reply = if said.is_empty() {
                    String::new()
                } else {
                    format!("{} for later turns", said.join(", "))
                };
                if let Some(first) = reply.get(..1) {
                    reply = first.to_uppercase() + &reply[1..];
                }
                if let Some(refused) = refused {
                    let joint = if reply.is_empty() { "" } else { ". " };
                    reply = format!("{reply}{joint}{refused}");
                }
                reply
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

    /// The session's config options (the mode and model selectors).
    pub(crate) fn config_options(&self) -> Vec<SessionConfigOption> {
        let state = lock(&self.state);
        state.config_options()
    }

    /// Once the client knows the session: the provider's fresh model listing, when it was
    /// not there in time for the answer, is added to the `model` option's choices with a
    /// `config_option_update` when it brings new ones. A server without a list (or slow to
    /// answer) leaves the choices as they are; the log says why.
    pub(crate) fn offer_provider_models(self: &Arc<Self>) {
        let Some(listing) = self
            .later_models
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        else {
            return;
        };
        let session = Arc::downgrade(self);
        tokio::spawn(async move {
            let models = match tokio::time::timeout(MODEL_LIST_TIMEOUT, listing).await {
                Ok(Ok(Ok(models))) => models,
                Ok(Ok(Err(e))) => {
                    tracing::debug!(error = %e, "the provider did not list its models");
                    return;
                }
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "the model listing task failed");
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
        self.send_config_options(&state);
    }

    /// Tells the client the config options' current values and choices.
    fn send_config_options(&self, state: &State) {
        let update = SessionNotification::new(
            self.mapper.session_id().clone(),
            SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(state.config_options())),
        );
        if let Err(e) = self.cx.send_notification(update) {
            tracing::debug!(error = %e, "could not send the config options");
        }
    }

    /// A mode the client set through one of the two ways (the legacy `session/set_mode` or
    /// the `mode` config option) is told through the other: clients follow one or the other.
    pub(crate) fn mode_set_by_client(&self, through: ModeSetThrough) {
        match through {
            ModeSetThrough::ConfigOption => {
                let mode = lock(&self.state).mode;
                let update = crate::plan_mode::mode_update(self.mapper.session_id().clone(), mode);
                if let Err(e) = self.cx.send_notification(update) {
                    tracing::debug!(error = %e, "could not send the mode update");
                }
            }
            ModeSetThrough::SetMode => self.send_config_options(&lock(&self.state)),
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

    /// Sets the reasoning effort of later turns; an error when the model takes none (or not
    /// that one).
    pub(crate) fn set_effort(&self, effort: ReasoningEffort) -> Result<(), Error> {
        self.set_effort_locked(&mut lock(&self.state), effort)
    }

    fn set_effort_locked(&self, state: &mut State, effort: ReasoningEffort) -> Result<(), Error> {
        if !state.efforts.for_model(&state.model).contains(&effort) {
            return Err(Error::new(
                ErrorCode::INVALID_PARAMS,
                format!(
                    "{} takes no reasoning effort `{}`; the effort stays as it was",
                    state.model,
                    effort.as_str()
                ),
            ));
        }
        self.ops
            .submit(Op::SetReasoningEffort { effort })
            .map_err(|_| Error::new(ErrorCode::INTERNAL_ERROR, AGENT_GONE))?;
        state.effort = Some(effort);
        Ok(())
    }

    /// Switches the approval mode for later calls.
    pub(crate) fn set_mode(&self, mode: ApprovalMode) -> bool {
        // Known before the agent can report it, so the pump never echoes the client's own
        // choice back as a `current_mode_update` (it raced the pump before).
        let mut state = lock(&self.state);
        let before = std::mem::replace(&mut state.mode, mode);
        if self.ops.submit(Op::SetApprovalMode { mode }).is_err() {
            state.mode = before;
            return false;
        }
        state.mode_echoes.push_back(mode);
        // The agent reports only actual changes; an echo that never comes must not pile up.
        while state.mode_echoes.len() > MAX_MODE_ECHOES {
            state.mode_echoes.pop_front();
        }
        true
    }
}

/// How the client set a session's mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ModeSetThrough {
    /// The legacy `session/set_mode`.
    SetMode,
    /// `session/set_config_option` on the `mode` option.
    ConfigOption,
}

/// What to tell the client when the session's agent is no longer running.
pub(crate) const AGENT_GONE: &str = "the agent of this session stopped; start a new session";

/// Answers a prompt with an error; a client that went away needs no answer.
pub(crate) fn refuse(responder: Responder<PromptResponse>, code: ErrorCode, message: &str) {
    if let Err(e) = responder.respond_with_error(Error::new(code, message)) {
        tracing::debug!(error = %e, "could not answer the prompt");
    }
}

/// Locks the state; a panic while it was held cannot leave it inconsistent (every critical
/// section is a single field update), so a poisoned lock is used as is.
pub(crate) fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
