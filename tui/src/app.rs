//! The application state: transcript, composer, key handling and slash commands.
//! Pure: input and core events in, [`Action`]s out; the run loop performs them.

mod commands;
pub use commands::COMMANDS;
mod keys;
mod popup;
pub use popup::PopupEntry;
mod rewind;

use std::sync::Arc;
use std::time::{Duration, Instant};

use corvid_protocol::{ApprovalMode, CoreEvent, Op, StopReason};
use crossterm::event::{Event, KeyEventKind};

use crate::cells::{HistoryCell, NoticeKind};
use crate::chat::ChatState;
use crate::composer::Composer;
use crate::live::{LiveView, StatusInfo};
use crate::picker::{SessionLauncher, SessionPicker};
use crate::replay::replay_order;
use corvid_core::context::instructions::InstructionsFile;
use corvid_core::usage::UsageStats;

/// Files the `@` popup offers.
const MENTION_ROWS: usize = 8;
/// How long a first Ctrl+C on an idle prompt waits for the second one.
const EXIT_WINDOW: Duration = Duration::from_secs(2);
/// Keys this soon after an approval dialog opens, or after the last key typed while it was
/// guarded, were typed before the user saw it: they go to the composer and answer nothing.
pub const APPROVAL_GUARD: Duration = Duration::from_millis(400);

/// How the UI starts (from flags and settings).
#[derive(Clone)]
pub struct TuiOptions {
    /// Start in compact mode (`--compact`, `ui.compactMode`).
    pub compact: bool,
    /// The main model's name, for the status line.
    pub model: String,
    pub approval_mode: ApprovalMode,
    /// Plain output (`NO_COLOR` set).
    pub no_color: bool,
    /// The earlier transcript of a resumed session (`--resume`, `--continue`), shown first.
    pub transcript: Vec<CoreEvent>,
    /// Lists and resumes recorded sessions for `/resume`; `None` where sessions are unavailable.
    pub sessions: Option<Arc<dyn SessionLauncher>>,
    /// The provider's model listing for `/model` (cached on disk, refreshed at start).
    pub models: Option<corvid_core::models::ModelListing>,
    /// `ui.theme`: `auto` asks the terminal for its background colour.
    pub theme: corvid_core::settings::UiTheme,
}

impl std::fmt::Debug for TuiOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TuiOptions")
            .field("compact", &self.compact)
            .field("model", &self.model)
            .field("approval_mode", &self.approval_mode)
            .field("no_color", &self.no_color)
            .field("transcript", &self.transcript.len())
            .field("sessions", &self.sessions.is_some())
            .field("models", &self.models.is_some())
            .field("theme", &self.theme)
            .finish()
    }
}

/// Something the run loop must do after input.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Send this operation to the agent.
    Submit(Op),
    /// Start a clean screen; what was on it stays in the scrollback (`/clear`, Ctrl+L).
    ClearScreen,
    /// Edit this prompt text in `$VISUAL`/`$EDITOR` (Ctrl+G, Ctrl+X Ctrl+E); the result goes
    /// back into the box through [`App::edited`].
    Edit(String),
    /// Swap the agent for one going on with this recorded session (`/resume`).
    Resume(String),
    /// Swap the agent for one going on in a fork of this session (`/branch [N]`): the whole
    /// conversation, or from before `turn` with its files restored.
    Branch {
        turn: Option<u32>,
        overwrite_conflicts: bool,
    },
    /// Swap the agent for one in a new recorded session (`/clear`); the old one stays
    /// resumable.
    NewSession,
    /// List the session's turns off the UI thread and hand them to [`App::listed`].
    ListTurns(crate::rewind::TurnsRequest),
    /// Compute this rewind preview off the UI thread and hand it to [`App::previewed`].
    Preview(crate::rewind::PreviewRequest),
    Quit,
}

/// The whole UI state.
pub struct App {
    pub chat: ChatState,
    pub composer: Composer,
    pub status: StatusInfo,
    pub stats: UsageStats,
    /// Where the session's time went and tokens per model, for `/stats`.
    pub times: crate::timing::SessionTimes,
    /// The `/resume` picker, while open.
    pub picker: Option<SessionPicker>,
    /// The `/model` picker, while open.
    pub model_picker: Option<crate::model_picker::ModelPicker>,
    /// The provider's listed models; `None` while no listing is known (unavailable or not
    /// answered yet): a typed `/model NAME` is then taken unchecked.
    pub models: Option<Vec<String>>,
    /// The `/undo` and `/rewind` dialog, while open.
    pub rewind: Option<crate::rewind::RewindDialog>,
    /// The session's checkpoints (`None` when off), for `/undo` and `/rewind`.
    pub checkpoints: Option<Arc<corvid_core::checkpoints::SessionCheckpoints>>,
    /// The turn a conversation rewind was asked for and its prompt, put back when it is done.
    rewound_prompt: Option<(u32, String)>,
    /// The id of the last list of turns or preview asked for (see
    /// [`crate::rewind::PreviewRequest`]).
    rewind_asked: u64,
    /// The prompts of the session's tasks (replayed ones too): a conversation rewind puts the
    /// whole prompt back, where the checkpoints keep only its first line.
    prompts: Vec<String>,
    /// The transcript view (Ctrl+O), while open.
    pub transcript_view: Option<crate::transcript::TranscriptView>,
    /// The terminal's height (the transcript view fills it); the run loop keeps it current.
    pub screen_rows: u16,
    /// The session the agent works in (left out of the `/resume` picker).
    pub session_id: String,
    /// The highlighted entry of the slash-command popup.
    command_choice: usize,
    /// Files matching the `@path` word at the cursor, and the highlighted one.
    pub mention_matches: Vec<String>,
    mention_choice: usize,
    /// The box's text when a completion closed the `@` popup (it stays closed until it changes).
    mention_done: Option<String>,
    /// Whether the terminal has the focus (focus events; assumed until told otherwise).
    focused: bool,
    /// What to tell an unfocused user (a task ended, an approval waits), for the run loop.
    notification: Option<String>,
    /// The session holds a conversation worth going back to (a prompt was sent or it was
    /// resumed): on exit the UI says how to resume it.
    pub resumable: bool,
    sessions: Option<Arc<dyn SessionLauncher>>,
    approval_choice: usize,
    /// From when keys may answer the open approval dialog.
    approval_armed_at: Option<Instant>,
    ctrl_c_at: Option<Instant>,
    /// When Esc was pressed on a non-empty idle prompt (a second Esc clears it).
    esc_at: Option<Instant>,
    /// Ctrl+X was pressed: Ctrl+E next opens the editor.
    ctrl_x: bool,
    /// The prompt of the running task, and whether it was cancelled (Esc puts it back).
    last_prompt: Option<String>,
    cancelled_prompt: Option<String>,
    /// A prompt sent while a task ran: it goes when the task ends.
    pub queued: Option<String>,
    /// Prompts sent into the running task (Ctrl+S) that the model has not read yet.
    pub steering: Vec<String>,
    frame: usize,
    /// `@path` attachments and their completion, in the working directory.
    pub mentions: crate::mention::Mentions,
    /// The instructions files the agent loaded, for `/memory`.
    pub instructions: Vec<InstructionsFile>,
    /// The session's tools, for `/mcp`.
    pub tools: corvid_tools::ToolRegistry,
    /// Custom commands and skills, for `/help`, `/skills` and running `/name args`.
    pub commands: Option<std::sync::Arc<corvid_core::commands::Library>>,
    /// The session's background processes, for `/tasks` and the status line.
    pub background: Option<std::sync::Arc<corvid_tools::shell::BackgroundProcesses>>,
}

impl App {
    /// A fresh UI.
    pub fn new(options: &TuiOptions) -> Self {
        Self {
            chat: ChatState::new(options.compact),
            composer: Composer::new(),
            status: StatusInfo {
                model: options.model.clone(),
                approval_mode: options.approval_mode,
                hint: None,
                context: None,
                background: 0,
            },
            stats: UsageStats::default(),
            times: crate::timing::SessionTimes::new(Instant::now()),
            picker: None,
            model_picker: None,
            models: None,
            rewind: None,
            checkpoints: None,
            rewound_prompt: None,
            rewind_asked: 0,
            prompts: Vec::new(),
            transcript_view: None,
            screen_rows: 24,
            session_id: String::new(),
            sessions: options.sessions.clone(),
            approval_choice: 0,
            approval_armed_at: None,
            ctrl_c_at: None,
            esc_at: None,
            ctrl_x: false,
            resumable: false,
            focused: true,
            command_choice: 0,
            mention_matches: Vec::new(),
            mention_choice: 0,
            mention_done: None,
            notification: None,
            last_prompt: None,
            cancelled_prompt: None,
            queued: None,
            steering: Vec::new(),
            frame: 0,
            mentions: crate::mention::Mentions::new(std::env::current_dir().unwrap_or_default()),
            instructions: Vec::new(),
            tools: corvid_tools::ToolRegistry::default(),
            commands: None,
            background: None,
        }
    }

    /// Applies a core event arriving now.
    pub fn on_core_event(&mut self, ev: &CoreEvent) {
        self.on_core_event_at(ev, Instant::now());
    }

    /// Applies a core event that arrived at `now` (an approval dialog is guarded from then).
    pub fn on_core_event_at(&mut self, ev: &CoreEvent, now: Instant) {
        self.stats.observe(ev);
        self.times.observe(ev, now);
        if let CoreEvent::TaskStarted { prompt, .. } = ev {
            self.prompts.push(prompt.clone());
        }
        if matches!(ev, CoreEvent::ToolFinished { .. }) {
            self.count_background();
        }
        match ev {
            CoreEvent::TurnStarted { model, .. } => self.status.model = model.clone(),
            CoreEvent::ModelFellBack { to, .. } | CoreEvent::ModelChanged { to, .. } => {
                self.status.model = to.clone();
            }
            CoreEvent::ApprovalModeChanged { mode } => self.status.approval_mode = *mode,
            CoreEvent::ContextUsage { .. } => self.status.context = self.stats.context,
            CoreEvent::HistoryCleared => {
                self.stats.context = None;
                self.status.context = None;
            }
            // Read by the model now (or, sent as the task ended, it became the next prompt).
            CoreEvent::Steered { prompt } | CoreEvent::TaskStarted { prompt, .. } => {
                if let Some(i) = self.steering.iter().position(|p| p == prompt) {
                    self.steering.remove(i);
                }
            }
            CoreEvent::TaskFinished { stop_reason, .. } => self.task_finished(*stop_reason),
            CoreEvent::Rewound {
                turn, scope, error, ..
            } => self.rewound(*turn, *scope, error.is_some()),
            CoreEvent::PermissionRequested { .. } => {
                self.arm_approval(now);
                self.notify_if_away("corvid: an approval is waiting");
            }
            // Keys typed just before the picker appeared must not answer it either.
            CoreEvent::QuestionAsked { .. } => {
                self.arm_approval(now);
                self.notify_if_away("corvid: the model asks you a question");
            }
            CoreEvent::Subagent { event, .. }
                if matches!(**event, CoreEvent::PermissionRequested { .. }) =>
            {
                self.arm_approval(now);
                self.notify_if_away("corvid: an approval is waiting");
            }
            _ => {}
        }
        self.chat.on_event(ev);
    }

    /// The task ended: its prompt can come back after a cancel, and an away user hears of it.
    fn task_finished(&mut self, stop_reason: StopReason) {
        let prompt = self.last_prompt.take();
        // What a cancelled or failed task never read goes back into the box (the core said
        // so too); after a normal end it was read, or it starts the next task.
        let normal_end = matches!(
            stop_reason,
            StopReason::EndTurn | StopReason::MaxTokens | StopReason::Refusal
        );
        if !normal_end && !self.steering.is_empty() {
            let mut text = std::mem::take(&mut self.steering).join("\n");
            if !self.composer.is_empty() {
                text = format!("{text}\n{}", self.composer.text());
            }
            self.composer.set_text(text);
        }
        if stop_reason == StopReason::Cancelled {
            self.cancelled_prompt = prompt;
            // Cancelling stops what was queued too: it goes back into the box.
            if let Some(q) = self.queued.take() {
                let text = match self.composer.text() {
                    "" => q,
                    typed => format!("{q}\n{typed}"),
                };
                self.composer.set_text(text);
            }
        } else if self.queued.is_none() {
            self.notify_if_away("corvid: the task is done");
        }
    }

    fn notify_if_away(&mut self, message: &str) {
        if !self.focused {
            self.notification = Some(message.to_owned());
        }
    }

    /// What to tell the user now that the terminal is not focused (the run loop rings it).
    pub fn take_notification(&mut self) -> Option<String> {
        self.notification.take()
    }

    /// A new approval dialog starts on its first choice, guarded against keys typed before it.
    fn arm_approval(&mut self, now: Instant) {
        self.approval_choice = 0;
        self.approval_armed_at = Some(now + APPROVAL_GUARD);
    }

    /// Shows a recorded transcript through the live event path, with nothing left running:
    /// no approval is asked, and an unfinished last task is closed.
    pub fn replay(&mut self, transcript: &[CoreEvent]) {
        for ev in replay_order(transcript) {
            self.on_core_event(&ev);
        }
        if self.chat.is_running() {
            self.on_core_event(&CoreEvent::TaskFinished {
                task_id: "replay".into(),
                stop_reason: StopReason::EndTurn,
                error: None,
                pending_summaries: 0,
            });
        }
    }

    /// The agent now works in the resumed session `session_id`: a notice, then its transcript.
    pub fn on_resumed(&mut self, session_id: &str, transcript: &[CoreEvent]) {
        self.switch_session(
            session_id,
            transcript,
            format!("Resumed session {session_id}; its earlier transcript follows"),
        );
    }

    /// The run loop swapped the agent for one in a fork of session `parent` (`/branch`):
    /// the fork's transcript is shown after what the file restore did.
    pub fn on_branched(
        &mut self,
        parent: &str,
        session_id: &str,
        transcript: &[CoreEvent],
        restored: Option<(u32, &corvid_protocol::RewindReport)>,
    ) {
        if let Some((turn, report)) = restored {
            self.notice(
                NoticeKind::Info,
                report.describe(turn, corvid_protocol::RewindScope::Code, None),
            );
        }
        self.switch_session(
            session_id,
            transcript,
            format!(
                "Branched: now in session {session_id}, a fork of {parent} (kept as it was; \
                 /resume {parent} goes back to it). The fork's transcript follows"
            ),
        );
    }

    fn switch_session(&mut self, session_id: &str, transcript: &[CoreEvent], said: String) {
        self.session_id = session_id.to_string();
        self.resumable = true;
        // `/stats` is about the session the agent now works in (the replay counts its usage).
        self.stats = UsageStats::default();
        self.times = crate::timing::SessionTimes::new(Instant::now());
        // Its turns are the ones a rewind can reach; the replay brings their prompts.
        self.prompts.clear();
        self.notice(NoticeKind::Info, said);
        self.replay(transcript);
    }

    /// The provider listed its models (or the listing failed: `/model NAME` then goes
    /// unchecked). An empty listing counts as none.
    pub fn on_models(&mut self, listed: Result<Vec<String>, String>) {
        match listed {
            Ok(models) if !models.is_empty() => self.models = Some(models),
            Ok(_) => {}
            Err(e) => tracing::debug!(error = %e, "no model listing for /model"),
        }
    }

    /// The agent now works in the new session `session_id` (`/clear`): `/stats` and the
    /// rewind points start over, and the notice says how to go back to the previous session.
    pub fn on_new_session(&mut self, session_id: &str) {
        let previous = std::mem::replace(&mut self.session_id, session_id.to_owned());
        let was_resumable = std::mem::take(&mut self.resumable);
        self.stats = UsageStats::default();
        self.times = crate::timing::SessionTimes::new(Instant::now());
        self.prompts.clear();
        self.stats.context = None;
        self.status.context = None;
        let text = if was_resumable {
            format!(
                "New session {session_id}. The previous one stays resumable: corvid --resume {previous} (or /resume)"
            )
        } else {
            format!("New session {session_id}")
        };
        self.notice(NoticeKind::Info, text);
    }

    /// Commits a notice line (also for failures the run loop meets, such as a failed resume).
    pub fn notice(&mut self, kind: NoticeKind, text: String) {
        self.chat.commit(HistoryCell::Notice(kind, text));
    }

    /// Advances spinners.
    pub fn tick(&mut self, now: Instant) {
        self.frame = self.frame.wrapping_add(1);
        // Processes exit on their own; the count follows at the next tick.
        self.count_background();
        if self
            .ctrl_c_at
            .is_some_and(|t| now.duration_since(t) > EXIT_WINDOW)
        {
            self.ctrl_c_at = None;
            self.status.hint = None;
        }
    }

    /// Refreshes the status line's count of running background processes.
    pub fn count_background(&mut self) {
        self.status.background = self.background.as_ref().map_or(0, |b| b.running());
    }

    /// Whether something animates (the run loop ticks faster then).
    pub fn animating(&self) -> bool {
        self.chat.is_running() || self.chat.group.is_some() || self.ctrl_c_at.is_some()
    }

    /// The live area as of `now`.
    pub fn view(&self, now: Instant) -> LiveView<'_> {
        LiveView {
            chat: &self.chat,
            composer: &self.composer,
            status: &self.status,
            approval_choice: self.approval_choice,
            queued: self.queued.as_deref(),
            steering: &self.steering,
            mentions: (&self.mention_matches, self.mention_choice),
            commands: {
                let popup = self.command_popup();
                let choice = self.command_choice.min(popup.len().saturating_sub(1));
                (popup, choice)
            },
            picker: self.picker.as_ref(),
            model_picker: self.model_picker.as_ref(),
            rewind: self.rewind.as_ref(),
            transcript: self.transcript_view.as_ref().map(|v| (v, self.screen_rows)),
            frame: self.frame,
            now,
        }
    }

    /// The prompt text came back from the editor: it replaces the box's text (the editor's
    /// final newline dropped).
    pub fn edited(&mut self, text: &str) {
        self.composer
            .set_text(text.strip_suffix('\n').unwrap_or(text).to_owned());
    }

    /// Pasted text goes into the composer as typed; it never answers an approval dialog.
    pub fn on_paste(&mut self, text: &str, now: Instant) {
        self.guard_approval(now);
        self.composer.insert_str(text);
        self.refresh_mentions();
    }

    /// Looks up the files for the `@path` word at the cursor (the popup under the box).
    fn refresh_mentions(&mut self) {
        let closed = self.mention_done.as_deref() == Some(self.composer.text());
        let query = self
            .composer
            .at_word()
            .filter(|_| !closed)
            .map(|(_, q)| q.to_owned());
        let matches = match query {
            Some(q) => self.mentions.candidates(&q, MENTION_ROWS),
            None => Vec::new(),
        };
        if matches != self.mention_matches {
            self.mention_choice = 0;
        }
        self.mention_matches = matches;
    }

    /// Handles the input events that arrived together (one read of the terminal, drawn as one
    /// frame). Several keys at once are a paste without bracketed paste or a burst the user
    /// typed ahead: they go to the composer, never to an approval dialog.
    pub fn on_input(&mut self, events: &[Event], now: Instant) -> Vec<Action> {
        let presses = events
            .iter()
            .filter(|e| matches!(e, Event::Key(k) if k.kind != KeyEventKind::Release))
            .count();
        if presses > 1 {
            self.guard_approval(now);
        }
        let mut actions = Vec::new();
        for ev in events {
            match ev {
                Event::Key(key) => actions.extend(self.on_key(*key, now)),
                Event::Paste(text) => self.on_paste(text, now),
                Event::FocusGained => self.focused = true,
                Event::FocusLost => self.focused = false,
                _ => {}
            }
            if actions.contains(&Action::Quit) {
                break;
            }
        }
        actions
    }

    /// Keeps an open approval dialog deaf to keys until input has paused for the guard time.
    fn guard_approval(&mut self, now: Instant) {
        if self.chat.approval.is_some() {
            self.approval_armed_at = Some(now + APPROVAL_GUARD);
        }
    }

    /// Whether a key at `now` may answer the open approval dialog.
    fn approval_armed(&self, now: Instant) -> bool {
        self.approval_armed_at.is_none_or(|t| now >= t)
    }
}
