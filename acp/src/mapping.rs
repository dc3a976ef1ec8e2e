//! The one translation from core events to ACP frames (SPEC §6).
//!
//! Every `session/update` leaves as raw JSON params. The schema crate's typed structs omit
//! default and empty fields when serialised (`status: pending`, `kind: other`, `content: []`,
//! `locations: []`), but SPEC §6 requires them on the preparing card, so frames are built from
//! the typed structs (for field names and enum spellings) and then completed with
//! [`force_fields`] before they are sent as an untyped `session/update` notification.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol::v1::schema::Terminal;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Diff, Meta, PermissionOption, PermissionOptionKind, Plan,
    PlanEntry, PlanEntryPriority, PlanEntryStatus, RequestPermissionRequest, SessionId,
    SessionUpdate, StopReason as AcpStopReason, ToolCall, ToolCallContent, ToolCallLocation,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind as AcpToolKind, UsageUpdate,
};
use corvid_core::agent::TASK_TOOL;
use corvid_protocol::{
    ApprovalDecision, ApprovalPreview, CoreEvent, DiscardReason, FileDiff, Location, Provenance,
    StopReason, Todo, TodoStatus, ToolDisplay, ToolKind, ToolOutput, ToolStatus, Usage,
};
use corvid_tools::exit_plan_mode::EXIT_PLAN_MODE;
use serde_json::{Value, json};

use crate::card_faces::{CardFaces, Face};
use crate::task_cards::TaskCards;

/// The JSON-RPC method of session updates.
pub const SESSION_UPDATE_METHOD: &str = "session/update";
/// The extension notification carrying tool-use summaries (SPEC §6, §7.4).
pub const TOOL_USE_SUMMARY_METHOD: &str = "_corvid/tool_use_summary";

/// Permission option ids, one per [`ApprovalDecision`] the user can pick.
pub(crate) const ALLOW_ONCE: &str = "allow_once";
pub(crate) const ALLOW_ALWAYS: &str = "allow_always";
const ALLOW_SERVER_ALWAYS: &str = "allow_server_always";
pub(crate) const REJECT_ONCE: &str = "reject_once";
const REJECT_ALWAYS: &str = "reject_always";

/// A notification to send to the client: a method and its JSON params.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub method: &'static str,
    pub params: Value,
}

/// Translates one session's core events; holds what every frame needs (id, cwd).
#[derive(Debug, Clone)]
pub struct Mapper {
    session_id: SessionId,
    cwd: PathBuf,
    /// Whether the client opted in to `_corvid/tool_use_summary` (SPEC §6).
    summary_notification: bool,
    /// The client terminals shown on cards, kept on their final update.
    terminals: Arc<crate::terminal::TerminalCards>,
    /// The running `task` calls' labels and their children's steps.
    tasks: Arc<TaskCards>,
    /// What the session's own cards show, restated by later updates about them.
    faces: Arc<CardFaces>,
    /// How `ask_user` questions reach this client.
    questions: crate::questions::QuestionChannel,
}

/// A call awaiting approval, as `session/request_permission` shows it.
#[derive(Debug, Clone, Copy)]
pub struct PermissionAsk<'a> {
    pub call_id: &'a str,
    pub tool_name: &'a str,
    /// The call's complete arguments.
    pub args: &'a Value,
    pub display: &'a ToolDisplay,
    pub preview: &'a ApprovalPreview,
    /// Why it is asked when the mode alone would not ask (a protected path).
    pub reason: Option<&'a str>,
    /// What "allow always" covers (`cargo test`); `None` is the whole tool.
    pub always_scope: Option<&'a str>,
    /// The `task` call whose subagent asks, whose label then leads the title.
    pub task_call: Option<&'a str>,
    /// The MCP server of the asking tool, whose every tool a further option allows.
    pub server: Option<&'a str>,
}

impl Mapper {
    /// A mapper for this session, resolving relative locations against `cwd`.
    pub fn new(session_id: SessionId, cwd: PathBuf) -> Self {
        Self {
            session_id,
            cwd,
            summary_notification: false,
            terminals: Arc::default(),
            tasks: Arc::default(),
            faces: Arc::default(),
            questions: crate::questions::QuestionChannel::default(),
        }
    }

    /// Which cards show a client terminal (shared with the session's command host).
    pub(crate) fn terminals(&self) -> &Arc<crate::terminal::TerminalCards> {
        &self.terminals
    }

    /// The session's working folder.
    pub(crate) fn cwd(&self) -> &std::path::Path {
        &self.cwd
    }

    /// The session these frames belong to.
    pub fn session_id(&self) -> &SessionId {
        &self.session_id
    }

    /// Also sends summaries as the `_corvid/tool_use_summary` notification, for clients
    /// that asked for it in `initialize`.
    pub fn with_summary_notification(mut self, on: bool) -> Self {
        self.summary_notification = on;
        self
    }

    /// Asks `ask_user` questions the way the client's `initialize` allows.
    pub(crate) fn with_question_channel(
        mut self,
        channel: crate::questions::QuestionChannel,
    ) -> Self {
        self.questions = channel;
        self
    }

    /// How `ask_user` questions reach this client.
    pub(crate) fn question_channel(&self) -> crate::questions::QuestionChannel {
        self.questions
    }

    /// The notifications an event becomes. Events that are not frames (task boundaries,
    /// permissions, usage) are handled by the session and map to nothing here.
    pub fn frames(&self, event: &CoreEvent) -> Vec<Frame> {
        let update = match event {
            CoreEvent::TextDelta { text } => Some(json_of(&SessionUpdate::AgentMessageChunk(
                ContentChunk::new(ContentBlock::from(text.clone())),
            ))),
            CoreEvent::ThoughtDelta { text } => Some(json_of(&SessionUpdate::AgentThoughtChunk(
                ContentChunk::new(ContentBlock::from(text.clone())),
            ))),
            CoreEvent::ToolPreparing {
                call_id,
                tool_name,
                display_name,
                kind,
                provenance,
            } => {
                self.faces.show(
                    call_id,
                    Face {
                        title: display_name.clone(),
                        kind: kind_json(*kind),
                        locations: json!([]),
                        raw_input: json!({}),
                        status: json!("pending"),
                    },
                );
                Some(preparing(
                    call_id,
                    tool_name,
                    display_name,
                    *kind,
                    provenance,
                ))
            }
            CoreEvent::ToolStarted {
                call_id,
                tool_name,
                args,
                display,
                provenance,
                was_prepared,
            } => {
                if tool_name == TASK_TOOL {
                    self.tasks.started(call_id, &display.title);
                }
                self.faces
                    .show(call_id, self.face(display, args, json!("in_progress")));
                Some(self.started(call_id, tool_name, args, display, provenance, *was_prepared))
            }
            CoreEvent::ToolFinished {
                call_id,
                tool_name,
                status,
                output,
                provenance,
            } => {
                // A finished task's card shows its result instead of its child's steps.
                self.tasks.finished(call_id);
                let mut update = self.finished(call_id, tool_name, *status, output, provenance);
                self.restate_unstarted(call_id, &mut update);
                Some(update)
            }
            CoreEvent::PreparationDiscarded {
                call_id,
                tool_name,
                reason,
                provenance,
            } => {
                let shown = self.faces.forget(call_id).map(|face| face.title);
                let title = format!(
                    "{} (discarded: {})",
                    shown.as_deref().unwrap_or(tool_name),
                    discard_reason(*reason)
                );
                Some(discarded(call_id, tool_name, provenance, title))
            }
            CoreEvent::Plan { todos } => Some(plan(todos)),
            CoreEvent::ToolUseSummary {
                summary,
                preceding_tool_use_ids,
            } => return self.summary(summary, preceding_tool_use_ids),
            // A notice the user must see (recording stopped, a malformed call, the turn limit):
            // as a marked agent message, the one kind every client shows.
            CoreEvent::Warning { message } => Some(notice(message)),
            CoreEvent::Hook {
                event,
                handler,
                decision,
                reason,
                ..
            } => Some(notice(&corvid_protocol::hook_notice(
                event, handler, decision, reason,
            ))),
            CoreEvent::Compacted {
                tokens_before,
                tokens_after,
                ..
            } => Some(notice(&format!(
                "compacted the conversation ({tokens_before} → {tokens_after} tokens)"
            ))),
            CoreEvent::ContextUsage { used, window } => Some(json_of(&SessionUpdate::UsageUpdate(
                UsageUpdate::new(*used, *window),
            ))),
            CoreEvent::Subagent {
                parent_call_id,
                event,
            } => return self.subagent(parent_call_id, event),
            _ => None,
        };
        update
            .map(|update| vec![self.update_frame(update)])
            .unwrap_or_default()
    }

    /// The frames of an event replayed by `session/load`: the live frames, plus the user's
    /// prompt as a `user_message_chunk` (a live prompt is never echoed; the client sent it).
    /// Replayed calls were never prepared, so each one is a `tool_call` `in_progress` followed
    /// by its `completed` / `failed` update, exactly as a live call of a provider that does not
    /// reveal calls early.
    pub fn replay_frames(&self, event: &CoreEvent) -> Vec<Frame> {
        match event {
            CoreEvent::TaskStarted { prompt, .. } => {
                vec![self.update_frame(json_of(&SessionUpdate::UserMessageChunk(
                    ContentChunk::new(ContentBlock::from(prompt.clone())),
                )))]
            }
            other => self.frames(other),
        }
    }

    /// A label in a standard frame every client may ignore: a `tool_call_update` of each call
    /// of the batch carrying `_meta.toolUseSummary` and restating the card's title, kind and
    /// status, so a client drawing every update draws the same card again (a card no longer
    /// remembered gets no frame rather than an untitled one); the extension notification only
    /// for clients that opted in (an unknown notification made clients log errors mid-text).
    fn summary(&self, label: &str, call_ids: &[String]) -> Vec<Frame> {
        let mut frames: Vec<Frame> = call_ids
            .iter()
            .filter_map(|id| {
                let Some(face) = self.faces.get(id) else {
                    tracing::debug!(call = %id, "a label for a card no longer known; not sent");
                    return None;
                };
                Some(self.update_frame(json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": id,
                    "title": face.title,
                    "kind": face.kind,
                    "status": face.status,
                    "_meta": {"toolUseSummary": {"label": label, "toolCallIds": call_ids}},
                })))
            })
            .collect();
        if self.summary_notification {
            frames.push(Frame {
                method: TOOL_USE_SUMMARY_METHOD,
                params: json!({
                    "sessionId": self.session_id.0.as_ref(),
                    "summary": label,
                    "precedingToolUseIds": call_ids,
                }),
            });
        }
        frames
    }

    /// A subagent's own cards (run calls only: its preparations and text stay inside the
    /// `task` card), each marked `_meta.subagent` with the `task` call's id. Their ids are
    /// prefixed with it: a child's call ids are unique in the child only.
    fn subagent(&self, parent: &str, event: &CoreEvent) -> Vec<Frame> {
        let mut frames = Vec::new();
        if let CoreEvent::ToolStarted { display, .. } = event {
            // The task's own card lists what its child did so far, the latest step last.
            let steps = self.tasks.step(parent, &display.title);
            frames.push(self.update_frame(json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": parent,
                "content": [{"type": "content", "content": {"type": "text", "text": steps}}],
            })));
        }
        let card = match event {
            // Its preparation was not shown, so the card is new.
            CoreEvent::ToolStarted {
                call_id,
                tool_name,
                args,
                display,
                provenance,
                ..
            } => self.started(call_id, tool_name, args, display, provenance, false),
            CoreEvent::ToolFinished {
                call_id,
                tool_name,
                status,
                output,
                provenance,
            } => self.finished(call_id, tool_name, *status, output, provenance),
            _ => return Vec::new(),
        };
        let mut card = card;
        if let Some(id) = card["toolCallId"].as_str() {
            card["toolCallId"] = json!(corvid_protocol::subagent_call_id(parent, id));
        }
        card["_meta"]["subagent"] = json!({"parentToolCallId": parent});
        frames.push(self.update_frame(card));
        frames
    }

    fn update_frame(&self, update: Value) -> Frame {
        Frame {
            method: SESSION_UPDATE_METHOD,
            params: json!({"sessionId": self.session_id.0.as_ref(), "update": update}),
        }
    }

    /// `in_progress`: an update of the preparing card, or a new card when there was none.
    fn started(
        &self,
        call_id: &str,
        tool_name: &str,
        args: &Value,
        display: &ToolDisplay,
        provenance: &Provenance,
        was_prepared: bool,
    ) -> Value {
        let locations = self.locations(&display.locations);
        let meta = tool_meta(tool_name, provenance);
        if was_prepared {
            let fields = ToolCallUpdateFields::new()
                .status(ToolCallStatus::InProgress)
                .title(display.title.clone())
                .kind(acp_kind(display.kind))
                .locations(locations)
                .raw_input(args.clone());
            let update = ToolCallUpdate::new(call_id.to_owned(), fields).meta(meta);
            force_fields(
                json_of(&SessionUpdate::ToolCallUpdate(update)),
                &[("kind", kind_json(display.kind)), ("locations", json!([]))],
            )
        } else {
            let call = ToolCall::new(call_id.to_owned(), display.title.clone())
                .kind(acp_kind(display.kind))
                .status(ToolCallStatus::InProgress)
                .locations(locations)
                .raw_input(args.clone())
                .meta(meta);
            force_fields(
                json_of(&SessionUpdate::ToolCall(call)),
                &[
                    ("kind", kind_json(display.kind)),
                    ("content", json!([])),
                    ("locations", json!([])),
                ],
            )
        }
    }

    /// `completed` / `failed` with the output as text, edits as diffs, and the raw output.
    fn finished(
        &self,
        call_id: &str,
        tool_name: &str,
        status: ToolStatus,
        output: &ToolOutput,
        provenance: &Provenance,
    ) -> Value {
        let mut content: Vec<ToolCallContent> = output
            .diffs
            .iter()
            .map(|d| diff_content(&self.cwd, d))
            .collect();
        if content.is_empty() && !output.text.is_empty() {
            content.push(text_content(output.text.clone()));
        }
        content.extend(media::media_content(output));
        // The editor keeps showing a released terminal; the text output follows it.
        if let Some(terminal) = self.terminals.finish(call_id) {
            content.insert(0, ToolCallContent::Terminal(Terminal::new(terminal)));
        }
        let raw_output = if output.raw.is_null() {
            json!({ "output": output.text })
        } else {
            output.raw.clone()
        };
        let status = match status {
            ToolStatus::Completed => ToolCallStatus::Completed,
            ToolStatus::Failed => ToolCallStatus::Failed,
        };
        let fields = ToolCallUpdateFields::new()
            .status(status)
            .content(content)
            .raw_output(raw_output);
        let update =
            ToolCallUpdate::new(call_id.to_owned(), fields).meta(tool_meta(tool_name, provenance));
        json_of(&SessionUpdate::ToolCallUpdate(update))
    }

    /// What a card shows once its call is known in full.
    fn face(&self, display: &ToolDisplay, args: &Value, status: Value) -> Face {
        Face {
            title: display.title.clone(),
            kind: kind_json(display.kind),
            locations: json_of(&self.locations(&display.locations)),
            raw_input: args.clone(),
            status,
        }
    }

    /// The final update of a call that never went `in_progress` (rejected, or cancelled while
    /// the user was asked) restates the card's title, kind, locations and input: the client
    /// saw only the preparing card (`WriteFile`, no input) or none at all. Every final update
    /// records the card's last status for a label that may follow.
    fn restate_unstarted(&self, call_id: &str, update: &mut Value) {
        let Some(face) = self.faces.get(call_id) else {
            return;
        };
        if face.status != json!("in_progress")
            && let Some(object) = update.as_object_mut()
        {
            object.insert("title".into(), json!(face.title));
            object.insert("kind".into(), face.kind.clone());
            object.insert("locations".into(), face.locations.clone());
            object.insert("rawInput".into(), face.raw_input.clone());
        }
        let status = update["status"].clone();
        self.faces.update(call_id, |face| face.status = status);
    }

    /// Absolute locations, as ACP clients follow them.
    fn locations(&self, locations: &[Location]) -> Vec<ToolCallLocation> {
        locations
            .iter()
            .map(|l| ToolCallLocation::new(absolute(&self.cwd, &l.path)).line(l.line))
            .collect()
    }

    /// The `session/request_permission` request for a call awaiting approval. Why it is
    /// asked (when the mode alone would not ask) leads the content and is in `_meta.reason`;
    /// the "always" option names what it covers.
    pub fn permission_request(&self, ask: PermissionAsk<'_>) -> RequestPermissionRequest {
        let mut content = Vec::new();
        if let Some(reason) = ask.reason {
            content.push(text_content(format!("Asked because {reason}")));
        }
        content.push(match ask.preview {
            ApprovalPreview::Diff(diff) => diff_content(&self.cwd, diff),
            ApprovalPreview::Command { command } => text_content(command.clone()),
            ApprovalPreview::Text { text } => text_content(text.clone()),
        });
        let title = match ask.task_call {
            Some(task) => self.tasks.child_title(task, &ask.display.title),
            None => {
                // The card's final update restates what the user was asked about.
                let status = self
                    .faces
                    .get(ask.call_id)
                    .map_or_else(|| json!("pending"), |face| face.status);
                let face = self.face(ask.display, ask.args, status);
                self.faces.show(ask.call_id, face);
                ask.display.title.clone()
            }
        };
        let fields = ToolCallUpdateFields::new()
            .title(title)
            .kind(acp_kind(ask.display.kind))
            .locations(self.locations(&ask.display.locations))
            .raw_input(ask.args.clone())
            .content(content);
        let mut meta = Meta::new();
        meta.insert("toolName".into(), json!(ask.tool_name));
        if let Some(reason) = ask.reason {
            meta.insert("reason".into(), json!(reason));
        }
        if let Some(scope) = ask.always_scope {
            meta.insert("alwaysScope".into(), json!(scope));
        }
        let tool_call = ToolCallUpdate::new(ask.call_id.to_owned(), fields).meta(meta);
        let always = match ask.always_scope {
            Some(scope) => format!("Always allow `{scope}`"),
            None => "Allow always".to_owned(),
        };
        let mut options = vec![
            PermissionOption::new(ALLOW_ONCE, "Allow once", PermissionOptionKind::AllowOnce),
            PermissionOption::new(ALLOW_ALWAYS, always, PermissionOptionKind::AllowAlways),
        ];
        if let Some(server) = ask.server {
            options.push(PermissionOption::new(
                ALLOW_SERVER_ALWAYS,
                format!("Always allow every tool of server `{server}`"),
                PermissionOptionKind::AllowAlways,
            ));
        }
        options.extend([
            PermissionOption::new(REJECT_ONCE, "Reject once", PermissionOptionKind::RejectOnce),
            PermissionOption::new(
                REJECT_ALWAYS,
                "Reject always",
                PermissionOptionKind::RejectAlways,
            ),
        ]);
        let options = match ask.tool_name {
            EXIT_PLAN_MODE => crate::plan_mode::leave_options(),
            _ => options,
        };
        RequestPermissionRequest::new(self.session_id.clone(), tool_call, options)
    }
}

/// The decision matching a selected permission option; unknown ids are a rejection.
pub fn decision_for_option(option_id: &str) -> ApprovalDecision {
    match option_id {
        ALLOW_ONCE => ApprovalDecision::AllowOnce,
        ALLOW_ALWAYS => ApprovalDecision::AllowAlways,
        ALLOW_SERVER_ALWAYS => ApprovalDecision::AllowServerAlways,
        REJECT_ALWAYS => ApprovalDecision::RejectAlways,
        _ => ApprovalDecision::RejectOnce,
    }
}

/// The prompt's stop reason; `Err` carries the message of a task that failed.
pub fn stop_reason(reason: StopReason) -> Option<AcpStopReason> {
    match reason {
        StopReason::EndTurn => Some(AcpStopReason::EndTurn),
        StopReason::Cancelled => Some(AcpStopReason::Cancelled),
        StopReason::MaxTokens => Some(AcpStopReason::MaxTokens),
        StopReason::Refusal => Some(AcpStopReason::Refusal),
        StopReason::MaxTurns => Some(AcpStopReason::MaxTurnRequests),
        StopReason::Error => None,
    }
}

/// A task's main-model usage as the prompt response's `_meta.usage` (ACP v1 has no stable
/// per-turn usage field; `UsageUpdate` describes the context window, whose size we do not know).
pub fn usage_meta(usage: &Usage) -> Meta {
    let mut meta = Meta::new();
    meta.insert(
        "usage".into(),
        json!({
            "inputTokens": usage.input_tokens,
            "outputTokens": usage.output_tokens,
            "totalTokens": usage.total_tokens,
            "cachedReadTokens": usage.cached_input_tokens,
            "thoughtTokens": usage.reasoning_tokens,
        }),
    );
    meta
}

/// The transient preparing card: no arguments yet, so nothing but identity.
fn preparing(
    call_id: &str,
    tool_name: &str,
    display_name: &str,
    kind: ToolKind,
    provenance: &Provenance,
) -> Value {
    let mut meta = tool_meta(tool_name, provenance);
    meta.insert("phase".into(), json!("preparing"));
    let call = ToolCall::new(call_id.to_owned(), display_name.to_owned())
        .kind(acp_kind(kind))
        .status(ToolCallStatus::Pending)
        .raw_input(json!({}))
        .meta(meta);
    force_fields(
        json_of(&SessionUpdate::ToolCall(call)),
        &[
            ("status", json!("pending")),
            ("kind", kind_json(kind)),
            ("content", json!([])),
            ("locations", json!([])),
            ("rawInput", json!({})),
        ],
    )
}

/// "Remove this transient card": failed, no content, marked as a discarded preparation, and
/// titled with what happened for clients that keep the card (none knows the mark).
fn discarded(call_id: &str, tool_name: &str, provenance: &Provenance, title: String) -> Value {
    let mut meta = tool_meta(tool_name, provenance);
    meta.insert("phase".into(), json!("preparing"));
    meta.insert("preparationDiscarded".into(), json!(true));
    let fields = ToolCallUpdateFields::new()
        .status(ToolCallStatus::Failed)
        .title(title)
        .content(Vec::new());
    let update = ToolCallUpdate::new(call_id.to_owned(), fields).meta(meta);
    json_of(&SessionUpdate::ToolCallUpdate(update))
}

/// What a discarded card's title says happened.
fn discard_reason(reason: DiscardReason) -> &'static str {
    match reason {
        DiscardReason::Retry => "the model retried",
        DiscardReason::Fallback => "switched to the fallback model",
        DiscardReason::Cancelled => "cancelled",
        DiscardReason::StreamError => "the model's answer broke off",
    }
}

/// The whole todo list as an ACP plan (each plan update replaces the previous one).
fn plan(todos: &[Todo]) -> Value {
    let entries = todos
        .iter()
        .map(|t| {
            let status = match t.status {
                TodoStatus::Pending => PlanEntryStatus::Pending,
                TodoStatus::InProgress => PlanEntryStatus::InProgress,
                TodoStatus::Completed => PlanEntryStatus::Completed,
            };
            PlanEntry::new(t.content.clone(), PlanEntryPriority::Medium, status)
        })
        .collect();
    json_of(&SessionUpdate::Plan(Plan::new(entries)))
}

/// `_meta {toolName, provenance[, serverId]}` shared by every card frame.
fn tool_meta(tool_name: &str, provenance: &Provenance) -> Meta {
    let mut meta = Meta::new();
    meta.insert("toolName".into(), json!(tool_name));
    meta.insert("provenance".into(), json!(provenance.as_str()));
    if let Provenance::Mcp { server_id } = provenance {
        meta.insert("serverId".into(), json!(server_id));
    }
    meta
}

fn text_content(text: String) -> ToolCallContent {
    ToolCallContent::from(ContentBlock::from(text))
}

fn diff_content(cwd: &Path, diff: &FileDiff) -> ToolCallContent {
    ToolCallContent::Diff(
        Diff::new(absolute(cwd, &diff.path), diff.new_text.clone()).old_text(diff.old_text.clone()),
    )
}

fn absolute(cwd: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    }
}

fn acp_kind(kind: ToolKind) -> AcpToolKind {
    match kind {
        ToolKind::Read => AcpToolKind::Read,
        ToolKind::Edit => AcpToolKind::Edit,
        ToolKind::Delete => AcpToolKind::Delete,
        ToolKind::Move => AcpToolKind::Move,
        ToolKind::Search => AcpToolKind::Search,
        ToolKind::Execute => AcpToolKind::Execute,
        ToolKind::Think => AcpToolKind::Think,
        ToolKind::Fetch => AcpToolKind::Fetch,
        ToolKind::Other => AcpToolKind::Other,
    }
}

fn kind_json(kind: ToolKind) -> Value {
    json_of(&acp_kind(kind))
}

/// Serialises a schema value. These types are plain data with string keys, so serde_json
/// cannot fail on them; `Null` would only show up in a test's frame comparison.
/// A notice the user must see, as a marked agent message (the one kind every client shows).
fn notice(message: &str) -> Value {
    json_of(&SessionUpdate::AgentMessageChunk(ContentChunk::new(
        ContentBlock::from(format!("\n\n> corvid: {message}\n\n")),
    )))
}

fn json_of<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// Adds fields the schema crate leaves out when they hold their default value.
fn force_fields(mut update: Value, fields: &[(&str, Value)]) -> Value {
    if let Some(object) = update.as_object_mut() {
        for (key, value) in fields {
            object
                .entry((*key).to_owned())
                .or_insert_with(|| value.clone());
        }
    }
    update
}

mod media;
#[cfg(test)]
mod tests;
