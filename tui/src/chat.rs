//! The transcript state: a pure function of core events. Finished items become committed
//! [`HistoryCell`]s (printed once into scrollback); everything still changing is live state.

use std::time::{Duration, Instant};

use corvid_protocol::{
    ApprovalDecision, ApprovalPreview, CoreEvent, MAIN_PROMPT_ID, StopReason, ToolDisplay,
    ToolKind, ToolStatus,
};

use crate::cells::{HistoryCell, NoticeKind};
use crate::markdown::finished_prefix_len;
use crate::tools::{Batch, CallRow, CallState, ToolGroup, command_failed, labels_batch};

/// An approval the user still has to answer.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingApproval {
    pub call_id: String,
    pub tool_name: String,
    pub title: String,
    pub preview: ApprovalPreview,
    /// Why this call is asked about (a protected path, no sandbox), when the core says.
    pub reason: Option<String>,
    /// What "allow always" covers (`cargo test`); `None`: the whole tool.
    pub always_scope: Option<String>,
    /// The asking tool's MCP server, whose every tool one more choice allows.
    pub server: Option<String>,
}

impl PendingApproval {
    /// The choices the dialog lists, in order.
    pub fn choices(&self) -> Vec<ApprovalDecision> {
        let mut choices = vec![ApprovalDecision::AllowOnce, ApprovalDecision::AllowAlways];
        if self.server.is_some() {
            choices.push(ApprovalDecision::AllowServerAlways);
        }
        choices.push(ApprovalDecision::RejectOnce);
        choices
    }
}

/// The running task, for the live status row.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskProgress {
    pub started: Instant,
    /// Output tokens of the main model so far in this task (as the provider counted them).
    pub tokens: u64,
    /// Bytes of text and reasoning streamed since the last count: the live estimate until
    /// the turn's usage arrives.
    pub streamed: u64,
}

/// Bytes per token of the live estimate (English text and code average about four).
const BYTES_PER_TOKEN: u64 = 4;

impl TaskProgress {
    /// Output tokens so far, counting what is still streaming by estimate.
    pub fn live_tokens(&self) -> u64 {
        self.tokens
            .saturating_add(self.streamed.div_ceil(BYTES_PER_TOKEN))
    }

    fn streamed(&mut self, text: &str) {
        self.streamed = self
            .streamed
            .saturating_add(u64::try_from(text.len()).unwrap_or(u64::MAX));
    }
}

/// What the most recently committed tool group showed, to place a late label.
#[derive(Debug, Clone, PartialEq)]
struct CommittedGroup {
    batch_ids: Vec<Vec<String>>,
    compact: bool,
    labelled: bool,
}

/// Everything the transcript shows, driven by [`ChatState::on_event`].
#[derive(Debug, Clone)]
pub struct ChatState {
    /// Compact mode (SPEC §7.4): merged tool groups, no standalone label lines.
    pub compact: bool,
    transcript: Vec<HistoryCell>,
    /// Assistant text not yet committed (the unfinished block).
    pub stream: String,
    /// Reasoning not yet committed.
    pub thought: String,
    /// The tool group still in the live area.
    pub group: Option<ToolGroup>,
    pub approval: Option<PendingApproval>,
    /// The model's questions (`ask_user`) waiting for the user's answers.
    pub question: Option<crate::question::QuestionPicker>,
    pub task: Option<TaskProgress>,
    /// Summaries still expected after the task finished; the compact group waits for them.
    awaiting_summaries: u32,
    last_completed: Vec<String>,
    last_committed_group: Option<CommittedGroup>,
}

impl ChatState {
    /// An empty transcript.
    pub fn new(compact: bool) -> Self {
        Self {
            compact,
            transcript: Vec::new(),
            stream: String::new(),
            thought: String::new(),
            group: None,
            approval: None,
            question: None,
            task: None,
            awaiting_summaries: 0,
            last_completed: Vec::new(),
            last_committed_group: None,
        }
    }

    /// Every committed cell, oldest first (kept to replay the transcript at a new width).
    pub fn transcript(&self) -> &[HistoryCell] {
        &self.transcript
    }

    /// Forgets the transcript (`/clear`).
    pub fn clear_transcript(&mut self) {
        self.transcript.clear();
        self.last_committed_group = None;
    }

    /// Appends a finished cell (also used for command output such as `/help`).
    ///
    /// A finished compact group stays live (its header can still take a label) until a
    /// non-tool item is committed after it: then the group goes first.
    pub fn commit(&mut self, cell: HistoryCell) {
        let ends_group = !matches!(cell, HistoryCell::Tools(_) | HistoryCell::Summary(_));
        if ends_group
            && self
                .group
                .as_ref()
                .is_some_and(|g| g.batches.iter().all(|b| b.completed))
        {
            self.commit_group();
        }
        self.transcript.push(cell);
    }

    /// Whether a task is running.
    pub fn is_running(&self) -> bool {
        self.task.is_some()
    }

    /// Toggles compact mode; a finished live group is committed in the mode it was shown in.
    pub fn toggle_compact(&mut self) {
        if self
            .group
            .as_ref()
            .is_some_and(|g| g.batches.iter().all(|b| b.completed))
        {
            self.commit_group();
        }
        self.compact = !self.compact;
        if let Some(g) = self.group.as_mut() {
            g.compact = self.compact;
        }
    }

    /// Applies one core event.
    pub fn on_event(&mut self, ev: &CoreEvent) {
        self.on_event_at(ev, Instant::now());
    }

    /// Applies one core event that happened at `now` (tests pin the clock).
    pub fn on_event_at(&mut self, ev: &CoreEvent, now: Instant) {
        match ev {
            CoreEvent::TaskStarted { prompt, .. } => {
                self.end_live_items();
                self.commit(HistoryCell::UserPrompt(prompt.clone()));
                self.task = Some(TaskProgress {
                    started: now,
                    tokens: 0,
                    streamed: 0,
                });
                self.awaiting_summaries = 0;
            }
            // A new turn's text is a new block, never glued to the previous turn's.
            CoreEvent::TurnStarted { .. } => self.flush_stream(),
            CoreEvent::SummaryDropped { .. } => self.summary_settled(),
            CoreEvent::TextDelta { text } => {
                if let Some(t) = self.task.as_mut() {
                    t.streamed(text);
                }
                self.on_text(text);
            }
            CoreEvent::ThoughtDelta { text } => {
                if let Some(t) = self.task.as_mut() {
                    t.streamed(text);
                }
                if !self.stream.trim().is_empty() {
                    self.flush_stream();
                }
                self.thought.push_str(text);
            }
            CoreEvent::ToolPreparing {
                call_id,
                display_name,
                tool_name,
                kind,
                ..
            } => {
                let row = CallRow::new(
                    call_id,
                    tool_name,
                    display_name,
                    *kind,
                    CallState::Preparing,
                );
                self.upsert_call(row);
            }
            CoreEvent::ToolStarted {
                call_id,
                tool_name,
                display,
                ..
            } => {
                self.on_started(call_id, tool_name, display);
                if let Some(c) = self.group.as_mut().and_then(|g| g.call_mut(call_id)) {
                    c.started.get_or_insert(now);
                }
            }
            CoreEvent::PermissionRequested {
                call_id,
                tool_name,
                display,
                preview,
                reason,
                always_scope,
                server,
                ..
            } => {
                self.on_started(call_id, tool_name, display);
                if let Some(c) = self.group.as_mut().and_then(|g| g.call_mut(call_id)) {
                    c.state = CallState::AwaitingApproval;
                }
                self.mark_attention();
                self.approval = Some(PendingApproval {
                    call_id: call_id.clone(),
                    tool_name: tool_name.clone(),
                    title: display.title.clone(),
                    preview: preview.clone(),
                    reason: reason.clone(),
                    always_scope: always_scope.clone(),
                    server: server.clone(),
                });
            }
            CoreEvent::QuestionAsked { call_id, questions } => {
                self.mark_attention();
                self.question = Some(crate::question::QuestionPicker::new(
                    call_id,
                    questions.clone(),
                ));
            }
            CoreEvent::ToolOutputDelta { call_id, text } => {
                if let Some(c) = self.group.as_mut().and_then(|g| g.call_mut(call_id))
                    && c.state == CallState::Running
                {
                    c.push_live(text);
                }
            }
            CoreEvent::PermissionResolved { call_id, decision } => {
                if self
                    .approval
                    .as_ref()
                    .is_some_and(|a| &a.call_id == call_id)
                {
                    self.approval = None;
                }
                // A replayed rejection arrives for a card that shows as running.
                if let Some(c) = self.group.as_mut().and_then(|g| g.call_mut(call_id))
                    && matches!(c.state, CallState::AwaitingApproval | CallState::Running)
                {
                    c.state = match decision {
                        ApprovalDecision::RejectOnce | ApprovalDecision::RejectAlways => {
                            CallState::Rejected
                        }
                        _ => CallState::Running,
                    };
                }
            }
            CoreEvent::ToolFinished {
                call_id,
                status,
                output,
                ..
            } => {
                if self
                    .question
                    .as_ref()
                    .is_some_and(|q| &q.call_id == call_id)
                {
                    self.question = None;
                }
                let mut failed = *status == ToolStatus::Failed;
                if let Some(c) = self.group.as_mut().and_then(|g| g.call_mut(call_id))
                    && c.state != CallState::Rejected
                {
                    // A command that exited non-zero is a failure to the user.
                    failed |= c.kind == ToolKind::Execute && command_failed(output);
                    c.state = if failed {
                        CallState::Failed(output.clone())
                    } else {
                        CallState::Completed(output.clone())
                    };
                }
                if failed {
                    self.mark_attention();
                }
            }
            CoreEvent::PreparationDiscarded { call_id, .. } => self.discard(call_id),
            CoreEvent::BatchCompleted { call_ids } => self.on_batch_completed(call_ids),
            CoreEvent::ToolUseSummary {
                summary,
                preceding_tool_use_ids,
            } => {
                self.on_summary(summary, preceding_tool_use_ids);
                self.summary_settled();
            }
            // `/clear` already cleared the screen when it was typed; the footer shows the fill.
            CoreEvent::HistoryCleared | CoreEvent::ContextUsage { .. } => {}
            CoreEvent::Subagent {
                parent_call_id,
                event,
            } => self.on_subagent_event(parent_call_id, event),
            CoreEvent::Compacted {
                tokens_before,
                tokens_after,
                ..
            } => {
                self.flush_stream();
                self.flush_thought();
                self.commit(HistoryCell::Summary(format!(
                    "Compacted the conversation ({tokens_before} → {tokens_after} tokens)"
                )));
            }
            CoreEvent::Plan { todos } => {
                self.flush_stream();
                self.flush_thought();
                self.commit(HistoryCell::Plan(todos.clone()));
            }
            CoreEvent::AttemptRetried {
                attempt,
                max_attempts,
                delay_ms,
                error,
            } => {
                self.flush_stream();
                let secs = Duration::from_millis(*delay_ms).as_secs_f32();
                self.commit(HistoryCell::Notice(
                    NoticeKind::Retry,
                    format!("Retrying in {secs:.1}s (attempt {attempt}/{max_attempts}): {error}"),
                ));
            }
            // The status line shows the model and mode (`App`); `/model` says so itself.
            CoreEvent::ModelChanged { .. }
            | CoreEvent::ReasoningEffortChanged { .. }
            | CoreEvent::ApprovalModeChanged { .. } => {}
            CoreEvent::ModelFellBack { from, to, error } => {
                self.flush_stream();
                self.commit(HistoryCell::Notice(
                    NoticeKind::Retry,
                    format!("Switched from {from} to fallback model {to}: {error}"),
                ));
            }
            CoreEvent::Usage { prompt_id, usage } => {
                if let Some(t) = self.task.as_mut()
                    && prompt_id == MAIN_PROMPT_ID
                {
                    t.tokens = t.tokens.saturating_add(usage.output_tokens);
                    t.streamed = 0;
                }
            }
            // What the user sent into the task reads as their prompt, where the model read it.
            CoreEvent::Steered { prompt } => {
                self.flush_stream();
                self.flush_thought();
                self.commit(HistoryCell::UserPrompt(prompt.clone()));
            }
            CoreEvent::Rewound {
                turn,
                scope,
                report,
                error,
            } => {
                self.flush_stream();
                let text = report.describe(*turn, *scope, error.as_deref());
                self.commit(HistoryCell::Notice(NoticeKind::Info, text));
            }
            CoreEvent::Warning { message } => {
                self.flush_stream();
                self.commit(HistoryCell::Notice(NoticeKind::Warning, message.clone()));
            }
            CoreEvent::Hook {
                event,
                handler,
                decision,
                reason,
                ..
            } => {
                self.flush_stream();
                let line = corvid_protocol::hook_notice(event, handler, decision, reason);
                self.commit(HistoryCell::Notice(NoticeKind::Warning, line));
            }
            CoreEvent::TaskFinished {
                stop_reason,
                error,
                pending_summaries,
                ..
            } => self.on_task_finished(*stop_reason, error.as_ref(), *pending_summaries),
        }
    }

    fn on_text(&mut self, text: &str) {
        if !text.trim().is_empty() {
            // The answer follows the reasoning. A finished compact group stays live while the
            // text's first block streams, so a label arriving meanwhile still becomes its header.
            self.flush_thought();
        }
        self.stream.push_str(text);
        let done = finished_prefix_len(&self.stream);
        if done > 0 {
            let finished: String = self.stream.drain(..done).collect();
            if !finished.trim().is_empty() {
                self.commit(HistoryCell::Assistant(finished.trim_end().to_string()));
            }
        }
    }

    /// A step of the child agent of the `task` call `parent`: its latest call shows under the
    /// task's row, and its approvals are asked like the session's own, labelled with the task.
    fn on_subagent_event(&mut self, parent: &str, event: &CoreEvent) {
        let task = self.group.as_mut().and_then(|g| g.call_mut(parent));
        match event {
            CoreEvent::ToolStarted { display, .. } => {
                if let Some(c) = task
                    && c.state == CallState::Running
                {
                    c.live = format!("↳ {}", display.title);
                }
            }
            CoreEvent::PermissionRequested {
                call_id,
                tool_name,
                display,
                preview,
                reason,
                always_scope,
                server,
                ..
            } => {
                let task_title = task.map_or_else(|| "Task".to_owned(), |c| c.title.clone());
                self.mark_attention();
                self.approval = Some(PendingApproval {
                    call_id: corvid_protocol::subagent_call_id(parent, call_id),
                    tool_name: tool_name.clone(),
                    title: format!("{task_title}: {}", display.title),
                    preview: preview.clone(),
                    reason: reason.clone(),
                    always_scope: always_scope.clone(),
                    server: server.clone(),
                });
            }
            CoreEvent::PermissionResolved { call_id, .. }
                if self.approval.as_ref().is_some_and(|a| {
                    a.call_id == corvid_protocol::subagent_call_id(parent, call_id)
                }) =>
            {
                self.approval = None;
            }
            _ => {}
        }
    }

    fn on_started(&mut self, call_id: &str, tool_name: &str, display: &ToolDisplay) {
        let row = CallRow::new(
            call_id,
            tool_name,
            &display.title,
            display.kind,
            CallState::Running,
        );
        self.upsert_call(row);
    }

    /// Adds a call to the current batch (opening a batch or group as needed), or updates it.
    fn upsert_call(&mut self, row: CallRow) {
        if let Some(c) = self.group.as_mut().and_then(|g| g.call_mut(&row.call_id)) {
            let keep_approval = c.state == CallState::AwaitingApproval;
            c.title = row.title;
            c.kind = row.kind;
            if !keep_approval {
                c.state = row.state;
            }
            return;
        }
        self.flush_stream();
        self.flush_thought();
        let batch_open = self
            .group
            .as_ref()
            .and_then(|g| g.batches.last())
            .is_some_and(|b| !b.completed);
        if !batch_open {
            let mergeable = self.compact
                && self.awaiting_summaries == 0
                && self.group.as_ref().is_some_and(|g| !g.needs_attention());
            if !mergeable {
                self.commit_group();
            }
            let compact = self.compact;
            self.group
                .get_or_insert_with(|| ToolGroup {
                    batches: Vec::new(),
                    compact,
                })
                .batches
                .push(Batch::default());
        }
        if let Some(b) = self.group.as_mut().and_then(|g| g.batches.last_mut()) {
            b.calls.push(row);
        }
    }

    /// The current batch needs attention: it must not be merged with earlier batches.
    fn mark_attention(&mut self) {
        let Some(g) = self.group.as_mut() else { return };
        if let Some(b) = g.batches.last_mut() {
            b.attention = true;
        }
        if g.batches.len() > 1 {
            let current = g.batches.pop();
            self.commit_group();
            self.group = Some(ToolGroup {
                batches: current.into_iter().collect(),
                compact: self.compact,
            });
        }
    }

    fn discard(&mut self, call_id: &str) {
        let Some(g) = self.group.as_mut() else { return };
        for b in &mut g.batches {
            b.calls.retain(|c| c.call_id != call_id);
        }
        g.batches.retain(|b| !b.calls.is_empty());
        if g.batches.is_empty() {
            self.group = None;
        }
    }

    fn on_batch_completed(&mut self, call_ids: &[String]) {
        // A batch with no card (only `todo_write`) is not a tool group and gets no label.
        let Some(b) = self
            .group
            .as_mut()
            .and_then(|g| g.batches.iter_mut().rev().find(|b| !b.completed))
        else {
            return;
        };
        b.completed = true;
        b.completed_ids = call_ids.to_vec();
        self.last_completed = call_ids.to_vec();
        if !self.compact {
            self.commit_group();
        }
    }

    fn on_summary(&mut self, summary: &str, ids: &[String]) {
        if !labels_batch(ids, &self.last_completed) {
            return; // stale: a later batch already completed
        }
        if let Some(b) = self
            .group
            .as_mut()
            .and_then(|g| g.batches.iter_mut().find(|b| b.is_labelled_by(ids)))
            && self.compact
        {
            // Compact: the header of the live group changes in place; no standalone line.
            b.label = Some(summary.to_string());
            return;
        }
        let hidden = self.last_committed_group.as_ref().is_some_and(|c| {
            c.compact && c.labelled && c.batch_ids.iter().any(|b| labels_batch(ids, b))
        });
        if !hidden {
            self.commit(HistoryCell::Summary(summary.to_string()));
        }
    }

    fn summary_settled(&mut self) {
        if self.awaiting_summaries > 0 {
            self.awaiting_summaries -= 1;
            if self.awaiting_summaries == 0 && self.task.is_none() {
                self.commit_group();
            }
        }
    }

    fn on_task_finished(
        &mut self,
        stop: StopReason,
        error: Option<&corvid_protocol::ErrorInfo>,
        pending: u32,
    ) {
        self.flush_stream();
        self.flush_thought();
        self.approval = None;
        self.question = None;
        self.task = None;
        self.awaiting_summaries = pending;
        let keep_live = self.compact
            && pending > 0
            && self
                .group
                .as_ref()
                .is_some_and(|g| g.batches.iter().all(|b| b.completed));
        if !keep_live {
            self.commit_group();
        }
        match (stop, error) {
            (_, Some(e)) => self.commit(HistoryCell::Notice(NoticeKind::Error, e.to_string())),
            (StopReason::Cancelled, None) => self.commit(HistoryCell::Notice(
                NoticeKind::Cancelled,
                "Cancelled".into(),
            )),
            (StopReason::MaxTokens, None) => self.commit(HistoryCell::Notice(
                NoticeKind::Warning,
                "The answer hit the output token limit".into(),
            )),
            (StopReason::Refusal, None) => self.commit(HistoryCell::Notice(
                NoticeKind::Warning,
                "The model refused to answer".into(),
            )),
            (StopReason::Error, None) => self.commit(HistoryCell::Notice(
                NoticeKind::Error,
                "The task failed".into(),
            )),
            // The core's warning just before said why and what to do.
            (StopReason::EndTurn | StopReason::MaxTurns, None) => {}
        }
    }

    /// Commits every live item (a new prompt starts).
    fn end_live_items(&mut self) {
        self.flush_stream();
        self.flush_thought();
        self.commit_group();
        self.awaiting_summaries = 0;
    }

    fn flush_stream(&mut self) {
        let text = std::mem::take(&mut self.stream);
        if !text.trim().is_empty() {
            self.commit(HistoryCell::Assistant(text.trim_end().to_string()));
        }
    }

    fn flush_thought(&mut self) {
        let text = std::mem::take(&mut self.thought);
        if !text.trim().is_empty() {
            self.commit(HistoryCell::Thought(text));
        }
    }

    fn commit_group(&mut self) {
        let Some(mut g) = self.group.take() else {
            return;
        };
        g.batches.retain(|b| !b.calls.is_empty());
        if g.batches.is_empty() {
            return;
        }
        self.last_committed_group = Some(CommittedGroup {
            batch_ids: g.batches.iter().map(|b| b.completed_ids.clone()).collect(),
            compact: g.compact,
            labelled: g.label().is_some(),
        });
        self.commit(HistoryCell::Tools(g));
    }
}
