//! Headless mode (`corvid -p`): one task, its output in the chosen format, then exit.
//!
//! Nothing can be asked, so approvals are refused, and reported as refused by headless mode
//! (never as the user's "no"), with the approval mode or rule that would allow the call.
//! SIGINT cancels the task; a second one exits at once. The model's `ask_user` questions are
//! answered from `--answers FILE` (without it the tool is not offered); a question the file
//! does not answer stops the run as bad input.

mod answers;
mod output;
mod terminal_text;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Instant;

use corvid_core::agent::{AgentConfig, AgentHandle};
use corvid_protocol::{ApprovalDecision, ApprovalPreview, CoreEvent, Op, StopReason};
use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::args::OutputFormat;
pub use answers::Answers;
pub use output::InitInfo;
use output::{Outcome, Printer};
use terminal_text::TextSafety;

/// Exit code of a cancelled task (128 + SIGINT).
pub const EXIT_CANCELLED: u8 = 130;

/// Exit code of bad input (as for a configuration error): a question `--answers` lacks.
const EXIT_BAD_INPUT: u8 = 2;

/// What a headless run does: the prompt, and the `--answers` file (with its path, for
/// messages) for the model's questions.
pub struct Job {
    pub prompt: String,
    pub answers: Option<(Answers, std::path::PathBuf)>,
}

/// Runs `prompt` as one task on `agent` and prints its output to `out`. `sigint` is listened
/// to from before the agent started, so an early Ctrl+C cancels instead of killing.
pub async fn run(
    mut agent: AgentHandle,
    init: InitInfo,
    job: Job,
    format: OutputFormat,
    partial: bool,
    sigint: Signal,
    out: impl Write,
) -> ExitCode {
    let started = Instant::now();
    let safety = TextSafety::for_terminal(std::io::stdout().is_terminal());
    let mut printer = Printer::new(format, partial, init.session_id.clone(), out, safety);
    let Job { prompt, answers } = job;
    let mut unanswered = None;
    let questions = Questions {
        answers: answers.as_ref(),
        unanswered: &mut unanswered,
    };
    let result = drive(&mut agent, &mut printer, &init, prompt, questions, sigint).await;
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(e) if crate::is_broken_pipe(&e) => return ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("corvid: {e}");
            return ExitCode::FAILURE;
        }
    };
    match printer.finish(&outcome, started.elapsed().as_millis()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("corvid: cannot write the result: {e}");
            return ExitCode::FAILURE;
        }
    }
    // Let the session end before the process does, so `SessionEnd` hooks run (within their
    // 1.5 s budget; the bound here only guards against a session that does not close).
    let (ops, mut events) = agent.split();
    drop(ops);
    let closed = async { while events.next_event().await.is_ok() {} };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(3), closed).await;
    if let Some(message) = unanswered {
        eprintln!("corvid: {message}");
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    match (&outcome.error, outcome.stop_reason) {
        (Some(error), _) => {
            // A server's error text is as untrusted as the model's.
            let stderr = TextSafety::for_terminal(std::io::stderr().is_terminal());
            eprintln!("corvid: the task failed: {}", stderr.apply(error));
            ExitCode::FAILURE
        }
        (None, StopReason::Cancelled) => {
            eprintln!("corvid: cancelled");
            ExitCode::from(EXIT_CANCELLED)
        }
        // The warning just before (stderr, stream-json) said why and what to do.
        (None, StopReason::Error | StopReason::MaxTurns) => ExitCode::FAILURE,
        (None, StopReason::MaxTokens) => {
            eprintln!(
                "corvid: the answer was cut at the output token limit (model.maxOutputTokens)"
            );
            ExitCode::SUCCESS
        }
        (None, StopReason::EndTurn | StopReason::Refusal) => ExitCode::SUCCESS,
    }
}

/// Why headless mode refused a call that needs approval, and how the user can let it run:
/// it is their setting that refused it, not a "no" they never gave.
fn refusal(preview: &ApprovalPreview, reason: Option<&str>) -> String {
    let how = match (preview, reason) {
        (_, Some(reason)) => format!(
            " ({reason}); run the task in the terminal UI to answer the question \
             (--approval-mode yolo lifts protected-path questions only)"
        ),
        (ApprovalPreview::Diff(_), None) => "; rerun with --approval-mode auto-edit (or yolo), \
             or allow it with a tools.allow rule"
            .to_owned(),
        (ApprovalPreview::Command { .. } | ApprovalPreview::Text { .. }, None) => {
            "; rerun with --approval-mode yolo (or -y), or allow it with a tools.allow rule"
                .to_owned()
        }
    };
    format!("headless mode refused this call because it needs approval{how}")
}

/// The `system/init` facts of a session about to start.
pub fn init_info(config: &AgentConfig) -> InitInfo {
    InitInfo {
        session_id: config.session_id.clone(),
        model: config.model.clone(),
        cwd: config.cwd.display().to_string(),
        tools: config
            .tools
            .iter()
            .map(|t| t.name().to_owned())
            // The session adds `task` itself when subagents are on.
            .chain(
                matches!(
                    config.policy.subagents,
                    corvid_core::policy::Subagents::On { .. }
                )
                .then(|| corvid_core::agent::TASK_TOOL.to_owned()),
            )
            .collect(),
        approval_mode: config.approval_mode.as_str().to_owned(),
    }
}

/// Listens for SIGINT; call before the agent starts.
pub fn listen_for_sigint() -> std::io::Result<Signal> {
    signal(SignalKind::interrupt())
}

/// The `--answers` file, and where the question it could not answer is reported.
struct Questions<'a> {
    answers: Option<&'a (Answers, std::path::PathBuf)>,
    unanswered: &'a mut Option<String>,
}

impl Questions<'_> {
    /// The reply to `questions`: from the file, or a dismissal (which cancels the task) when
    /// there is no file or it lacks a header (then remembered as the run's bad input).
    fn reply(&mut self, questions: &[corvid_protocol::Question]) -> corvid_protocol::QuestionReply {
        let Some((answers, path)) = self.answers else {
            *self.unanswered = Some(
                "the model asked a question, and a headless run can only answer from                  --answers FILE.json"
                    .to_owned(),
            );
            return corvid_protocol::QuestionReply::Cancelled;
        };
        answers.reply(questions).unwrap_or_else(|header| {
            let path = path.display().to_string();
            *self.unanswered = Some(answers::missing_message(&header, &path));
            corvid_protocol::QuestionReply::Cancelled
        })
    }
}

/// Submits the prompt and translates events until the task ended and every pending summary
/// settled (SPEC §7.2: the wait happens after the last turn, never between turns).
async fn drive<W: Write>(
    agent: &mut AgentHandle,
    printer: &mut Printer<W>,
    init: &InitInfo,
    prompt: String,
    mut questions: Questions<'_>,
    mut sigint: Signal,
) -> anyhow::Result<Outcome> {
    printer.init(init)?;
    agent.submit(Op::user_turn(prompt))?;
    let mut outcome: Option<Outcome> = None;
    let mut unsettled: u32 = 0;
    let mut interrupted = false;
    loop {
        if let Some(done) = &outcome
            && unsettled == 0
        {
            return Ok(done.clone());
        }
        let ev = tokio::select! {
            ev = agent.next_event() => ev,
            _ = sigint.recv() => {
                if interrupted {
                    eprintln!("corvid: interrupted again; exiting");
                    std::process::exit(i32::from(EXIT_CANCELLED));
                }
                interrupted = true;
                eprintln!("corvid: cancelling (press Ctrl+C again to exit at once)");
                agent.submit(Op::Cancel)?;
                continue;
            }
        };
        let Ok(ev) = ev else {
            // The agent is gone; whatever it did not finish cannot be waited for.
            return Ok(outcome.unwrap_or(Outcome {
                stop_reason: StopReason::Error,
                error: Some("the agent stopped unexpectedly".to_owned()),
            }));
        };
        printer.event(&ev)?;
        // A subagent's approvals are the session's: refused the same way.
        let (asked, task) = match &ev {
            CoreEvent::Subagent {
                event,
                parent_call_id,
            } => (event.as_ref(), Some(parent_call_id.as_str())),
            ev => (ev, None),
        };
        match asked {
            CoreEvent::PermissionRequested {
                call_id,
                display,
                preview,
                reason,
                ..
            } => {
                let answered = match task {
                    Some(task) => corvid_protocol::subagent_call_id(task, call_id),
                    None => call_id.clone(),
                };
                agent.submit(Op::Approval {
                    call_id: answered,
                    decision: ApprovalDecision::Unattended,
                })?;
                printer.refused(
                    call_id,
                    &display.title,
                    &refusal(preview, reason.as_deref()),
                )?;
            }
            CoreEvent::QuestionAsked {
                call_id,
                questions: asked,
            } if task.is_none() => {
                let reply = questions.reply(asked);
                agent.submit(Op::AnswerQuestion {
                    call_id: call_id.clone(),
                    reply,
                })?;
            }
            CoreEvent::TaskFinished {
                stop_reason,
                error,
                pending_summaries,
                ..
            } => {
                unsettled = *pending_summaries;
                outcome = Some(Outcome {
                    stop_reason: *stop_reason,
                    error: error.as_ref().map(ToString::to_string),
                });
            }
            CoreEvent::ToolUseSummary { .. } | CoreEvent::SummaryDropped { .. }
                if outcome.is_some() =>
            {
                unsettled = unsettled.saturating_sub(1);
            }
            _ => {}
        }
    }
}
