//! The narrow interface between a session's agent loop and its hooks: one method per event
//! the loop fires, taking plain values, so the loop holds one call site per event and no
//! hook logic of its own.

use std::path::{Path, PathBuf};

use corvid_protocol::{ApprovalMode, ApprovalPreview};
use corvid_tools::ApprovalNeed;
use serde_json::Value;

use super::{Decision, HookContext, HookEvent, HookOutcome, HookPayload, Hooks};

/// How many times in a row Stop handlers may keep the agent working (Claude's limit).
pub const MAX_STOP_BLOCKS: u32 = 8;

/// A session's hooks with what every event's input says about the session.
#[derive(Debug)]
pub struct SessionHooks {
    hooks: Hooks,
    session_id: String,
    project_dir: PathBuf,
}

impl SessionHooks {
    /// `project_dir` is where handlers run (`CLAUDE_PROJECT_DIR`).
    pub fn new(hooks: Hooks, session_id: String, project_dir: PathBuf) -> Self {
        Self {
            hooks,
            session_id,
            project_dir,
        }
    }

    fn context(&self, cwd: &Path, mode: ApprovalMode) -> HookContext {
        HookContext {
            session_id: self.session_id.clone(),
            transcript_path: None,
            project_dir: self.project_dir.clone(),
            cwd: cwd.to_owned(),
            approval_mode: mode,
            agent: None,
        }
    }

    /// `PreToolUse` for corvid's tool `name` called with `input`.
    pub async fn pre_tool_use(
        &self,
        cwd: &Path,
        mode: ApprovalMode,
        name: &str,
        call_id: &str,
        input: &Value,
    ) -> HookOutcome {
        let payload = HookPayload::tool(HookEvent::PreToolUse, name, call_id, input, cwd);
        self.hooks.run(&self.context(cwd, mode), &payload).await
    }

    /// `PostToolUse` (or `PostToolUseFailure` when `failed`) after the call's result.
    #[allow(clippy::too_many_arguments)] // each is one field of the event's input
    pub async fn post_tool_use(
        &self,
        cwd: &Path,
        mode: ApprovalMode,
        name: &str,
        call_id: &str,
        input: &Value,
        response: &str,
        failed: bool,
    ) -> HookOutcome {
        let (event, key) = if failed {
            (HookEvent::PostToolUseFailure, "error")
        } else {
            (HookEvent::PostToolUse, "tool_response")
        };
        let payload =
            HookPayload::tool(event, name, call_id, input, cwd).with(key, Value::from(response));
        self.hooks.run(&self.context(cwd, mode), &payload).await
    }

    /// `UserPromptSubmit`: the user's prompt, before the model sees it.
    pub async fn user_prompt_submit(
        &self,
        cwd: &Path,
        mode: ApprovalMode,
        prompt: &str,
    ) -> HookOutcome {
        let payload =
            HookPayload::new(HookEvent::UserPromptSubmit).with("prompt", Value::from(prompt));
        self.hooks.run(&self.context(cwd, mode), &payload).await
    }

    /// `Stop`: the agent is about to end its turn; `active` after a Stop handler kept it going.
    pub async fn stop(
        &self,
        cwd: &Path,
        mode: ApprovalMode,
        active: bool,
        last_message: Option<&str>,
    ) -> HookOutcome {
        let payload = HookPayload::new(HookEvent::Stop)
            .with("stop_hook_active", Value::Bool(active))
            .with(
                "last_assistant_message",
                last_message.map_or(Value::Null, Value::from),
            );
        self.hooks.run(&self.context(cwd, mode), &payload).await
    }
}

/// What a PreToolUse decision does to the call's approval: `Ask` asks in every mode (as an
/// escalated call: deny rules still refuse first); `Allow` is returned as `true` so the
/// approval skips only its prompt; the rest leaves `need` as it is.
pub fn gate_approval(decision: &Decision, need: ApprovalNeed, title: &str) -> (ApprovalNeed, bool) {
    match (decision, need) {
        (Decision::Ask(reason), need) => {
            let preview = match need {
                ApprovalNeed::Refuse(err) => return (ApprovalNeed::Refuse(err), false),
                ApprovalNeed::Edit(p) | ApprovalNeed::Execute(p) => p,
                ApprovalNeed::Escalated { preview, .. } => preview,
                ApprovalNeed::None => ApprovalPreview::Text {
                    text: title.to_owned(),
                },
            };
            let reason = if reason.is_empty() {
                "a hook asks for your approval".to_owned()
            } else {
                format!("a hook asks for your approval: {reason}")
            };
            (ApprovalNeed::Escalated { preview, reason }, false)
        }
        (Decision::Allow(_), need) => (need, true),
        (Decision::Proceed | Decision::Block(_), need) => (need, false),
    }
}

/// What the user is shown of an outcome: each block, failure, output problem and
/// `systemMessage`, one line each, naming the event. Empty when nothing is worth a notice.
pub fn notices(outcome: &HookOutcome) -> Vec<String> {
    let event = outcome.event;
    let mut lines = Vec::new();
    if let Decision::Block(reason) = &outcome.decision {
        lines.push(format!("hook: {event} blocked: {reason}"));
    }
    lines.extend(
        outcome
            .warnings
            .iter()
            .map(|w| format!("hook: {event}: {w}")),
    );
    lines.extend(
        outcome
            .system_messages
            .iter()
            .map(|m| format!("hook: {event}: {m}")),
    );
    lines
}

/// What a PostToolUse outcome adds to the call's result for the model: a block's reason and
/// each handler's `additionalContext`; `None` when it adds nothing.
pub fn post_tool_note(outcome: &HookOutcome) -> Option<String> {
    let event = outcome.event;
    let mut note = String::new();
    if let Decision::Block(reason) = &outcome.decision {
        note.push_str(&format!("\n\n{event} hook feedback: {reason}"));
    }
    for context in &outcome.context {
        note.push_str(&format!("\n\n{event} hook context: {context}"));
    }
    (!note.is_empty()).then_some(note)
}

/// The tool result of a call a PreToolUse hook refused.
pub fn blocked_call_message(name: &str, reason: &str) -> String {
    format!("A PreToolUse hook blocked this `{name}` call; it did not run. The hook says: {reason}")
}
