//! Keys: editing the prompt, sending and queueing it, cancelling, and answering approvals.

use std::time::Instant;

use corvid_protocol::{ApprovalDecision, Op};
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::{Action, App, EXIT_WINDOW};
use crate::cells::NoticeKind;
use crate::chat::PendingApproval;
use crate::picker::PickerOutcome;
use crate::question::QuestionKey;
use crate::transcript::{TranscriptView, ViewKey};

impl App {
    /// Handles one key press.
    pub fn on_key(&mut self, key: KeyEvent, now: Instant) -> Vec<Action> {
        let actions = self.on_key_inner(key, now);
        self.refresh_mentions();
        actions
    }

    fn on_key_inner(&mut self, key: KeyEvent, now: Instant) -> Vec<Action> {
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
        if let Some(picker) = self.model_picker.as_mut() {
            return match picker.on_key(key) {
                PickerOutcome::Open => Vec::new(),
                PickerOutcome::Closed => {
                    self.model_picker = None;
                    Vec::new()
                }
                PickerOutcome::Chosen(model) => {
                    self.model_picker = None;
                    self.use_model(Some(model), None, "")
                }
            };
        }
        if self.rewind.is_some() {
            return self.on_rewind_key(key);
        }
        if self.chat.question.is_some() && !self.approval_armed(now) {
            // Typing that was meant for the prompt box: ignored, and the picker waits until
            // the typing pauses.
            self.approval_armed_at = Some(now + super::APPROVAL_GUARD);
            return Vec::new();
        }
        if let Some(question) = self.chat.question.as_mut() {
            return match question.on_key(key) {
                QuestionKey::Open => Vec::new(),
                QuestionKey::Reply(reply) => {
                    let call_id = question.call_id.clone();
                    self.chat.question = None;
                    vec![Action::Submit(Op::AnswerQuestion { call_id, reply })]
                }
            };
        }
        if let Some(view) = self.transcript_view.as_mut() {
            let page = usize::from(self.screen_rows).saturating_sub(1);
            if view.on_key(key, page) == ViewKey::Close {
                self.transcript_view = None;
            }
            return Vec::new();
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
            self.transcript_view = Some(TranscriptView::default());
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
        if std::mem::take(&mut self.ctrl_x) && ctrl && key.code == KeyCode::Char('e') {
            return vec![Action::Edit(self.composer.text().to_owned())];
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
        if let Some(actions) = self.on_popup_key(key) {
            return actions;
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
            KeyCode::Char('s') if ctrl => return self.steer(),
            KeyCode::Char('l') if ctrl => return vec![Action::ClearScreen],
            KeyCode::Char('g') if ctrl => return vec![Action::Edit(c.text().to_owned())],
            KeyCode::Char('x') if ctrl => self.ctrl_x = true,
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

    /// Up/Down choose in the slash-command popup, Tab completes the choice, Enter runs it
    /// (or completes it when it takes an argument). `None`: not a popup key.
    fn on_popup_key(&mut self, key: KeyEvent) -> Option<Vec<Action>> {
        if !self.mention_matches.is_empty() && key.modifiers.is_empty() {
            let n = self.mention_matches.len();
            let choice = self.mention_choice.min(n - 1);
            match key.code {
                KeyCode::Up => self.mention_choice = (choice + n - 1) % n,
                KeyCode::Down => self.mention_choice = (choice + 1) % n,
                KeyCode::Tab | KeyCode::Enter => {
                    if let Some((start, _)) = self.composer.at_word() {
                        let path = format!("@{}", self.mention_matches[choice]);
                        self.composer.replace_to_cursor(start, &path);
                        // A folder stays open: the popup goes on with what is inside it.
                        if !path.ends_with('/') {
                            self.mention_done = Some(self.composer.text().to_owned());
                        }
                    }
                }
                _ => return None,
            }
            return Some(Vec::new());
        }
        let popup = self.command_popup();
        if popup.is_empty() || !key.modifiers.is_empty() {
            if popup.is_empty() {
                self.command_choice = 0;
            }
            return None;
        }
        let choice = self.command_choice.min(popup.len() - 1);
        let entry = &popup[choice];
        let (name, arg) = (entry.name.as_str(), entry.arg.as_str());
        match key.code {
            KeyCode::Up => self.command_choice = (choice + popup.len() - 1) % popup.len(),
            KeyCode::Down => self.command_choice = (choice + 1) % popup.len(),
            KeyCode::Tab => self.composer.set_text(format!("{name} ")),
            KeyCode::Enter if self.composer.text() == name => return None,
            KeyCode::Enter if arg.is_empty() || arg.starts_with('[') => {
                self.composer.set_text(name.to_owned());
                self.command_choice = 0;
                return None;
            }
            KeyCode::Enter => self.composer.set_text(format!("{name} ")),
            _ => return None,
        }
        Some(Vec::new())
    }

    fn end_search(&mut self, keep: bool) -> Vec<Action> {
        self.composer.end_search(keep);
        Vec::new()
    }

    /// Esc: cancels a running task; on an idle prompt a second Esc clears the box, and on an
    /// empty box it puts back the prompt of the task just cancelled, or else a second Esc
    /// opens the `/rewind` picker.
    fn on_esc(&mut self, now: Instant) -> Vec<Action> {
        if self.chat.is_running() {
            return self.cancel_if_running();
        }
        let again = self
            .esc_at
            .is_some_and(|t| now.duration_since(t) <= EXIT_WINDOW);
        if self.composer.is_empty() {
            if let Some(prompt) = self.cancelled_prompt.take() {
                self.composer.set_text(prompt);
                return Vec::new();
            }
            // Esc Esc on an empty box goes back to an earlier prompt.
            if again {
                self.esc_at = None;
                return self.rewind_command("");
            }
            self.esc_at = Some(now);
            if self.checkpoints.is_some() {
                self.status.hint = Some("esc again to rewind to an earlier prompt".into());
            }
            return Vec::new();
        }
        if again {
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
        self.status.hint = None;
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
            self.status.hint = Some(
                "queued: sent when this task ends · ctrl+s sends it into the task · up edits it"
                    .into(),
            );
            return Vec::new();
        }
        vec![self.send_prompt(prompt)]
    }

    /// Ctrl+S: the prompt in the box (or, with the box empty, the queued one) goes into the
    /// running task, which reads it after its running tool calls. Idle, it is sent as Enter.
    fn steer(&mut self) -> Vec<Action> {
        if !self.chat.is_running() {
            return self.on_enter();
        }
        // Only a model's task reads prompts (not a `!command` or `/compress`).
        if self.last_prompt.is_none() {
            self.status.hint =
                Some("this task reads no prompts: enter queues one for after it".into());
            return Vec::new();
        }
        let prompt = if self.composer.text().trim().is_empty() {
            match self.queued.take() {
                Some(q) => q,
                None => return Vec::new(),
            }
        } else if self.composer.text().trim().starts_with(['/', '!']) {
            self.status.hint =
                Some("commands and !shell wait for the task: enter queues them".into());
            return Vec::new();
        } else {
            self.composer.submit()
        };
        self.resumable = true;
        self.status.hint = Some("sent into the task: read after its running tools".into());
        self.steering.push(prompt.clone());
        vec![Action::Submit(Op::Steer { prompt })]
    }

    /// The operation for a prompt: `!command` runs it, anything else is a turn.
    pub(super) fn send_prompt(&mut self, prompt: String) -> Action {
        self.resumable = true;
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
}
