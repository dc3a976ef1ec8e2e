//! `ask_user` in the loop: the call's checked questions go to the front end as
//! [`CoreEvent::QuestionAsked`], the answer comes back as [`Op::AnswerQuestion`], and becomes
//! the call's result. Dismissing the questions cancels the task. The one interface between
//! the loop and front ends for questions; the tool itself (`corvid_tools::ask_user`) checks
//! the questions and words the answers.
//!
//! [`Op::AnswerQuestion`]: corvid_protocol::Op::AnswerQuestion

use std::collections::HashMap;
use std::sync::Mutex;

use corvid_protocol::{CoreEvent, QuestionReply, ToolOutput};
use corvid_tools::ToolError;
use corvid_tools::ask_user::{ASK_USER, answers_output, questions_of};
use serde_json::Value;
use tokio::sync::oneshot;

use super::AgentConfig;
use super::session::{TaskCtx, lock};

/// What the model is told when nobody can answer questions (headless without `--answers`).
const NO_QUESTIONS_NOTE: &str = "\n\nThis run is non-interactive: nobody can answer \
     questions, so the ask_user tool is not available. When something is ambiguous, make the \
     most reasonable choice and say what you assumed.";

/// The questions waiting for the user, by call id.
#[derive(Default)]
pub(super) struct PendingQuestions {
    waiting: Mutex<HashMap<String, oneshot::Sender<QuestionReply>>>,
}

impl PendingQuestions {
    /// Hands the reply to the call waiting for it; false when none waits.
    pub(super) fn answer(&self, call_id: &str, reply: QuestionReply) -> bool {
        match lock(&self.waiting).remove(call_id) {
            Some(tx) => tx.send(reply).is_ok(),
            None => false,
        }
    }
}

/// Asks the user the call's questions and returns their answers as the call's result.
pub(super) async fn ask(
    ctx: &TaskCtx,
    call_id: &str,
    args: &Value,
) -> Result<ToolOutput, ToolError> {
    let questions = questions_of(args)?;
    let (tx, rx) = oneshot::channel();
    lock(&ctx.shared.questions.waiting).insert(call_id.to_owned(), tx);
    ctx.events.emit(CoreEvent::QuestionAsked {
        call_id: call_id.to_owned(),
        questions: questions.clone(),
    });
    let reply = tokio::select! {
        biased;
        _ = ctx.cancel.cancelled() => None,
        reply = rx => reply.ok(),
    };
    lock(&ctx.shared.questions.waiting).remove(call_id);
    match reply {
        Some(QuestionReply::Answered { answers }) => Ok(answers_output(&questions, &answers)),
        Some(QuestionReply::Cancelled) | None => {
            // Dismissing the questions stops the task: the model must not go on guessing.
            ctx.cancel.cancel();
            Err(ToolError::new(
                "The user dismissed the questions; the task was cancelled.",
            ))
        }
    }
}

impl AgentConfig {
    /// This session without `ask_user`, for a front end where nobody can answer: the tool is
    /// not offered, and the system prompt says why.
    pub fn without_questions(mut self) -> Self {
        self.tools = self.tools.filtered(|tool| tool.name() != ASK_USER);
        self.system_prompt.push_str(NO_QUESTIONS_NOTE);
        self
    }
}
