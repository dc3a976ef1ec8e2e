//! Turning a recorded session back into core events, so every front end replays a resumed
//! transcript through the same path it renders live events with.

use std::collections::HashSet;

use corvid_protocol::{
    ApprovalDecision, CoreEvent, Message, Part, Provenance, Role, StopReason, Todo, ToolDisplay,
    ToolKind, ToolOutput, ToolStatus,
};
use corvid_tools::{ToolContext, ToolRegistry};

use super::load::{INTERRUPTED_CALL, LoadedSession, UNSTARTED_CALL};
use super::record::Record;

/// The transcript of `session` as core events: tasks with their text, thoughts, finished tool
/// calls (with their final status; a rejected call's rejection just before its finish), plans
/// and summaries. No preparation events: none were recorded.
pub fn replay_events(
    session: &LoadedSession,
    tools: &ToolRegistry,
    ctx: &ToolContext,
) -> Vec<CoreEvent> {
    let mut replay = Replay {
        tools,
        ctx,
        events: Vec::new(),
        open_task: None,
        pending_calls: Vec::new(),
        started: HashSet::new(),
        rejected: HashSet::new(),
    };
    // The transcript starts after the last `/clear`; usage and settings changes count from
    // the start.
    let cleared = session.records.len() - session.since_clear().len();
    for (index, record) in session.records.iter().enumerate() {
        let in_transcript = index >= cleared;
        match record {
            Record::Usage { prompt_id, usage } => {
                replay.events.push(CoreEvent::Usage {
                    prompt_id: prompt_id.clone(),
                    usage: *usage,
                });
            }
            Record::ModelChange { from, to } => replay.events.push(CoreEvent::ModelChanged {
                from: from.clone(),
                to: to.clone(),
            }),
            Record::ApprovalModeChange { mode } => replay
                .events
                .push(CoreEvent::ApprovalModeChanged { mode: *mode }),
            Record::ReasoningEffortChange { effort } => replay
                .events
                .push(CoreEvent::ReasoningEffortChanged { effort: *effort }),
            // A subagent's steps are in its task's result; the replay shows the session's.
            Record::Header(_)
            | Record::HistoryCleared
            | Record::HistoryRewound { .. }
            | Record::SubagentMessage { .. }
            | Record::Title { .. } => {}
            _ if !in_transcript => {}
            Record::Compacted {
                summary,
                kept_messages,
                tokens_before,
                tokens_after,
            } => replay.events.push(CoreEvent::Compacted {
                summary: summary.clone(),
                kept_messages: *kept_messages,
                tokens_before: *tokens_before,
                tokens_after: *tokens_after,
            }),
            Record::Message { message } => replay.message(message),
            Record::ToolUseSummary {
                summary,
                preceding_tool_use_ids,
            } => {
                replay.events.push(CoreEvent::ToolUseSummary {
                    summary: summary.clone(),
                    preceding_tool_use_ids: preceding_tool_use_ids.clone(),
                });
            }
            Record::CallStarted { call_id } => {
                replay.started.insert(call_id.clone());
            }
            Record::CallRejected { call_id } => {
                replay.rejected.insert(call_id.clone());
            }
        }
    }
    replay.finish_task();
    replay.events
}

struct Replay<'a> {
    tools: &'a ToolRegistry,
    ctx: &'a ToolContext,
    events: Vec<CoreEvent>,
    open_task: Option<String>,
    /// Calls of the last assistant message, waiting for their results.
    pending_calls: Vec<(String, String, serde_json::Value)>,
    /// Calls recorded as started: one left without a result was interrupted mid-run.
    started: HashSet<String>,
    /// Calls the user rejected: their cards say so instead of showing the model's text.
    rejected: HashSet<String>,
}

impl Replay<'_> {
    fn message(&mut self, message: &Message) {
        let is_prompt = message.role == Role::User
            && message.parts.iter().any(|p| matches!(p, Part::Text { .. }));
        if is_prompt {
            self.finish_task();
            let task_id = format!("replay-{}", self.events.len());
            self.events.push(CoreEvent::TaskStarted {
                task_id: task_id.clone(),
                prompt: message.text(),
            });
            self.open_task = Some(task_id);
        }
        let mut finished_ids = Vec::new();
        for part in &message.parts {
            match part {
                Part::Text { text } if message.role == Role::Assistant => {
                    self.events
                        .push(CoreEvent::TextDelta { text: text.clone() });
                }
                Part::Thought { text, .. } => self
                    .events
                    .push(CoreEvent::ThoughtDelta { text: text.clone() }),
                Part::ToolCall(call) => {
                    self.pending_calls.push((
                        call.call_id.clone(),
                        call.name.clone(),
                        call.args.clone(),
                    ));
                    self.started(&call.call_id, &call.name, &call.args);
                }
                Part::ToolResult(result) => {
                    finished_ids.push(result.call_id.clone());
                    // The card shows the images the model was sent (resources are not recorded).
                    let output = ToolOutput {
                        images: result.images.clone(),
                        ..ToolOutput::text(result.output.as_str())
                    };
                    self.finished(&result.call_id, &result.name, output, result.is_error);
                }
                Part::Hosted(block) => self.events.push(block.card_event()),
                // A replayed prompt shows its text; its images stay in the history only.
                Part::Text { .. } | Part::Image(_) => {}
            }
        }
        if !finished_ids.is_empty() {
            self.pending_calls.clear();
            self.events.push(CoreEvent::BatchCompleted {
                call_ids: finished_ids,
            });
        }
    }

    fn shows_card(&self, name: &str) -> bool {
        self.tools.get(name).is_none_or(|t| t.shows_card())
    }

    /// Where the named tool comes from (MCP tools of servers still starting count as built in).
    fn provenance(&self, name: &str) -> Provenance {
        self.tools
            .get(name)
            .map_or(Provenance::Builtin, |t| t.provenance())
    }

    fn started(&mut self, call_id: &str, name: &str, args: &serde_json::Value) {
        if !self.shows_card(name) {
            if let Ok(todos) = serde_json::from_value::<Vec<Todo>>(args["todos"].clone()) {
                self.events.push(CoreEvent::Plan { todos });
            }
            return;
        }
        let display = match self.tools.get(name) {
            Some(tool) => tool.display(args, self.ctx),
            None => ToolDisplay {
                title: name.to_owned(),
                kind: ToolKind::Other,
                locations: Vec::new(),
            },
        };
        self.events.push(CoreEvent::ToolStarted {
            call_id: call_id.to_owned(),
            tool_name: name.to_owned(),
            args: args.clone(),
            display,
            provenance: self.provenance(name),
            was_prepared: false,
        });
    }

    fn finished(&mut self, call_id: &str, name: &str, output: ToolOutput, is_error: bool) {
        if !self.shows_card(name) {
            return;
        }
        if self.rejected.contains(call_id) {
            self.events.push(CoreEvent::PermissionResolved {
                call_id: call_id.to_owned(),
                decision: ApprovalDecision::RejectOnce,
            });
        }
        self.events.push(CoreEvent::ToolFinished {
            call_id: call_id.to_owned(),
            tool_name: name.to_owned(),
            status: if is_error {
                ToolStatus::Failed
            } else {
                ToolStatus::Completed
            },
            output,
            provenance: self.provenance(name),
        });
    }

    fn finish_task(&mut self) {
        // Calls recorded without results (a crash mid-batch) end failed, so no card stays
        // open; the card says what the model is told about them on resume.
        for (call_id, name, _) in std::mem::take(&mut self.pending_calls) {
            let told = if self.started.contains(&call_id) {
                INTERRUPTED_CALL
            } else {
                UNSTARTED_CALL
            };
            self.finished(&call_id, &name, ToolOutput::text(told), true);
        }
        if let Some(task_id) = self.open_task.take() {
            self.events.push(CoreEvent::TaskFinished {
                task_id,
                stop_reason: StopReason::EndTurn,
                error: None,
                pending_summaries: 0,
            });
        }
    }
}
