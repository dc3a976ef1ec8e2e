//! The application state: transcript, composer, key handling and slash commands.
//! Pure: input and core events in, [`Action`]s out; the run loop performs them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use corvid_protocol::{ApprovalDecision, ApprovalMode, CoreEvent, Op, StopReason};
use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::cells::{HistoryCell, NoticeKind};
use crate::chat::{ChatState, PendingApproval};
use crate::composer::Composer;
use crate::live::{LiveView, StatusInfo};
use crate::picker::{PickerOutcome, SessionLauncher, SessionPicker};
use crate::replay::replay_order;
use corvid_core::context::instructions::{self, InstructionsFile};
use corvid_core::usage::UsageStats;

/// How long a first Ctrl+C on an idle prompt waits for the second one.
const EXIT_WINDOW: Duration = Duration::from_secs(2);
/// Keys this soon after an approval dialog opens, or after the last key typed while it was
/// guarded, were typed before the user saw it: they go to the composer and answer nothing.
pub const APPROVAL_GUARD: Duration = Duration::from_millis(400);

const HELP: &str = "Commands
/help           this list
/stats          token usage per prompt id, turns and tool calls
/memory         the instructions files (AGENTS.md...) in the model's prompt
/mcp            the MCP servers of this session: status, tools, errors
/view [MODE]    tool groups `compact` or `full`; alone toggles (also ctrl+o)
/model NAME     use another model for later turns
/resume [ID]    go back to an earlier session of this project
/compress       summarize the older conversation to free the context window (also /compact)
/clear          start a fresh conversation: clears the screen and the model's history
/quit           exit
Keys: enter send (queued while a task runs) · shift+enter, ctrl+j or \\+enter newline · up/down rows, then history · ctrl+r search history · esc or ctrl+c cancel · esc esc clear · ctrl+c twice exit · shift+tab mode (default, auto-edit, plan) · ctrl+o compact/full · ctrl+l clear screen
Editing: ctrl+a/e line start/end · ctrl+w, alt+backspace cut word · ctrl+k cut to end · ctrl+u cut to start · ctrl+y paste cut · alt+b/f, ctrl+←/→ word moves";

/// What `/mcp` says in a session without MCP servers.
const NO_MCP_SERVERS: &str = "No MCP servers in this session. Add them under `mcpServers` in \
~/.corvid/settings.json or the project's .corvid/settings.json.";

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
            .finish()
    }
}

/// Something the run loop must do after input.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Send this operation to the agent.
    Submit(Op),
    /// Clear the screen and scrollback (`/clear`).
    ClearScreen,
    /// Swap the agent for one going on with this recorded session (`/resume`).
    Resume(String),
    Quit,
}

/// The whole UI state.
pub struct App {
    pub chat: ChatState,
    pub composer: Composer,
    pub status: StatusInfo,
    pub stats: UsageStats,
    /// The `/resume` picker, while open.
    pub picker: Option<SessionPicker>,
    /// The session the agent works in (left out of the `/resume` picker).
    pub session_id: String,
    sessions: Option<Arc<dyn SessionLauncher>>,
    approval_choice: usize,
    /// From when keys may answer the open approval dialog.
    approval_armed_at: Option<Instant>,
    ctrl_c_at: Option<Instant>,
    /// When Esc was pressed on a non-empty idle prompt (a second Esc clears it).
    esc_at: Option<Instant>,
    /// The prompt of the running task, and whether it was cancelled (Esc puts it back).
    last_prompt: Option<String>,
    cancelled_prompt: Option<String>,
    /// A prompt sent while a task ran: it goes when the task ends.
    pub queued: Option<String>,
    frame: usize,
    /// `@path` attachments and their completion, in the working directory.
    pub mentions: crate::mention::Mentions,
    /// The instructions files the agent loaded, for `/memory`.
    pub instructions: Vec<InstructionsFile>,
    /// The session's tools, for `/mcp`.
    pub tools: corvid_tools::ToolRegistry,
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
            },
            stats: UsageStats::default(),
            picker: None,
            session_id: String::new(),
            sessions: options.sessions.clone(),
            approval_choice: 0,
            approval_armed_at: None,
            ctrl_c_at: None,
            esc_at: None,
            last_prompt: None,
            cancelled_prompt: None,
            queued: None,
            frame: 0,
            mentions: crate::mention::Mentions::new(std::env::current_dir().unwrap_or_default()),
            instructions: Vec::new(),
            tools: corvid_tools::ToolRegistry::default(),
        }
    }

    /// Applies a core event arriving now.
    pub fn on_core_event(&mut self, ev: &CoreEvent) {
        self.on_core_event_at(ev, Instant::now());
    }

    /// Applies a core event that arrived at `now` (an approval dialog is guarded from then).
    pub fn on_core_event_at(&mut self, ev: &CoreEvent, now: Instant) {
        self.stats.observe(ev);
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
            CoreEvent::TaskFinished { stop_reason, .. } => {
                let prompt = self.last_prompt.take();
                if *stop_reason == StopReason::Cancelled {
                    self.cancelled_prompt = prompt;
                    // Cancelling stops what was queued too: it goes back into the box.
                    if let Some(q) = self.queued.take() {
                        let text = match self.composer.text() {
                            "" => q,
                            typed => format!("{q}\n{typed}"),
                        };
                        self.composer.set_text(text);
                    }
                }
            }
            CoreEvent::PermissionRequested { .. } => self.arm_approval(now),
            CoreEvent::Subagent { event, .. }
                if matches!(**event, CoreEvent::PermissionRequested { .. }) =>
            {
                self.arm_approval(now);
            }
            _ => {}
        }
        self.chat.on_event(ev);
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
        self.session_id = session_id.to_string();
        // `/stats` is about the session the agent now works in (the replay counts its usage).
        self.stats = UsageStats::default();
        self.notice(
            NoticeKind::Info,
            format!("Resumed session {session_id}; its earlier transcript follows"),
        );
        self.replay(transcript);
    }

    /// Commits a notice line (also for failures the run loop meets, such as a failed resume).
    pub fn notice(&mut self, kind: NoticeKind, text: String) {
        self.chat.commit(HistoryCell::Notice(kind, text));
    }

    /// Advances spinners.
    pub fn tick(&mut self, now: Instant) {
        self.frame = self.frame.wrapping_add(1);
        if self
            .ctrl_c_at
            .is_some_and(|t| now.duration_since(t) > EXIT_WINDOW)
        {
            self.ctrl_c_at = None;
            self.status.hint = None;
        }
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
            picker: self.picker.as_ref(),
            frame: self.frame,
            now,
        }
    }

    /// Pasted text goes into the composer as typed; it never answers an approval dialog.
    pub fn on_paste(&mut self, text: &str, now: Instant) {
        self.guard_approval(now);
        self.composer.insert_str(text);
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

    /// Handles one key press.
    pub fn on_key(&mut self, key: KeyEvent, now: Instant) -> Vec<Action> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        if let Some(picker) = self.picker.as_mut() {
            return match picker.on_key(key) {
                PickerOutcome::Open => Vec::new(),
                PickerOutcome::Closed => {
                    self.picker = None;
                    Vec::new()
                }
                PickerOutcome::Chosen(id) => {
                    self.picker = None;
                    self.resume_action(id)
                }
            };
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        if ctrl && key.code == KeyCode::Char('c') {
            if self.composer.searching() {
                self.composer.end_search(false);
                return Vec::new();
            }
            return self.on_ctrl_c(now);
        }
        self.ctrl_c_at = None;
        self.status.hint = None;
        if ctrl && key.code == KeyCode::Char('o') {
            self.chat.toggle_compact();
            return Vec::new();
        }
        if self.composer.searching() {
            match key.code {
                KeyCode::Esc => return self.end_search(false),
                KeyCode::Char('g') if ctrl => return self.end_search(false),
                KeyCode::Enter => return self.end_search(true),
                KeyCode::Char('r') if ctrl => {
                    self.composer.search_older();
                    return Vec::new();
                }
                KeyCode::Char(c) if !ctrl && !alt => {
                    self.composer.insert_char(c);
                    return Vec::new();
                }
                KeyCode::Backspace => {
                    self.composer.backspace();
                    return Vec::new();
                }
                // Any other key keeps the entry found and edits it.
                _ => self.composer.end_search(true),
            }
        }
        if key.code == KeyCode::Esc {
            return self.on_esc(now);
        }
        self.esc_at = None;
        if let Some(a) = self.chat.approval.clone() {
            // Text in the box is a message being written, not an answer: with text there,
            // the dialog is deaf, and Enter asks again instead of answering.
            if self.composer.is_empty()
                && self.approval_armed(now)
                && let Some(actions) = self.on_approval_key(key, &a)
            {
                return actions;
            }
            if key.code == KeyCode::Enter
                && !key
                    .modifiers
                    .intersects(KeyModifiers::SHIFT | KeyModifiers::ALT)
            {
                self.status.hint = Some(
                    "approval waiting: clear the box (ctrl+u) to answer it, esc cancels the task"
                        .into(),
                );
                return Vec::new();
            }
            // Typed before the dialog could be read, or not a dialog key: it stays text, and
            // the dialog listens again once the typing pauses.
            self.guard_approval(now);
        }
        let c = &mut self.composer;
        match key.code {
            KeyCode::Enter
                if key
                    .modifiers
                    .intersects(KeyModifiers::SHIFT | KeyModifiers::ALT) =>
            {
                c.insert_char('\n')
            }
            KeyCode::Char('j') if ctrl => c.insert_char('\n'),
            // `\` then Enter continues the prompt on a new line, as in a shell.
            KeyCode::Enter if c.before_cursor_is('\\') => {
                c.backspace();
                c.insert_char('\n');
            }
            KeyCode::Enter => return self.on_enter(),
            KeyCode::Char('a') if ctrl => c.home(),
            KeyCode::Char('e') if ctrl => c.end(),
            KeyCode::Char('b') if ctrl => c.left(),
            KeyCode::Char('f') if ctrl => c.right(),
            KeyCode::Char('u') if ctrl => c.kill_to_start(),
            KeyCode::Char('k') if ctrl => c.kill_to_end(),
            KeyCode::Char('w') if ctrl => c.delete_word_left(),
            KeyCode::Char('y') if ctrl => c.yank(),
            KeyCode::Char('r') if ctrl => c.search_older(),
            KeyCode::Char('l') if ctrl => return vec![Action::ClearScreen],
            KeyCode::Char('b') if alt => c.word_left(),
            KeyCode::Char('f') if alt => c.word_right(),
            // Other Alt+letter chords are no text (a terminal sends them for menu keys).
            KeyCode::Char(ch) if !ctrl && !alt => c.insert_char(ch),
            KeyCode::Backspace if ctrl || alt => c.delete_word_left(),
            KeyCode::Backspace => c.backspace(),
            KeyCode::Delete => c.delete(),
            KeyCode::Left if ctrl || alt => c.word_left(),
            KeyCode::Right if ctrl || alt => c.word_right(),
            KeyCode::Left => c.left(),
            KeyCode::Right => c.right(),
            KeyCode::Home => c.home(),
            KeyCode::End => c.end(),
            // Up on an empty box takes the queued prompt back for editing.
            KeyCode::Up if c.is_empty() && self.queued.is_some() => {
                if let Some(q) = self.queued.take() {
                    c.set_text(q);
                }
            }
            KeyCode::Up => c.up(),
            KeyCode::Down => c.down(),
            KeyCode::BackTab => {
                let mode = crate::modes::next_mode(self.status.approval_mode);
                self.status.approval_mode = mode;
                self.status.hint = Some(crate::modes::switched_hint(mode));
                return vec![Action::Submit(Op::SetApprovalMode { mode })];
            }
            KeyCode::Tab => {
                if let Some(completed) = self.mentions.complete(c.text()) {
                    c.clear();
                    c.insert_str(&completed);
                }
            }
            _ => {}
        }
        Vec::new()
    }

    fn end_search(&mut self, keep: bool) -> Vec<Action> {
        self.composer.end_search(keep);
        Vec::new()
    }

    /// Esc: cancels a running task; on an idle prompt a second Esc clears the box, and on an
    /// empty box it puts back the prompt of the task just cancelled.
    fn on_esc(&mut self, now: Instant) -> Vec<Action> {
        if self.chat.is_running() {
            return self.cancel_if_running();
        }
        if self.composer.is_empty() {
            if let Some(prompt) = self.cancelled_prompt.take() {
                self.composer.set_text(prompt);
            }
            return Vec::new();
        }
        if self
            .esc_at
            .is_some_and(|t| now.duration_since(t) <= EXIT_WINDOW)
        {
            self.esc_at = None;
            self.composer.clear();
        } else {
            self.esc_at = Some(now);
            self.status.hint = Some("esc again to clear the box".into());
        }
        Vec::new()
    }

    /// The queued prompt, once no task runs any more (the run loop sends it).
    pub fn take_queued(&mut self) -> Option<Action> {
        if self.chat.is_running() || self.chat.approval.is_some() {
            return None;
        }
        let prompt = self.queued.take()?;
        Some(self.send_prompt(prompt))
    }

    fn on_ctrl_c(&mut self, now: Instant) -> Vec<Action> {
        if self.chat.is_running() {
            return self.cancel_if_running();
        }
        if !self.composer.is_empty() {
            self.composer.clear();
            return Vec::new();
        }
        if self
            .ctrl_c_at
            .is_some_and(|t| now.duration_since(t) <= EXIT_WINDOW)
        {
            return vec![Action::Quit];
        }
        self.ctrl_c_at = Some(now);
        self.status.hint = Some("press ctrl+c again to exit".into());
        Vec::new()
    }

    fn cancel_if_running(&mut self) -> Vec<Action> {
        if self.chat.is_running() {
            vec![Action::Submit(Op::Cancel)]
        } else {
            Vec::new()
        }
    }

    /// What a key does to the approval dialog; `None` when it is no dialog key (text).
    fn on_approval_key(&mut self, key: KeyEvent, a: &PendingApproval) -> Option<Vec<Action>> {
        let choices = a.choices();
        if key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
        {
            return None;
        }
        // "Always" has no letter: it takes selecting it and Enter.
        let decision = match key.code {
            KeyCode::Char('y') => Some(ApprovalDecision::AllowOnce),
            KeyCode::Char('n') => Some(ApprovalDecision::RejectOnce),
            KeyCode::Left | KeyCode::Up | KeyCode::BackTab => {
                self.approval_choice = (self.approval_choice + choices.len() - 1) % choices.len();
                None
            }
            KeyCode::Right | KeyCode::Down | KeyCode::Tab => {
                self.approval_choice = (self.approval_choice + 1) % choices.len();
                None
            }
            KeyCode::Enter => Some(choices[self.approval_choice % choices.len()]),
            _ => return None,
        };
        Some(
            decision
                .map(|decision| {
                    vec![Action::Submit(Op::Approval {
                        call_id: a.call_id.clone(),
                        decision,
                    })]
                })
                .unwrap_or_default(),
        )
    }

    fn on_enter(&mut self) -> Vec<Action> {
        let text = self.composer.text().trim().to_string();
        if text.is_empty() {
            return Vec::new();
        }
        if text.starts_with('/') {
            self.composer.submit();
            return self.command(&text);
        }
        let prompt = self.composer.submit();
        if self.chat.is_running() {
            // Sent when the task ends; Up on an empty box takes it back for editing.
            let queued = match self.queued.take() {
                Some(q) => format!("{q}\n{prompt}"),
                None => prompt,
            };
            self.queued = Some(queued);
            self.status.hint = Some("queued: sent when this task ends · up edits it".into());
            return Vec::new();
        }
        vec![self.send_prompt(prompt)]
    }

    /// The operation for a prompt: `!command` runs it, anything else is a turn.
    fn send_prompt(&mut self, prompt: String) -> Action {
        if let Some(command) = prompt.trim().strip_prefix('!') {
            return Action::Submit(Op::UserShell {
                command: command.trim().to_owned(),
            });
        }
        self.last_prompt = Some(prompt.clone());
        self.cancelled_prompt = None;
        let attached = self.mentions.attach(&prompt);
        for notice in attached.notices {
            self.notice(NoticeKind::Warning, notice);
        }
        Action::Submit(Op::UserTurn {
            prompt,
            images: Vec::new(),
            context: attached.context,
        })
    }

    /// Runs a slash command.
    pub fn command(&mut self, line: &str) -> Vec<Action> {
        let mut parts = line.splitn(2, char::is_whitespace);
        let name = parts.next().unwrap_or_default();
        let arg = parts.next().unwrap_or_default().trim();
        let info = |app: &mut Self, text: String| {
            app.chat.commit(HistoryCell::Notice(NoticeKind::Info, text));
        };
        match name {
            "/help" => info(self, HELP.to_string()),
            "/stats" => info(self, self.stats.report()),
            "/compress" | "/compact" if self.chat.is_running() => {
                self.chat.commit(HistoryCell::Notice(
                    NoticeKind::Warning,
                    "A task is running; /compress works between tasks".into(),
                ))
            }
            "/compress" | "/compact" => return vec![Action::Submit(Op::Compact)],
            "/memory" => info(self, instructions::report(&self.instructions)),
            "/mcp" => info(
                self,
                self.tools
                    .source_report()
                    .unwrap_or_else(|| NO_MCP_SERVERS.to_owned()),
            ),
            "/view" => self.view_command(arg),
            "/model" if arg.is_empty() => info(self, format!("Model: {}", self.status.model)),
            "/model" => {
                self.status.model = arg.to_string();
                info(self, format!("Model set to {arg} for later turns"));
                return vec![Action::Submit(Op::SetModel {
                    model: arg.to_string(),
                })];
            }
            // The model's history is cleared with the screen; mid-task the core would keep it,
            // so neither is cleared then.
            "/clear" if self.chat.is_running() => self.chat.commit(HistoryCell::Notice(
                NoticeKind::Warning,
                "A task is running; /clear works between tasks (Esc stops this one)".into(),
            )),
            "/clear" => {
                self.chat.clear_transcript();
                // The model's history is gone: so is what filled its context window.
                self.stats.context = None;
                self.status.context = None;
                self.queued = None;
                return vec![Action::Submit(Op::ClearHistory), Action::ClearScreen];
            }
            "/quit" | "/exit" => return vec![Action::Quit],
            "/resume" => return self.open_picker(arg),
            _ => self.chat.commit(HistoryCell::Notice(
                NoticeKind::Warning,
                format!("Unknown command {name} · /help lists the commands"),
            )),
        }
        Vec::new()
    }

    /// `/view [compact|full]`: sets the display mode (alone: toggles it), like Ctrl+O.
    fn view_command(&mut self, arg: &str) {
        let compact = match arg {
            "" => !self.chat.compact,
            "compact" => true,
            "full" => false,
            _ => {
                self.notice(
                    NoticeKind::Warning,
                    format!("Unknown view {arg:?}: use /view compact, /view full or /view alone to toggle"),
                );
                return;
            }
        };
        if compact != self.chat.compact {
            self.chat.toggle_compact();
        }
        let mode = if compact { "compact" } else { "full" };
        self.notice(NoticeKind::Info, format!("View: {mode} tool groups"));
    }

    /// `/resume [ID]`: resumes ID directly, else opens the picker over this project's sessions.
    fn open_picker(&mut self, id: &str) -> Vec<Action> {
        let Some(sessions) = self.sessions.clone() else {
            self.notice(
                NoticeKind::Warning,
                "Sessions are not available here: restart with `corvid --resume [ID]` or `corvid --continue`".into(),
            );
            return Vec::new();
        };
        if self.chat.is_running() || !id.is_empty() {
            return self.resume_action(id.to_string());
        }
        match sessions.list() {
            Ok(mut list) => {
                // A session without a prompt (opened and left) has nothing to go back to.
                list.retain(|s| s.id != self.session_id && !s.first_prompt.trim().is_empty());
                if list.is_empty() {
                    self.notice(
                        NoticeKind::Info,
                        "No earlier session of this project to resume".into(),
                    );
                } else {
                    self.picker = Some(SessionPicker::new(list));
                }
            }
            Err(e) => self.notice(NoticeKind::Error, format!("Cannot list sessions: {e}")),
        }
        Vec::new()
    }

    /// Resuming swaps the agent, so it waits until no task is running.
    fn resume_action(&mut self, id: String) -> Vec<Action> {
        if self.chat.is_running() {
            self.notice(
                NoticeKind::Warning,
                "A task is running: cancel it (esc) or let it finish before /resume".into(),
            );
            return Vec::new();
        }
        vec![Action::Resume(id)]
    }
}
