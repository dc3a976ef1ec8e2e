//! The randomized fault model (DESIGN convention 5) shared by `tests/fault_injection.rs` and
//! `benches/fault_runs.rs`: random scripted turns with cuts, HTTP errors, retry-after values,
//! approvals, a cancel at a random point and a random interleaving at the racing points; each
//! case checks all invariants of SPEC §5.2 on the emitted core events, and that the executor
//! only ran calls from attempts that finished. Included with `#[path]` beside `mod common;`
//! (not a module of `common`, which every test binary compiles).
#![allow(dead_code)] // each includer uses its part of the model

use std::sync::Arc;
use std::time::Duration;

use crate::common::fake_tools::{Behavior, ExecLog, FakeTool, Needs};
use crate::common::invariants::check_invariants;
use crate::common::scripted::*;
use crate::common::test_config;
use corvid_core::agent::spawn_agent;
use corvid_core::summary::SummaryConfig;
use corvid_protocol::{
    ApprovalDecision, ApprovalMode, CoreEvent, ErrorInfo, ErrorKind, FinishReason, Op, Provenance,
    ToolDisplay, ToolKind, ToolOutput,
};
use corvid_tools::{ApprovalNeed, Tool, ToolContext, ToolError};
use futures::future::BoxFuture;
use proptest::prelude::*;
use serde_json::{Value, json};

pub const TOOLS: [&str; 5] = ["read", "write", "shell", "todo_write", "nope"];

#[derive(Debug, Clone)]
pub enum Fault {
    None,
    /// The body ends after this many steps (no finish): a truncated stream.
    Cut(usize),
    /// A typed error after this many steps.
    ErrorAfter(usize, ErrorKind),
    /// The request fails at once (HTTP status), maybe with retry-after.
    Http(ErrorKind, Option<u64>),
}

#[derive(Debug, Clone)]
pub struct CallSpec {
    pub tool: usize,
    pub prepare: bool,
    pub object_args: bool,
}

#[derive(Debug, Clone)]
pub struct ResponseSpec {
    pub text: bool,
    pub calls: Vec<CallSpec>,
    /// Anthropic-style: each complete call right after its own arguments, before the finish.
    pub eager_calls: bool,
    pub delays: Vec<u64>,
    pub fault: Fault,
}

#[derive(Debug, Clone)]
pub struct Case {
    pub responses: Vec<ResponseSpec>,
    pub cancel_at: Option<usize>,
    pub max_attempts: u32,
    pub fallback: bool,
    pub decisions: Vec<u8>,
    /// How long each tool-use summary takes (the fast model); empty turns summaries off.
    pub summary_delays: Vec<u64>,
    /// How many extra yields each racing point takes, in turn ([`Yields`]): the interleaving
    /// of the agent, the session actor, summaries and the front end.
    pub yields: Vec<u8>,
    /// Another runtime of the process is stopped mid-bulk-step while the case runs: nothing a
    /// case waits for may be shared with another runtime (issue 33).
    pub neighbour_mid_bulk_step: bool,
}

pub fn error_kind() -> impl Strategy<Value = ErrorKind> {
    prop_oneof![
        4 => Just(ErrorKind::StreamTruncated),
        3 => Just(ErrorKind::RateLimited),
        3 => Just(ErrorKind::Overloaded),
        2 => Just(ErrorKind::Server),
        1 => Just(ErrorKind::Network),
        1 => Just(ErrorKind::BadRequest),
        1 => Just(ErrorKind::Auth),
    ]
}

pub fn fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        5 => Just(Fault::None),
        3 => (0usize..20).prop_map(Fault::Cut),
        3 => (0usize..20, error_kind()).prop_map(|(k, e)| Fault::ErrorAfter(k, e)),
        2 => (error_kind(), proptest::option::of(0u64..5_000)).prop_map(|(e, r)| Fault::Http(e, r)),
    ]
}

pub fn response() -> impl Strategy<Value = ResponseSpec> {
    let call = (
        0usize..TOOLS.len(),
        proptest::bool::weighted(0.8),
        proptest::bool::weighted(0.9),
    )
        .prop_map(|(tool, prepare, object_args)| CallSpec {
            tool,
            prepare,
            object_args,
        });
    (
        any::<bool>(),
        prop::collection::vec(call, 0..4),
        any::<bool>(),
        prop::collection::vec(0u64..30, 1..8),
        fault(),
    )
        .prop_map(|(text, calls, eager_calls, delays, fault)| ResponseSpec {
            text,
            calls,
            eager_calls,
            delays,
            fault,
        })
}

pub fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(response(), 1..6),
        proptest::option::weighted(0.6, 0usize..40),
        1u32..4,
        any::<bool>(),
        prop::collection::vec(0u8..4, 8),
        prop::collection::vec(0u64..200, 0..4),
        prop_oneof![
            1 => Just(Vec::new()),
            3 => prop::collection::vec(0u8..4, 1..12),
        ],
        proptest::bool::weighted(0.2),
    )
        .prop_map(
            |(
                responses,
                cancel_at,
                max_attempts,
                fallback,
                decisions,
                summary_delays,
                yields,
                neighbour_mid_bulk_step,
            )| Case {
                responses,
                cancel_at,
                max_attempts,
                fallback,
                decisions,
                summary_delays,
                yields,
                neighbour_mid_bulk_step,
            },
        )
}

/// The provider steps of response `i`, faults applied.
pub fn steps_for(i: usize, spec: &ResponseSpec) -> Vec<Step> {
    let mut delays = spec.delays.iter().cycle();
    let mut pause = || delay_ms(*delays.next().unwrap_or(&0));
    let mut steps = Vec::new();
    if spec.text {
        steps.push(text("Working on it. "));
        steps.push(pause());
    }
    let calls: Vec<(String, &str, Value)> = spec
        .calls
        .iter()
        .enumerate()
        .map(|(j, c)| {
            let id = format!("r{i}c{j}");
            let args = if c.object_args {
                json!({"tag": id})
            } else {
                json!("not an object")
            };
            (id, TOOLS[c.tool], args)
        })
        .collect();
    for (c, (id, name, args)) in spec.calls.iter().zip(&calls) {
        if c.prepare {
            steps.push(preparing(id, name));
            steps.push(pause());
        }
        if spec.eager_calls {
            steps.push(call(id, name, args.clone()));
        }
    }
    if !spec.eager_calls {
        for (id, name, args) in &calls {
            steps.push(call(id, name, args.clone()));
        }
    }
    steps.push(usage(50, 5));
    steps.push(finish(if calls.is_empty() {
        FinishReason::Stop
    } else {
        FinishReason::ToolCalls
    }));
    match &spec.fault {
        Fault::None => {}
        Fault::Cut(k) => steps.truncate(k % (steps.len() + 1)),
        Fault::ErrorAfter(k, kind) => {
            steps.truncate(k % (steps.len() + 1));
            steps.push(Step::Fail(ErrorInfo::new(*kind, "injected failure")));
        }
        Fault::Http(kind, retry_after) => {
            let mut err = ErrorInfo::new(*kind, "injected HTTP error");
            err.retry_after_ms = *retry_after;
            steps = vec![Step::Fail(err)];
        }
    }
    steps
}

/// A tool whose approval and run start at racing points.
pub struct Yielding {
    tool: Arc<dyn Tool>,
    yields: Yields,
}

impl Tool for Yielding {
    fn name(&self) -> &str {
        self.tool.name()
    }
    fn display_name(&self) -> &str {
        self.tool.display_name()
    }
    fn description(&self) -> &str {
        self.tool.description()
    }
    fn parameters(&self) -> Value {
        self.tool.parameters()
    }
    fn kind(&self) -> ToolKind {
        self.tool.kind()
    }
    fn provenance(&self) -> Provenance {
        self.tool.provenance()
    }
    fn mutates(&self) -> bool {
        self.tool.mutates()
    }
    fn mutates_call(&self, args: &Value) -> bool {
        self.tool.mutates_call(args)
    }
    fn allowed_in_plan_mode(&self) -> bool {
        self.tool.allowed_in_plan_mode()
    }
    fn shows_card(&self) -> bool {
        self.tool.shows_card()
    }
    fn display(&self, args: &Value, ctx: &ToolContext) -> ToolDisplay {
        self.tool.display(args, ctx)
    }
    fn approval(&self, args: &Value, ctx: &ToolContext) -> BoxFuture<'static, ApprovalNeed> {
        let need = self.tool.approval(args, ctx);
        let yields = self.yields.clone();
        Box::pin(async move {
            yields.point().await;
            need.await
        })
    }
    fn execute(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let run = self.tool.execute(args, ctx);
        let yields = self.yields.clone();
        Box::pin(async move {
            yields.point().await;
            run.await
        })
    }
}

/// The tools of a case; `ms` scales their running time.
pub fn tools(log: &ExecLog, ms: u64, yields: &Yields) -> Vec<Arc<dyn Tool>> {
    let tools: Vec<Arc<dyn Tool>> = vec![
        FakeTool::reader("read", 7 * ms, log),
        FakeTool::writer("write", 5 * ms, log),
        Arc::new(FakeTool {
            name: "shell",
            display_name: "Shell",
            kind: ToolKind::Execute,
            mutates: true,
            shows_card: true,
            needs: Needs::Execute,
            behavior: Behavior::Sleep(Duration::from_millis(40 * ms)),
            log: log.clone(),
        }),
        FakeTool::todo(log),
    ];
    tools
        .into_iter()
        .map(|tool| {
            Arc::new(Yielding {
                tool,
                yields: yields.clone(),
            }) as Arc<dyn Tool>
        })
        .collect()
}

/// The tool of call `r{i}c{j}`.
pub fn tool_of(case: &Case, id: &str) -> &'static str {
    let (i, j) = id
        .trim_start_matches('r')
        .split_once('c')
        .map(|(i, j)| (i.parse::<usize>().unwrap(), j.parse::<usize>().unwrap()))
        .unwrap();
    TOOLS[case.responses[i].calls[j].tool]
}

/// The last event when it is a `TaskFinished` (with its pending summary count).
pub fn ev_pending(events: &[CoreEvent]) -> CoreEvent {
    match events.last() {
        Some(ev @ CoreEvent::TaskFinished { .. }) => ev.clone(),
        _ => CoreEvent::Warning {
            message: String::new(),
        },
    }
}

/// Runs one case and returns its events, or a description of the first broken rule.
pub fn run_case(case: &Case) -> Result<Vec<CoreEvent>, String> {
    run_case_with(case, Clock::Paused)
}

/// How a case experiences time.
#[derive(Clone, Copy, PartialEq)]
pub enum Clock {
    /// One thread, virtual time: deterministic and fast.
    Paused,
    /// Worker threads and real (scaled-down) time, so operations race the task for real.
    Real,
}

/// Shrinks every scripted wait for real-time runs (retry-after included).
pub fn scaled(steps: Vec<Step>, clock: Clock) -> Vec<Step> {
    if clock == Clock::Paused {
        return steps;
    }
    steps
        .into_iter()
        .map(|step| match step {
            Step::Delay(d) => Step::Delay(d / 20),
            Step::Fail(mut err) => {
                err.retry_after_ms = err.retry_after_ms.map(|ms| ms.min(2));
                Step::Fail(err)
            }
            other => other,
        })
        .collect()
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
        let script: Vec<Vec<Step>> = case
            .responses
            .iter()
            .enumerate()
            .map(|(i, r)| scaled(steps_for(i, r), clock))
            .collect();
        let provider = ScriptedProvider::new(script)
            .answering_when_exhausted("All done.")
            .yielding(yields.clone());
        let mut config = test_config(
            Arc::new(provider.clone()),
            tools(&log, if clock == Clock::Real { 0 } else { 1 }, &yields),
        );
        config.approval_mode = ApprovalMode::Default;
        config.retry.max_attempts = case.max_attempts;
        config.fallback_model = case.fallback.then(|| "fallback-model".to_owned());
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
        let mut handle = spawn_agent(config);
        handle
            .submit(Op::user_turn("do it"))
            .map_err(|e| e.to_string())?;
        let mut events = Vec::new();
        let mut asked = 0usize;
        let run = async {
            loop {
                let ev = handle.next_event().await.map_err(|e| e.to_string())?;
                if let CoreEvent::PermissionRequested { call_id, .. } = &ev {
                    let decision = match case.decisions[asked % case.decisions.len()] {
                        0 => ApprovalDecision::AllowOnce,
                        1 => ApprovalDecision::RejectOnce,
                        2 => ApprovalDecision::AllowAlways,
                        _ => ApprovalDecision::RejectAlways,
                    };
                    asked += 1;
                    yields.point().await;
                    handle
                        .submit(Op::Approval {
                            call_id: call_id.clone(),
                            decision,
                        })
                        .map_err(|e| e.to_string())?;
                }
                let done = matches!(ev, CoreEvent::TaskFinished { .. });
                events.push(ev);
                if case.cancel_at == Some(events.len()) {
                    yields.point().await;
                    handle.submit(Op::Cancel).map_err(|e| e.to_string())?;
                }
                if let CoreEvent::TaskFinished {
                    pending_summaries, ..
                } = ev_pending(&events)
                {
                    // Every pending summary settles after the task: exactly that many events.
                    for _ in 0..pending_summaries {
                        loop {
                            let ev = handle.next_event().await.map_err(|e| e.to_string())?;
                            let settled = matches!(
                                ev,
                                CoreEvent::ToolUseSummary { .. } | CoreEvent::SummaryDropped { .. }
                            );
                            events.push(ev);
                            if settled {
                                break;
                            }
                        }
                    }
                }
                if done {
                    return Ok::<(), String>(());
                }
            }
        };
        let limit = match clock {
            Clock::Paused => Duration::from_secs(24 * 3600),
            Clock::Real => Duration::from_secs(30),
        };
        tokio::time::timeout(limit, run)
            .await
            .map_err(|_| "the task never finished".to_owned())??;
        // Nothing settles beyond the pending count: once the agent ends, no summary event is left.
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
            events.push(ev);
        }
        check_invariants(&events, &["todo_write"])?;
        let finished = provider.finished_call_ids();
        if case.cancel_at.is_none() {
            // Nothing is lost either: every card call of a finished response reached a result.
            let results: std::collections::HashSet<&str> = events
                .iter()
                .filter_map(|e| match e {
                    CoreEvent::ToolFinished { call_id, .. } => Some(call_id.as_str()),
                    _ => None,
                })
                .collect();
            for id in &finished {
                let shows_card = tool_of(case, id) != "todo_write";
                if shows_card && !results.contains(id.as_str()) {
                    return Err(format!(
                        "call {id} of a finished response never got a result"
                    ));
                }
            }
        }
        for tag in log.tags() {
            if !finished.contains(&tag) {
                return Err(format!(
                    "call {tag} ran although its attempt never finished"
                ));
            }
        }
        for ev in &events {
            if let CoreEvent::ToolStarted {
                call_id,
                args,
                tool_name,
                ..
            } = ev
            {
                let complete = args == &json!({"tag": call_id}) || args == &json!("not an object");
                if !finished.contains(call_id) || !complete {
                    return Err(format!(
                        "{tool_name} {call_id} started with {args} outside a finished attempt"
                    ));
                }
            }
        }
        Ok(events)
    })
}

/// Another runtime of the process, no longer driven, whose two agents stopped between taking
/// their bulk turn and sending their request (a test thread between two polls, or a runtime
/// whose `block_on` returned).
pub fn a_runtime_stopped_mid_bulk_step() -> (
    tokio::runtime::Runtime,
    Vec<corvid_core::agent::AgentHandle>,
) {
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
