//! `/undo`, `/rewind` and `/branch` over ACP (issues 26 and 30): the preview is the agent's message, the user
//! confirms with `session/request_permission`, and the agent carries it out with
//! [`Op::Rewind`]; its `Rewound` event answers the prompt (see the pump).

use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, Meta, PermissionOption, PermissionOptionKind, PromptResponse,
    RequestPermissionOutcome, RequestPermissionRequest, StopReason as AcpStopReason,
    ToolCallContent, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use agent_client_protocol::{Client, UntypedMessage};
use corvid_core::agent::OpSender;
use corvid_core::checkpoints::{RewindPreview, SessionCheckpoints};
use corvid_core::session::{ForkAt, fork_session};
use corvid_protocol::{CoreEvent, Op, RewindScope};

use crate::commands::RewindAsk;
use crate::mapping::Mapper;
use crate::session::{Session, State, lock};

const REWIND: &str = "rewind";
const REWIND_OVERWRITE: &str = "rewind_overwrite";
const KEEP: &str = "keep";

/// What a preview is asked for.
#[derive(Clone, Copy)]
enum Verb {
    Rewind,
    Branch,
}

impl Verb {
    fn id(self) -> &'static str {
        match self {
            Verb::Rewind => "rewind",
            Verb::Branch => "branch",
        }
    }
}

/// What the user answered to a preview.
enum Answer {
    Go {
        overwrite_conflicts: bool,
    },
    Keep,
    /// The prompt was cancelled (`session/cancel`); its answer comes from there.
    Cancelled,
}

/// What the background task needs of the session.
struct Ctx {
    ops: OpSender,
    state: Arc<Mutex<State>>,
    mapper: Mapper,
    cx: ConnectionTo<Client>,
}

/// Starts answering `/undo` or `/rewind` for the prompt just registered in the session.
pub(crate) fn start(session: &Session, ask: RewindAsk) {
    let ctx = Ctx {
        ops: session.ops.clone(),
        state: session.state.clone(),
        mapper: session.mapper.clone(),
        cx: session.cx.clone(),
    };
    let checkpoints = session.checkpoints.clone();
    tokio::spawn(async move {
        let Some(checkpoints) = checkpoints else {
            return ctx.answer(
                "Checkpoints are off in this session (`checkpoints.enabled`), so nothing can be \
                 undone.",
            );
        };
        match ask {
            RewindAsk::List => {
                let listed = tokio::task::spawn_blocking(move || list(&checkpoints))
                    .await
                    .unwrap_or_else(|e| format!("Cannot list the turns: {e}"));
                ctx.answer(&listed);
            }
            RewindAsk::To { turn, scope } => {
                let previewed = tokio::task::spawn_blocking(move || {
                    let turn = match turn {
                        Some(turn) => turn,
                        None => checkpoints.last_turn()?,
                    };
                    checkpoints.preview(turn, scope)
                })
                .await
                .map_err(|e| e.to_string())
                .and_then(|r| r.map_err(|e| e.to_string()));
                match previewed {
                    Ok(preview) => ctx.confirm(preview).await,
                    Err(e) => ctx.answer(&format!("Nothing was rewound: {e}")),
                }
            }
        }
    });
}

/// Starts answering `/branch [N]` for the prompt just registered in the session: the fork is
/// written (after the preview and a yes when it goes back to turn N, whose files are
/// restored first), and the answer names its id, in the text and in the prompt answer's
/// `_meta.corvid.forkedSessionId`, for `session/load`.
pub(crate) fn start_branch(session: &Session, turn: Option<u32>) {
    let ctx = Ctx {
        ops: session.ops.clone(),
        state: session.state.clone(),
        mapper: session.mapper.clone(),
        cx: session.cx.clone(),
    };
    let checkpoints = session.checkpoints.clone();
    let store = session.store.clone();
    let cwd = session.mapper.cwd().to_path_buf();
    let parent = session.mapper.session_id().0.to_string();
    tokio::spawn(async move {
        let Some(store) = store else {
            return ctx.answer(
                "Nothing was branched: this corvid records no sessions (no home directory; set \
                 CORVID_HOME).",
            );
        };
        let at = match turn {
            None => None,
            Some(turn) => {
                let Some(checkpoints) = checkpoints else {
                    return ctx.answer(
                        "Nothing was branched: checkpoints are off in this session, so `/branch \
                         N` cannot restore files; `/branch` forks the whole conversation.",
                    );
                };
                let cps = checkpoints.clone();
                let previewed =
                    tokio::task::spawn_blocking(move || cps.preview(turn, RewindScope::Code))
                        .await
                        .map_err(|e| e.to_string())
                        .and_then(|r| r.map_err(|e| e.to_string()));
                let preview = match previewed {
                    Ok(preview) => preview,
                    Err(e) => return ctx.answer(&format!("Nothing was branched: {e}")),
                };
                match ctx.ask(&preview, Verb::Branch).await {
                    Answer::Go {
                        overwrite_conflicts,
                    } => Some((checkpoints, preview, overwrite_conflicts)),
                    Answer::Keep => return ctx.answer("Nothing was branched."),
                    Answer::Cancelled => return,
                }
            }
        };
        let child = uuid::Uuid::new_v4().to_string();
        let id = child.clone();
        let made = tokio::task::spawn_blocking(move || {
            let loaded = store.load(&cwd, &parent).map_err(|e| e.to_string())?;
            let fork_at = at.as_ref().map(|(checkpoints, preview, overwrite)| ForkAt {
                checkpoints,
                preview,
                overwrite_conflicts: *overwrite,
            });
            fork_session(&store, &loaded, &id, fork_at)
                .map(|forked| (parent, forked.restored))
                .map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r);
        match made {
            Ok((parent, restored)) => {
                let mut text = String::new();
                if let (Some(turn), Some(report)) = (turn, &restored) {
                    text.push_str(&report.describe(turn, RewindScope::Code, None));
                    text.push('\n');
                }
                text.push_str(&format!(
                    "Branched: the new session {child} is a fork of this one ({parent}), which \
                     is kept as it is. Open it with session/load (id {child}) to go on there."
                ));
                let mut meta = Meta::new();
                meta.insert(
                    "corvid".into(),
                    serde_json::json!({"forkedSessionId": child, "forkedFrom": parent}),
                );
                ctx.answer_with(&text, Some(meta));
            }
            Err(e) => ctx.answer(&format!("Nothing was branched: {e}")),
        }
    });
}

/// The earlier turns, with what each changed, as the agent's message.
fn list(checkpoints: &SessionCheckpoints) -> String {
    let turns = match checkpoints.turns() {
        Ok(turns) => turns,
        Err(e) => return format!("Cannot list the turns: {e}"),
    };
    if turns.is_empty() {
        return "No turn of this session can be undone yet.".into();
    }
    let mut out = String::from("Earlier turns (`/rewind N [code|conversation|both]`):\n");
    for t in turns {
        let files: Vec<String> = t
            .changes
            .iter()
            .map(|c| c.path.display().to_string())
            .collect();
        let changed = if files.is_empty() {
            "no file changes".to_owned()
        } else {
            files.join(", ")
        };
        out.push_str(&format!("{}. {} ({changed})\n", t.turn, t.prompt));
    }
    out
}

impl Ctx {
    /// Shows the preview, asks, and on a yes hands the rewind to the agent.
    async fn confirm(&self, preview: RewindPreview) {
        let overwrite_conflicts = match self.ask(&preview, Verb::Rewind).await {
            Answer::Go {
                overwrite_conflicts,
            } => overwrite_conflicts,
            Answer::Keep => return self.answer("Nothing was rewound."),
            Answer::Cancelled => return,
        };
        let op = Op::Rewind {
            turn: preview.turn,
            scope: preview.scope,
            overwrite_conflicts,
        };
        if self.ops.submit(op).is_err() {
            self.answer(crate::session::AGENT_GONE);
        }
    }

    /// Shows the preview of a rewind (or of a branch's file restore) as the agent's message
    /// and asks with `session/request_permission`.
    async fn ask(&self, preview: &RewindPreview, verb: Verb) -> Answer {
        self.say(&preview.to_text());
        let (go, go_overwrite, title) = match verb {
            Verb::Rewind => (
                "Rewind",
                "Rewind and overwrite my later edits",
                format!("Rewind to before turn {}", preview.turn),
            ),
            Verb::Branch => (
                "Branch",
                "Branch and overwrite my later edits",
                format!("Branch from before turn {}", preview.turn),
            ),
        };
        let mut options = vec![PermissionOption::new(
            REWIND,
            go,
            PermissionOptionKind::AllowOnce,
        )];
        if preview.has_conflicts() {
            options.push(PermissionOption::new(
                REWIND_OVERWRITE,
                go_overwrite,
                PermissionOptionKind::AllowOnce,
            ));
        }
        options.push(PermissionOption::new(
            KEEP,
            "Keep everything as it is",
            PermissionOptionKind::RejectOnce,
        ));
        let fields = ToolCallUpdateFields::new()
            .title(title)
            .kind(ToolKind::Other)
            .content(vec![ToolCallContent::from(ContentBlock::from(
                preview.to_text(),
            ))]);
        let request = RequestPermissionRequest::new(
            self.mapper.session_id().clone(),
            ToolCallUpdate::new(format!("{}-{}", verb.id(), preview.turn), fields),
            options,
        );
        let cancel = lock(&self.state)
            .prompt
            .as_ref()
            .map(|p| p.cancel.clone())
            .unwrap_or_default();
        let answer = tokio::select! {
            () = cancel.cancelled() => return Answer::Cancelled,
            answer = self.cx.send_request(request).block_task() => answer,
        };
        let chosen = match answer {
            Ok(response) => match response.outcome {
                RequestPermissionOutcome::Selected(selected) => selected.option_id.0.to_string(),
                _ => KEEP.to_owned(),
            },
            Err(e) => {
                tracing::warn!(error = %e, "the rewind's permission request failed");
                KEEP.to_owned()
            }
        };
        match chosen.as_str() {
            REWIND => Answer::Go {
                overwrite_conflicts: false,
            },
            REWIND_OVERWRITE => Answer::Go {
                overwrite_conflicts: true,
            },
            _ => Answer::Keep,
        }
    }

    /// Sends `text` as the agent's message.
    fn say(&self, text: &str) {
        let frames = self.mapper.frames(&CoreEvent::TextDelta {
            text: text.to_owned(),
        });
        for frame in frames {
            let sent = UntypedMessage::new(frame.method, frame.params)
                .and_then(|m| self.cx.send_notification(m));
            if let Err(e) = sent {
                tracing::debug!(error = %e, "could not send the rewind's message");
            }
        }
    }

    /// Sends `text` and ends the prompt.
    fn answer(&self, text: &str) {
        self.answer_with(text, None);
    }

    /// Sends `text` and ends the prompt with `meta` in the answer's `_meta`.
    fn answer_with(&self, text: &str, meta: Option<Meta>) {
        self.say(text);
        let Some(prompt) = lock(&self.state).prompt.take() else {
            return;
        };
        prompt.done.cancel();
        if let Err(e) = prompt
            .responder
            .respond(PromptResponse::new(AcpStopReason::EndTurn).meta(meta))
        {
            tracing::debug!(error = %e, "could not answer the prompt");
        }
    }
}
