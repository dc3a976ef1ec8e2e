//! `/undo` and `/rewind` over ACP (issue 26): the preview is the agent's message, the user
//! confirms with `session/request_permission`, and the agent carries it out with
//! [`Op::Rewind`]; its `Rewound` event answers the prompt (see the pump).

use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, PermissionOption, PermissionOptionKind, PromptResponse, RequestPermissionOutcome,
    RequestPermissionRequest, StopReason as AcpStopReason, ToolCallContent, ToolCallUpdate,
    ToolCallUpdateFields, ToolKind,
};
use agent_client_protocol::{Client, UntypedMessage};
use corvid_core::agent::OpSender;
use corvid_core::checkpoints::{RewindPreview, SessionCheckpoints};
use corvid_protocol::{CoreEvent, Op};

use crate::commands::RewindAsk;
use crate::mapping::Mapper;
use crate::session::{Session, State, lock};

const REWIND: &str = "rewind";
const REWIND_OVERWRITE: &str = "rewind_overwrite";
const KEEP: &str = "keep";

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
        self.say(&preview.to_text());
        let mut options = vec![PermissionOption::new(
            REWIND,
            "Rewind",
            PermissionOptionKind::AllowOnce,
        )];
        if preview.has_conflicts() {
            options.push(PermissionOption::new(
                REWIND_OVERWRITE,
                "Rewind and overwrite my later edits",
                PermissionOptionKind::AllowOnce,
            ));
        }
        options.push(PermissionOption::new(
            KEEP,
            "Keep everything as it is",
            PermissionOptionKind::RejectOnce,
        ));
        let title = format!("Rewind to before turn {}", preview.turn);
        let fields = ToolCallUpdateFields::new()
            .title(title)
            .kind(ToolKind::Other)
            .content(vec![ToolCallContent::from(ContentBlock::from(
                preview.to_text(),
            ))]);
        let request = RequestPermissionRequest::new(
            self.mapper.session_id().clone(),
            ToolCallUpdate::new(format!("rewind-{}", preview.turn), fields),
            options,
        );
        let cancel = lock(&self.state)
            .prompt
            .as_ref()
            .map(|p| p.cancel.clone())
            .unwrap_or_default();
        let answer = tokio::select! {
            () = cancel.cancelled() => return,
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
        let overwrite_conflicts = match chosen.as_str() {
            REWIND => false,
            REWIND_OVERWRITE => true,
            _ => return self.answer("Nothing was rewound."),
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
        self.say(text);
        let Some(prompt) = lock(&self.state).prompt.take() else {
            return;
        };
        prompt.done.cancel();
        if let Err(e) = prompt
            .responder
            .respond(PromptResponse::new(AcpStopReason::EndTurn))
        {
            tracing::debug!(error = %e, "could not answer the prompt");
        }
    }
}
