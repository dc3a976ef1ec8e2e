//! Running one case: the session with the case's scripts and tools, a front end that answers
//! approvals (the children's too) and cancels at the case's point, then the checks.

use std::sync::Arc;
use std::time::Duration;

use corvid_core::agent::{AgentHandle, spawn_agent};
use corvid_core::agents::AgentTypes;
use corvid_core::checkpoints::{CheckpointSettings, SessionCheckpoints};
use corvid_core::policy::{MaxTurns, Subagents};
use corvid_core::summary::SummaryConfig;
use corvid_protocol::{
    ApprovalDecision, ApprovalMode, CoreEvent, FinishReason, Op, RewindScope, subagent_call_id,
};
use tokio::time::Instant;

use super::checks::{Observed, check};
use super::hooks::{HookLog, session_hooks};
use super::routing::Routed;
use super::script::Plan;
use super::tools::{McpFate, tools};
use super::{Case, MCP_TOOL};
use crate::common::fake_tools::ExecLog;
use crate::common::scripted::*;
use crate::common::test_config;

/// How a case experiences time.
#[derive(Clone, Copy, PartialEq)]
pub enum Clock {
    /// One thread, virtual time: deterministic and fast.
    Paused,
    /// Worker threads and real (scaled-down) time, so operations race the task for real.
    Real,
}

/// Runs one case and returns its events, or a description of the first broken rule.
pub fn run_case(case: &Case) -> Result<Vec<CoreEvent>, String> {
    run_case_with(case, Clock::Paused)
}

pub fn run_case_with(case: &Case, clock: Clock) -> Result<Vec<CoreEvent>, String> {
    let _neighbour = case
        .neighbour_mid_bulk_step
        .then(a_runtime_stopped_mid_bulk_step);
    let yields = Yields::new(case.yields.clone());
    let runtime = match clock {
        Clock::Paused => tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build(),
        Clock::Real => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build(),
    }
    .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let log = ExecLog::default();
        let plan = Plan::new(case, clock);
        let routed = Routed::new(&plan, &yields);
        let fates = plan
            .calls
            .iter()
            .filter(|(_, c)| c.tool == MCP_TOOL)
            .map(|(id, c)| (id.clone(), McpFate::of(c.fate)))
            .collect();
        let ms = if clock == Clock::Real { 0 } else { 1 };
        let mut config = test_config(Arc::new(routed.clone()), tools(&log, ms, &yields, fates));
        config.approval_mode = ApprovalMode::Default;
        config.retry.max_attempts = case.max_attempts;
        config.fallback_model = case.fallback.then(|| "fallback-model".to_owned());
        config.policy.subagents = Subagents::On {
            max_turns: MaxTurns(10),
            time_limit: Duration::from_secs(3600),
            types: AgentTypes::default_types(),
        };
        config.policy.context.window_override = case.window;
        let hook_log = HookLog::default();
        if let Some(spec) = &case.hooks {
            let dir = std::path::Path::new("/nonexistent/fault-case");
            config.policy.hooks = Some(Arc::new(session_hooks(spec, &hook_log, clock, dir)));
        }
        if clock == Clock::Real {
            config.retry.initial_delay = Duration::from_millis(1);
            config.retry.max_delay = Duration::from_millis(4);
        }
        let fast = ScriptedProvider::new(
            case.summary_delays
                .iter()
                .map(|d| {
                    vec![
                        delay_ms(if clock == Clock::Real { *d / 20 } else { *d }),
                        text("Did a thing"),
                        finish(FinishReason::Stop),
                    ]
                })
                .collect(),
        )
        .answering_when_exhausted("Did more")
        .yielding(yields.clone());
        if !case.summary_delays.is_empty() {
            config.summaries = Some(SummaryConfig {
                provider: Arc::new(fast.clone()),
                model: "fast".into(),
            });
        }
        let (_store, checkpoints) = match &case.checkpoints {
            Some(spec) => {
                let (dirs, cps) = checkpoints(spec.broken);
                config.policy.checkpoints = Some(cps.clone());
                (Some(dirs), Some(cps))
            }
            None => (None, None),
        };
        let mut handle = spawn_agent(config);
        let mut front = Front {
            case,
            yields: yields.clone(),
            hooks: hook_log.clone(),
            checkpoints,
            seen: Observed::default(),
            asked: 0,
            unanswered: false,
            patience: match clock {
                Clock::Paused => Duration::from_secs(30),
                Clock::Real => Duration::from_millis(20),
            },
        };
        let run = async {
            front.task(&mut handle, "do it").await?;
            if case.checkpoints.as_ref().is_some_and(|c| c.rewind_between) {
                front.rewind(&handle).await?;
            }
            if case.follow_up {
                front.task(&mut handle, "and then?").await?;
            }
            Ok::<(), String>(())
        };
        let limit = match clock {
            Clock::Paused => Duration::from_secs(24 * 3600),
            Clock::Real => Duration::from_secs(30),
        };
        tokio::time::timeout(limit, run)
            .await
            .map_err(|_| "the task never finished".to_owned())??;
        // Nothing settles beyond the pending count: once the agent ends, no summary event is left.
        let mut seen = front.seen;
        let (ops, mut rest) = handle.split();
        drop(ops);
        while let Ok(ev) = rest.next_event().await {
            if matches!(
                ev,
                CoreEvent::ToolUseSummary { .. } | CoreEvent::SummaryDropped { .. }
            ) {
                return Err(format!(
                    "a summary settled beyond the pending count: {ev:?}"
                ));
            }
            seen.events.push(ev);
        }
        check(&plan, &routed, &log, &hook_log, &seen, clock)?;
        Ok(seen.events)
    })
}

/// The front end of a case.
struct Front<'a> {
    case: &'a Case,
    yields: Yields,
    hooks: HookLog,
    checkpoints: Option<Arc<SessionCheckpoints>>,
    seen: Observed,
    /// Permission requests answered so far.
    asked: usize,
    /// A permission prompt is left open (the user walked away): only a cancel ends it.
    unanswered: bool,
    /// How long an impatient user waits for the next event before cancelling.
    patience: Duration,
}

impl Front<'_> {
    async fn cancel(&mut self, handle: &AgentHandle) -> Result<(), String> {
        self.yields.point().await;
        self.seen
            .cancels
            .push((Instant::now(), self.seen.tasks_done));
        self.unanswered = false;
        handle.submit(Op::Cancel).map_err(|e| e.to_string())?;
        if self
            .case
            .checkpoints
            .as_ref()
            .is_some_and(|c| c.rewind_with_cancel)
        {
            self.rewind(handle).await?;
        }
        Ok(())
    }

    /// Asks for the last turn (conversation and code) to be undone; the answer (a warning
    /// while a task runs, else `Rewound`) comes with the other events.
    async fn rewind(&mut self, handle: &AgentHandle) -> Result<(), String> {
        let Some(checkpoints) = &self.checkpoints else {
            return Ok(());
        };
        let turn = checkpoints.last_turn().unwrap_or(1);
        self.yields.point().await;
        handle
            .submit(Op::Rewind {
                turn,
                scope: RewindScope::Both,
                overwrite_conflicts: false,
            })
            .map_err(|e| e.to_string())
    }

    /// Submits `prompt` and reads its task to the end, with the summaries it leaves pending.
    async fn task(&mut self, handle: &mut AgentHandle, prompt: &str) -> Result<(), String> {
        self.hooks.task_submitted(self.seen.tasks_done);
        handle
            .submit(Op::user_turn(prompt))
            .map_err(|e| e.to_string())?;
        loop {
            let next = handle.next_event();
            let waits = self.unanswered || (self.case.impatient && self.seen.cancels.is_empty());
            let ev = if waits {
                match tokio::time::timeout(self.patience, next).await {
                    Ok(ev) => ev,
                    // Nothing happens for long: the user gives up on a hanging call, or on the
                    // prompt they left open.
                    Err(_) => {
                        self.cancel(handle).await?;
                        continue;
                    }
                }
            } else {
                next.await
            };
            let ev = ev.map_err(|e| e.to_string())?;
            let asked = match &ev {
                CoreEvent::PermissionRequested { call_id, .. } => Some(call_id.clone()),
                CoreEvent::Subagent {
                    parent_call_id,
                    event,
                } => match &**event {
                    CoreEvent::PermissionRequested { call_id, .. } => {
                        Some(subagent_call_id(parent_call_id, call_id))
                    }
                    _ => None,
                },
                _ => None,
            };
            if let Some(call_id) = asked {
                let decision = match self.case.decisions[self.asked % self.case.decisions.len()] {
                    0 => Some(ApprovalDecision::AllowOnce),
                    1 => Some(ApprovalDecision::RejectOnce),
                    2 => Some(ApprovalDecision::AllowAlways),
                    3 => Some(ApprovalDecision::RejectAlways),
                    _ => None,
                };
                self.asked += 1;
                self.yields.point().await;
                match decision {
                    Some(decision) => handle
                        .submit(Op::Approval { call_id, decision })
                        .map_err(|e| e.to_string())?,
                    None => self.unanswered = true,
                }
            }
            let done = matches!(ev, CoreEvent::TaskFinished { .. });
            self.seen.events.push(ev);
            if self.case.cancel_at == Some(self.seen.events.len()) {
                self.cancel(handle).await?;
            }
            let rewind_at = self.case.checkpoints.as_ref().and_then(|c| c.rewind_at);
            if self.seen.tasks_done == 0 && rewind_at == Some(self.seen.events.len()) {
                self.rewind(handle).await?;
            }
            let pending = match self.seen.events.last() {
                Some(CoreEvent::TaskFinished {
                    pending_summaries, ..
                }) => *pending_summaries,
                _ => 0,
            };
            // Every pending summary settles after the task: exactly that many events.
            for _ in 0..pending {
                loop {
                    let ev = handle.next_event().await.map_err(|e| e.to_string())?;
                    let settled = matches!(
                        ev,
                        CoreEvent::ToolUseSummary { .. } | CoreEvent::SummaryDropped { .. }
                    );
                    self.seen.events.push(ev);
                    if settled {
                        break;
                    }
                }
            }
            if done {
                self.seen.tasks_done += 1;
                return Ok(());
            }
        }
    }
}

/// Another runtime of the process, no longer driven, whose two agents stopped between taking
/// their bulk turn and sending their request (a test thread between two polls, or a runtime
/// whose `block_on` returned).
pub fn a_runtime_stopped_mid_bulk_step() -> (tokio::runtime::Runtime, Vec<AgentHandle>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let handles = runtime.block_on(async {
        let mut handles = Vec::new();
        for _ in 0..2 {
            let provider = ScriptedProvider::new(Vec::new()).answering_when_exhausted("Hi.");
            let handle = spawn_agent(test_config(Arc::new(provider), Vec::new()));
            handle.submit(Op::user_turn("hello")).unwrap();
            handles.push(handle);
        }
        // An agent announces its turn in the same poll in which it takes its bulk turn.
        for handle in &mut handles {
            while !matches!(
                handle.next_event().await.unwrap(),
                CoreEvent::TurnStarted { .. }
            ) {}
        }
        handles
    });
    (runtime, handles)
}

/// A session's checkpoints in a temporary store over an empty temporary workspace; `broken`
/// turns the store's folder into a file, so every snapshot fails. The folders live as long
/// as the first value.
fn checkpoints(
    broken: bool,
) -> (
    (tempfile::TempDir, tempfile::TempDir),
    Arc<SessionCheckpoints>,
) {
    let home = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let cps = SessionCheckpoints::open(
        home.path(),
        workspace.path(),
        "fault",
        CheckpointSettings::default(),
    )
    .unwrap();
    if broken {
        let store = home.path().join("checkpoints");
        std::fs::remove_dir_all(&store).unwrap();
        std::fs::write(&store, "not a folder").unwrap();
    }
    ((home, workspace), Arc::new(cps))
}
