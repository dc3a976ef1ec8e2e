//! The narrow interface between a session's agent loop and its hooks: one method per event
//! the loop fires, taking plain values, so the loop holds one call site per event and no
//! hook logic of its own.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use corvid_protocol::{ApprovalMode, ApprovalPreview, CoreEvent};
use corvid_tools::ApprovalNeed;
use serde_json::Value;

use super::outcome::Permission;
use super::{Decision, HookContext, HookEvent, HookOutcome, HookPayload, Hooks};

/// How many times in a row Stop handlers may keep the agent working (Claude's limit).
pub const MAX_STOP_BLOCKS: u32 = 8;

/// A session's hooks with what every event's input says about the session. Cheap to clone:
/// a subagent's copy ([`Self::for_agent`]) shares the session's state and adds its identity.
#[derive(Debug, Clone)]
pub struct SessionHooks {
    pub(super) hooks: Arc<Hooks>,
    project_dir: PathBuf,
    /// The session's id and transcript, set again when the session is recorded or resumed.
    session: Arc<Mutex<(String, Option<PathBuf>)>>,
    /// `SessionStart` context waiting for the next prompt; locked while SessionStart runs,
    /// so a prompt sent at once still waits for it.
    pub(super) start_context: Arc<tokio::sync::Mutex<Vec<String>>>,
    /// Inside a subagent: its id and type (`agent_id`, `agent_type`).
    agent: Option<(String, String)>,
}

impl SessionHooks {
    /// `project_dir` is where handlers run (`CLAUDE_PROJECT_DIR`).
    pub fn new(hooks: Hooks, session_id: String, project_dir: PathBuf) -> Self {
        Self {
            hooks: Arc::new(hooks),
            project_dir,
            session: Arc::new(Mutex::new((session_id, None))),
            start_context: Arc::default(),
            agent: None,
        }
    }

    /// Names the session's id and its transcript file (`transcript_path`), once the recording
    /// exists (or a resumed session's id replaced the new one).
    pub fn attach(&self, session_id: &str, transcript: Option<&Path>) {
        let mut session = self.session.lock().unwrap_or_else(|p| p.into_inner());
        *session = (session_id.to_owned(), transcript.map(Path::to_owned));
    }

    /// The hooks of a subagent `id` of type `kind`: every input carries `agent_id` and
    /// `agent_type`, and its end is `SubagentStop`.
    pub fn for_agent(&self, id: &str, kind: &str) -> Self {
        Self {
            agent: Some((id.to_owned(), kind.to_owned())),
            ..self.clone()
        }
    }

    /// Whether these are a subagent's hooks.
    pub fn in_agent(&self) -> bool {
        self.agent.is_some()
    }

    pub(super) fn context(&self, cwd: &Path, mode: ApprovalMode) -> HookContext {
        let (session_id, transcript_path) = self
            .session
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        HookContext {
            session_id,
            transcript_path,
            project_dir: self.project_dir.clone(),
            cwd: cwd.to_owned(),
            approval_mode: mode,
            agent: self.agent.clone(),
        }
    }

    /// Runs `payload`'s handlers; each runs at most `budget` when one is given.
    pub(super) async fn fire(
        &self,
        cwd: &Path,
        mode: ApprovalMode,
        payload: &HookPayload,
        budget: Option<Duration>,
    ) -> HookOutcome {
        self.hooks
            .run_within(&self.context(cwd, mode), payload, budget)
            .await
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
        self.fire(cwd, mode, &payload, None).await
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
        self.fire(cwd, mode, &payload, None).await
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
        self.fire(cwd, mode, &payload, None).await
    }

    /// `Stop` (`SubagentStop` inside a subagent): the agent is about to end its turn; `active`
    /// after a stop handler kept it going.
    pub async fn stop(
        &self,
        cwd: &Path,
        mode: ApprovalMode,
        active: bool,
        last_message: Option<&str>,
    ) -> HookOutcome {
        let event = if self.agent.is_some() {
            HookEvent::SubagentStop
        } else {
            HookEvent::Stop
        };
        let mut payload = HookPayload::new(event)
            .with("stop_hook_active", Value::Bool(active))
            .with(
                "last_assistant_message",
                last_message.map_or(Value::Null, Value::from),
            );
        if let Some((_, kind)) = &self.agent {
            // The subagent's messages are recorded in the session's transcript.
            let ctx = self.context(cwd, mode);
            let transcript = ctx
                .transcript_path
                .map(|p| p.to_string_lossy().into_owned());
            payload = payload.matching(kind).with(
                "agent_transcript_path",
                transcript.map_or(Value::Null, Value::from),
            );
        }
        self.fire(cwd, mode, &payload, None).await
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
                ApprovalNeed::Edit(p) | ApprovalNeed::Execute(p) | ApprovalNeed::Sandboxed(p) => p,
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

/// What the user is shown of an outcome: one [`CoreEvent::Hook`] per block, permission
/// decision, failure, output problem and `systemMessage` of each handler; empty when no
/// handler said anything.
pub fn hook_events(outcome: &HookOutcome) -> Vec<CoreEvent> {
    let mut events = Vec::new();
    for report in &outcome.reports {
        let effect = &report.effect;
        let event = |decision: &str, reason: &str| CoreEvent::Hook {
            event: outcome.event.as_str().to_owned(),
            handler: report.handler.command.clone(),
            decision: decision.to_owned(),
            reason: reason.to_owned(),
            duration_ms: u64::try_from(report.duration.as_millis()).unwrap_or(u64::MAX),
        };
        if let Some(reason) = &effect.block {
            events.push(event("block", reason));
        }
        match &effect.permission {
            Some(Permission::Deny(r)) => events.push(event("block", r)),
            Some(Permission::Ask(r)) => events.push(event("ask", r)),
            Some(Permission::Allow(r)) => events.push(event("allow", r)),
            None => {}
        }
        if let Some(failure) = &effect.failure {
            let went_ahead = format!("{failure}; {} went ahead", outcome.event);
            events.push(event("failed", &went_ahead));
        }
        for warning in &report.warnings {
            events.push(event("warning", warning));
        }
        if let Some(reason) = &effect.stop {
            events.push(event("stop", reason));
        }
        if let Some(message) = &effect.system_message {
            events.push(event("message", message));
        }
    }
    events
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
