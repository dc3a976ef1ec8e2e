//! Hooks in a case: the session's real hook configuration (`PreToolUse`, `PostToolUse`,
//! `PostToolUseFailure`, `UserPromptSubmit`, `Stop`), matched, interpreted and combined by
//! `corvid_core::hooks` and acted on by the loop as in the product; only the processes are
//! replaced, through [`Hooks::with_runner`], by handlers that answer as the case says (a real
//! process cannot run on a paused clock: its timeout would fire at once). Then what the
//! loop must have done with each answer.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use corvid_core::hooks::session::{MAX_STOP_BLOCKS, blocked_call_message};
use corvid_core::hooks::{HookRunner, HookScope, Hooks, HooksConfig, SessionHooks};
use corvid_protocol::{CoreEvent, ModelRequest, Part, Role, StopReason, ToolStatus};
use corvid_tools::hooks_runner::{HookCommand, HookExit, HookRun};
use corvid_tools::shell::EnvFilter;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::HookSpec;
use super::run::Clock;
use super::script::Plan;

/// What a `PreToolUse` handler does with one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreHook {
    /// Exits 0 without output: the normal flow.
    Silent,
    /// `permissionDecision: "allow"`: the call runs without a prompt.
    Allows,
    /// `permissionDecision: "deny"`: the call is refused, the reason goes to the model.
    Denies,
    /// `permissionDecision: "ask"`: the user is asked even where corvid would not ask.
    Asks,
    /// Exit 2 with a reason on stderr: a block.
    Exits2,
    /// Exit 1: a failure (the call goes ahead unless `onError: "block"`).
    Crashes,
    /// Killed by a signal.
    Killed,
    /// Exit 0 with output that starts like JSON but is not.
    Malformed,
    /// Never answers: its timeout kills it, unless the user cancels first.
    Hangs,
}

impl PreHook {
    fn of(fate: u8) -> Self {
        match fate % 9 {
            0 => Self::Silent,
            1 => Self::Allows,
            2 => Self::Denies,
            3 => Self::Asks,
            4 => Self::Exits2,
            5 => Self::Crashes,
            6 => Self::Killed,
            7 => Self::Malformed,
            _ => Self::Hangs,
        }
    }

    /// Whether the loop must refuse the call.
    fn blocks(self, on_error_block: bool) -> bool {
        match self {
            Self::Denies | Self::Exits2 => true,
            Self::Crashes | Self::Killed | Self::Malformed | Self::Hangs => on_error_block,
            Self::Silent | Self::Allows | Self::Asks => false,
        }
    }
}

/// What a `PostToolUse`/`PostToolUseFailure` handler does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PostHook {
    Silent,
    /// `additionalContext` for the model.
    Context,
    /// `decision: "block"`: feedback for the model (the call already ran).
    Blocks,
    Crashes,
}

impl PostHook {
    fn of(fate: u8) -> Self {
        match fate % 4 {
            0 => Self::Silent,
            1 => Self::Context,
            2 => Self::Blocks,
            _ => Self::Crashes,
        }
    }
}

/// What a `UserPromptSubmit` handler does with one prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PromptHook {
    Silent,
    /// Plain stdout: context added to the prompt.
    Context,
    /// Exit 2: the prompt is not sent.
    Blocks,
    /// Never answers: its timeout kills it, unless the user cancels first.
    Hangs,
}

impl PromptHook {
    fn of(fate: u8) -> Self {
        match fate % 4 {
            0 => Self::Silent,
            1 => Self::Context,
            2 => Self::Blocks,
            _ => Self::Hangs,
        }
    }
}

/// The handlers' commands: the runner tells them apart by these.
const PRE: &str = "pre-check";
const POST: &str = "post-check";
const PROMPT: &str = "prompt-check";
const STOP: &str = "stop-check";
/// Every handler's `timeout` (seconds), on the paused clock; a hang lasts this long.
const TIMEOUT_S: u64 = 60;

/// One handler run, as the runner saw it.
#[derive(Debug, Clone)]
pub struct HookRunRecord {
    pub event: String,
    /// The call's id (`tool_use_id`) or the prompt.
    pub subject: String,
    /// The outcome the loop must act on: the call or prompt is blocked.
    pub blocks: bool,
    /// The model must get a note on the call's result (a post handler's block or context).
    pub notes: bool,
    pub pre: Option<PreHook>,
    /// The index of the task (prompt) the handler ran in.
    pub task: usize,
    pub started: Instant,
    /// `None`: the run was dropped before it answered (the loop stopped waiting).
    pub ended: Option<Instant>,
}

/// Every handler run of a case, shared with the runner, and the task being run.
#[derive(Clone, Default)]
pub struct HookLog(Arc<Mutex<(Vec<HookRunRecord>, usize)>>);

impl HookLog {
    pub fn all(&self) -> Vec<HookRunRecord> {
        self.0.lock().unwrap().0.clone()
    }

    /// The front end submits the prompt of task `index`: later runs belong to it.
    pub fn task_submitted(&self, index: usize) {
        self.0.lock().unwrap().1 = index;
    }
}

/// FNV-1a of a call id: which of the case's fates its handlers take.
fn pick(fates: &[u8], key: &str) -> u8 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in key.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    match fates.len() {
        0 => 0,
        len => fates[(hash % len as u64) as usize],
    }
}

/// The session's hooks for `spec`: one handler per event, run by the case's runner.
pub fn session_hooks(spec: &HookSpec, log: &HookLog, clock: Clock, dir: &Path) -> SessionHooks {
    let handler = |command: &str| {
        let mut h = json!({"type": "command", "command": command, "timeout": TIMEOUT_S});
        if spec.on_error_block {
            h["onError"] = json!("block");
        }
        json!([{"matcher": "*", "hooks": [h]}])
    };
    let block = json!({"hooks": {
        "PreToolUse": handler(PRE),
        "PostToolUse": handler(POST),
        "PostToolUseFailure": handler(POST),
        "UserPromptSubmit": handler(PROMPT),
        "Stop": handler(STOP),
    }});
    let mut config = HooksConfig::default();
    config
        .add_file(
            &dir.join("settings.json"),
            &block.to_string(),
            HookScope::User,
        )
        .unwrap();
    let hooks = Hooks::new(config, Vec::new(), &EnvFilter::default()).with_runner(runner(
        spec.clone(),
        log.clone(),
        clock,
    ));
    SessionHooks::new(hooks, "fault-session".into(), dir.to_owned())
}

fn runner(spec: HookSpec, log: HookLog, clock: Clock) -> HookRunner {
    let stop_blocks = Arc::new(Mutex::new(0u8));
    Arc::new(move |command: HookCommand| {
        let input: Value = serde_json::from_slice(&command.stdin).unwrap_or_default();
        let event = input["hook_event_name"].as_str().unwrap_or("").to_owned();
        let id = input["tool_use_id"].as_str().unwrap_or("").to_owned();
        let (subject, answer, pre) = match command.command.as_str() {
            PRE => {
                let fate = PreHook::of(pick(&spec.pre, &id));
                (id.clone(), pre_answer(fate, &id), Some(fate))
            }
            POST => {
                let fate = PostHook::of(pick(&spec.post, &id));
                (id.clone(), post_answer(fate, &event, &id), None)
            }
            PROMPT => {
                let prompt = input["prompt"].as_str().unwrap_or("").to_owned();
                let fate = PromptHook::of(pick(&spec.prompt, &prompt));
                (prompt, prompt_answer(fate), None)
            }
            _ => {
                let mut blocked = stop_blocks.lock().unwrap();
                let answer = if *blocked < spec.stop_blocks {
                    *blocked += 1;
                    Answer::exit(2, "", "the tests still fail; keep going")
                } else {
                    Answer::exit(0, "", "")
                };
                (String::new(), answer, None)
            }
        };
        // A failure blocks under `onError: "block"`.
        let blocks = answer.blocks || (answer.fails && spec.on_error_block);
        let index = {
            let mut state = log.0.lock().unwrap();
            let (runs, task) = &mut *state;
            runs.push(HookRunRecord {
                event,
                subject,
                blocks,
                notes: answer.notes || (blocks && command.command == POST),
                pre,
                task: *task,
                started: Instant::now(),
                ended: None,
            });
            runs.len() - 1
        };
        let log = log.clone();
        let wait = match (answer.exit == HookExit::TimedOut, clock) {
            (true, Clock::Paused) => command.timeout,
            (true, Clock::Real) => command.timeout / 1000,
            (false, Clock::Paused) => Duration::from_millis(3),
            (false, Clock::Real) => Duration::ZERO,
        };
        Box::pin(async move {
            let started = Instant::now();
            tokio::time::sleep(wait).await;
            log.0.lock().unwrap().0[index].ended = Some(Instant::now());
            HookRun {
                exit: answer.exit,
                stdout: answer.stdout,
                stderr: answer.stderr,
                truncated: false,
                duration: started.elapsed(),
            }
        }) as futures::future::BoxFuture<'static, HookRun>
    })
}

/// A handler's answer, and what it means for the loop.
struct Answer {
    exit: HookExit,
    stdout: String,
    stderr: String,
    /// It blocks the call, the prompt or the stop, whatever `onError` says.
    blocks: bool,
    /// It gives the model a note on the call's result.
    notes: bool,
    /// A failure (a crash, a timeout, output that is not JSON): the user is warned.
    fails: bool,
}

impl Answer {
    fn exit(code: i32, stdout: &str, stderr: &str) -> Self {
        Self {
            exit: HookExit::Code(code),
            stdout: stdout.into(),
            stderr: stderr.into(),
            blocks: code == 2,
            notes: false,
            fails: code != 0 && code != 2,
        }
    }

    fn ended(exit: HookExit) -> Self {
        Self {
            exit,
            stdout: String::new(),
            stderr: String::new(),
            blocks: false,
            notes: false,
            fails: true,
        }
    }
}

fn permission(decision: &str, id: &str) -> String {
    json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": decision,
        "permissionDecisionReason": format!("policy says {decision} to {id}"),
    }})
    .to_string()
}

fn pre_answer(fate: PreHook, id: &str) -> Answer {
    match fate {
        PreHook::Silent => Answer::exit(0, "", ""),
        PreHook::Allows => Answer::exit(0, &permission("allow", id), ""),
        PreHook::Denies => Answer {
            blocks: true,
            ..Answer::exit(0, &permission("deny", id), "")
        },
        PreHook::Asks => Answer::exit(0, &permission("ask", id), ""),
        PreHook::Exits2 => Answer::exit(2, "", &format!("no {id} today")),
        PreHook::Crashes => Answer::exit(1, "", "jq: command not found"),
        PreHook::Killed => Answer::ended(HookExit::Signal(9)),
        PreHook::Malformed => Answer {
            fails: true,
            ..Answer::exit(0, "{\"hookSpecificOutput\": {\"permissionDec", "")
        },
        PreHook::Hangs => Answer::ended(HookExit::TimedOut),
    }
}

fn post_answer(fate: PostHook, event: &str, id: &str) -> Answer {
    match fate {
        PostHook::Silent => Answer::exit(0, "", ""),
        PostHook::Context => Answer {
            notes: true,
            ..Answer::exit(
                0,
                &json!({"hookSpecificOutput": {"hookEventName": event,
                    "additionalContext": format!("lint is clean after {id}")}})
                .to_string(),
                "",
            )
        },
        PostHook::Blocks => Answer {
            blocks: true,
            notes: true,
            ..Answer::exit(
                0,
                &json!({"decision": "block", "reason": format!("{id} broke the build")})
                    .to_string(),
                "",
            )
        },
        PostHook::Crashes => Answer::exit(3, "", "post hook crashed"),
    }
}

fn prompt_answer(fate: PromptHook) -> Answer {
    match fate {
        PromptHook::Silent => Answer::exit(0, "", ""),
        PromptHook::Context => Answer::exit(0, "the build is red since Tuesday", ""),
        PromptHook::Blocks => Answer::exit(2, "", "prompts are closed for maintenance"),
        PromptHook::Hangs => Answer::ended(HookExit::TimedOut),
    }
}

/// What the loop must have done with the handlers' answers: a blocked call never ran and its
/// card and result say why; an asked call ran only after a prompt; an allowed one was not
/// asked; a blocked prompt reached no request; a handler still running at a cancel was not
/// waited for; Stop handlers kept a task going at most [`MAX_STOP_BLOCKS`] times; and, without
/// a cancel, every block's reason and every context reached the model.
pub struct HookChecks<'a> {
    pub runs: Vec<HookRunRecord>,
    pub plan: &'a Plan,
    pub events: &'a [(Option<&'a str>, &'a CoreEvent)],
    /// Tags of the calls the tools ran.
    pub ran: &'a [String],
    /// Every request of the session and its children.
    pub requests: &'a [&'a ModelRequest],
    /// `task` calls whose child sent a request.
    pub children_asked: &'a [String],
    pub cancels: &'a [(Instant, usize)],
    pub clock: Clock,
}

impl HookChecks<'_> {
    pub fn check(&self) -> Result<(), String> {
        let results = self.results_sent();
        let cancelled = !self.cancels.is_empty();
        for run in &self.runs {
            if run.ended.is_none() {
                continue;
            }
            match (run.event.as_str(), run.pre) {
                ("PreToolUse", Some(fate)) => self.pre(run, fate, &results, cancelled)?,
                ("PostToolUse" | "PostToolUseFailure", _) if !cancelled => {
                    let sent = results.get(run.subject.as_str());
                    let noted = sent.is_some_and(|text| {
                        text.contains(" hook feedback: ") || text.contains(" hook context: ")
                    });
                    if sent.is_some() && run.notes && !noted {
                        return Err(format!(
                            "the {} handler's feedback on {} never reached the model",
                            run.event, run.subject
                        ));
                    }
                }
                ("UserPromptSubmit", _) if run.blocks => self.blocked_prompt(&run.subject)?,
                _ => {}
            }
        }
        self.not_waited_for_after_cancel()?;
        self.stops_bounded()
    }

    fn pre(
        &self,
        run: &HookRunRecord,
        fate: PreHook,
        results: &HashMap<&str, String>,
        cancelled: bool,
    ) -> Result<(), String> {
        let id = run.subject.as_str();
        let ran = self.ran.iter().any(|t| t == id) || self.children_asked.iter().any(|t| t == id);
        if run.blocks {
            if ran {
                return Err(format!(
                    "{id} ran although its PreToolUse handler blocked it"
                ));
            }
            let card = self.card(id);
            if let Some((status, text)) = card
                && (status != ToolStatus::Failed || !text.contains("A PreToolUse hook blocked"))
            {
                return Err(format!(
                    "{id}'s card ended {status:?} with {text:?} after its hook blocked it"
                ));
            }
            if !cancelled && let Some(text) = results.get(id) {
                let blocked = blocked_call_message("", "");
                let prefix = &blocked[..blocked.find('`').unwrap_or(0)];
                if !text.starts_with(prefix) {
                    return Err(format!(
                        "the model was told {text:?} for {id}, which its hook blocked"
                    ));
                }
            }
            return Ok(());
        }
        let asked = self.events.iter().any(
            |(_, e)| matches!(e, CoreEvent::PermissionRequested { call_id, .. } if call_id == id),
        );
        // A tool without a card is never asked about (it only updates the plan).
        let cardless = self.plan.tool_of(id) == Some("todo_write");
        if fate == PreHook::Asks && ran && !asked && !cardless {
            return Err(format!(
                "{id} ran without a prompt although its PreToolUse handler asked"
            ));
        }
        if fate == PreHook::Allows && asked {
            return Err(format!(
                "{id} was asked for although its PreToolUse handler allowed it"
            ));
        }
        Ok(())
    }

    /// How `id`'s card ended, if it had one.
    fn card(&self, id: &str) -> Option<(ToolStatus, String)> {
        self.events.iter().find_map(|(_, e)| match e {
            CoreEvent::ToolFinished {
                call_id,
                status,
                output,
                ..
            } if call_id == id => Some((*status, output.text.clone())),
            _ => None,
        })
    }

    /// The result text each call got in the requests.
    fn results_sent(&self) -> HashMap<&str, String> {
        self.requests
            .iter()
            .flat_map(|r| r.messages.iter())
            .flat_map(|m| &m.parts)
            .filter_map(|p| match p {
                Part::ToolResult(r) => Some((r.call_id.as_str(), r.output.clone())),
                _ => None,
            })
            .collect()
    }

    fn blocked_prompt(&self, prompt: &str) -> Result<(), String> {
        let sent = self.requests.iter().any(|r| {
            r.messages.iter().any(|m| {
                m.role == Role::User
                    && m.parts
                        .iter()
                        .any(|p| matches!(p, Part::Text { text } if text == prompt))
            })
        });
        if sent {
            return Err(format!(
                "the prompt {prompt:?} reached the model although a UserPromptSubmit handler \
                 blocked it"
            ));
        }
        let ended = self.events.iter().any(|(parent, e)| {
            parent.is_none()
                && matches!(e, CoreEvent::TaskFinished { stop_reason: StopReason::Error, error: Some(err), .. }
                    if err.message.contains("a UserPromptSubmit hook blocked this prompt"))
        });
        if !ended {
            return Err(format!(
                "the task of the blocked prompt {prompt:?} did not end saying so"
            ));
        }
        Ok(())
    }

    /// The loop stops waiting for a handler when the user cancels (PreToolUse,
    /// UserPromptSubmit, Stop): none of those answered after a cancel it was running at.
    fn not_waited_for_after_cancel(&self) -> Result<(), String> {
        if self.clock == Clock::Real {
            return Ok(());
        }
        for run in &self.runs {
            if !matches!(
                run.event.as_str(),
                "PreToolUse" | "UserPromptSubmit" | "Stop"
            ) {
                continue;
            }
            let Some(ended) = run.ended else { continue };
            if let Some((at, _)) = self
                .cancels
                .iter()
                .find(|(at, task)| *task == run.task && run.started <= *at && *at < ended)
            {
                return Err(format!(
                    "the {} handler for {:?} was waited for {:?} past the user's cancel",
                    run.event,
                    run.subject,
                    ended - *at
                ));
            }
        }
        Ok(())
    }

    /// Stop handlers keep one task going at most [`MAX_STOP_BLOCKS`] times.
    fn stops_bounded(&self) -> Result<(), String> {
        let mut blocks = 0;
        for (parent, e) in self.events {
            match e {
                CoreEvent::Hook {
                    event, decision, ..
                } if parent.is_none() && event == "Stop" && decision == "block" => blocks += 1,
                CoreEvent::TaskFinished { .. } if parent.is_none() => {
                    if blocks > MAX_STOP_BLOCKS {
                        return Err(format!(
                            "Stop handlers kept one task going {blocks} times (the cap is \
                             {MAX_STOP_BLOCKS})"
                        ));
                    }
                    blocks = 0;
                }
                _ => {}
            }
        }
        Ok(())
    }
}
