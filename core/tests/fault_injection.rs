//! Randomized fault injection (DESIGN convention 5): random scripted turns with cuts, HTTP
//! errors, retry-after values, approvals and a cancel at a random point. Every case checks all
//! invariants of SPEC §5.2 on the emitted core events, and that the executor only ran calls
//! from attempts that finished. Time is paused, so thousands of cases take seconds.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::fake_tools::{Behavior, ExecLog, FakeTool, Needs};
use common::invariants::check_invariants;
use common::scripted::*;
use common::test_config;
use corvid_core::agent::spawn_agent;
use corvid_core::summary::SummaryConfig;
use corvid_protocol::{
    ApprovalDecision, ApprovalMode, CoreEvent, ErrorInfo, ErrorKind, FinishReason, Op, ToolKind,
};
use corvid_tools::Tool;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::{Value, json};

const TOOLS: [&str; 5] = ["read", "write", "shell", "todo_write", "nope"];

#[derive(Debug, Clone)]
enum Fault {
    None,
    /// The body ends after this many steps (no finish): a truncated stream.
    Cut(usize),
    /// A typed error after this many steps.
    ErrorAfter(usize, ErrorKind),
    /// The request fails at once (HTTP status), maybe with retry-after.
    Http(ErrorKind, Option<u64>),
}

#[derive(Debug, Clone)]
struct CallSpec {
    tool: usize,
    prepare: bool,
    object_args: bool,
}

#[derive(Debug, Clone)]
struct ResponseSpec {
    text: bool,
    calls: Vec<CallSpec>,
    /// Anthropic-style: each complete call right after its own arguments, before the finish.
    eager_calls: bool,
    delays: Vec<u64>,
    fault: Fault,
}

#[derive(Debug, Clone)]
struct Case {
    responses: Vec<ResponseSpec>,
    cancel_at: Option<usize>,
    max_attempts: u32,
    fallback: bool,
    decisions: Vec<u8>,
    /// How long each tool-use summary takes (the fast model); empty turns summaries off.
    summary_delays: Vec<u64>,
}

fn error_kind() -> impl Strategy<Value = ErrorKind> {
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

fn fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        5 => Just(Fault::None),
        3 => (0usize..20).prop_map(Fault::Cut),
        3 => (0usize..20, error_kind()).prop_map(|(k, e)| Fault::ErrorAfter(k, e)),
        2 => (error_kind(), proptest::option::of(0u64..5_000)).prop_map(|(e, r)| Fault::Http(e, r)),
    ]
}

fn response() -> impl Strategy<Value = ResponseSpec> {
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

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(response(), 1..6),
        proptest::option::weighted(0.6, 0usize..40),
        1u32..4,
        any::<bool>(),
        prop::collection::vec(0u8..4, 8),
        prop::collection::vec(0u64..200, 0..4),
    )
        .prop_map(
            |(responses, cancel_at, max_attempts, fallback, decisions, summary_delays)| Case {
                responses,
                cancel_at,
                max_attempts,
                fallback,
                decisions,
                summary_delays,
            },
        )
}

/// The provider steps of response `i`, faults applied.
fn steps_for(i: usize, spec: &ResponseSpec) -> Vec<Step> {
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

/// The tools of a case; `ms` scales their running time.
fn tools(log: &ExecLog, ms: u64) -> Vec<Arc<dyn Tool>> {
    vec![
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
    ]
}

/// The tool of call `r{i}c{j}`.
fn tool_of(case: &Case, id: &str) -> &'static str {
    let (i, j) = id
        .trim_start_matches('r')
        .split_once('c')
        .map(|(i, j)| (i.parse::<usize>().unwrap(), j.parse::<usize>().unwrap()))
        .unwrap();
    TOOLS[case.responses[i].calls[j].tool]
}

/// The last event when it is a `TaskFinished` (with its pending summary count).
fn ev_pending(events: &[CoreEvent]) -> CoreEvent {
    match events.last() {
        Some(ev @ CoreEvent::TaskFinished { .. }) => ev.clone(),
        _ => CoreEvent::Warning {
            message: String::new(),
        },
    }
}

/// Runs one case and returns its events, or a description of the first broken rule.
fn run_case(case: &Case) -> Result<Vec<CoreEvent>, String> {
    run_case_with(case, Clock::Paused)
}

/// How a case experiences time.
#[derive(Clone, Copy, PartialEq)]
enum Clock {
    /// One thread, virtual time: deterministic and fast.
    Paused,
    /// Worker threads and real (scaled-down) time, so operations race the task for real.
    Real,
}

/// Shrinks every scripted wait for real-time runs (retry-after included).
fn scaled(steps: Vec<Step>, clock: Clock) -> Vec<Step> {
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

fn run_case_with(case: &Case, clock: Clock) -> Result<Vec<CoreEvent>, String> {
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
        let provider = ScriptedProvider::new(script).answering_when_exhausted("All done.");
        let mut config = test_config(
            Arc::new(provider.clone()),
            tools(&log, if clock == Clock::Real { 0 } else { 1 }),
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
        .answering_when_exhausted("Did more");
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

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1500,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/fault_injection.txt",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_random_fault_schedule_keeps_the_lifecycle_invariants(case in case()) {
        if let Err(violation) = run_case(&case) {
            prop_assert!(false, "{}", violation);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 200,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/fault_injection.txt",
        ))),
        ..ProptestConfig::default()
    })]

    /// The same property with real threads and real (short) waits: cancellation, approvals
    /// and summaries race the task the way they do in the binary.
    #[test]
    fn random_fault_schedules_on_worker_threads_keep_the_lifecycle_invariants(case in case()) {
        if let Err(violation) = run_case_with(&case, Clock::Real) {
            prop_assert!(false, "{}", violation);
        }
    }
}

/// The case proptest shrank issue 33's "the task never finished" to.
fn issue_33_case() -> Case {
    let call = |tool| CallSpec {
        tool,
        prepare: true,
        object_args: true,
    };
    let response = |text, calls, fault| ResponseSpec {
        text,
        calls,
        eager_calls: false,
        delays: vec![0],
        fault,
    };
    Case {
        responses: vec![
            response(false, vec![], Fault::Cut(4)),
            response(false, vec![call(0)], Fault::Cut(18)),
            response(true, vec![call(0), call(1), call(2)], Fault::Cut(9)),
            response(
                true,
                vec![],
                Fault::Http(ErrorKind::StreamTruncated, Some(2900)),
            ),
            response(true, vec![], Fault::None),
        ],
        cancel_at: Some(22),
        max_attempts: 1,
        fallback: true,
        decisions: vec![1, 1, 1, 3, 2, 3, 1, 3],
        summary_delays: vec![84],
    }
}

/// Another runtime of the process, no longer driven, whose two agents stopped between taking
/// their bulk turn and sending their request (a test thread between two polls, or a runtime
/// whose `block_on` returned).
fn a_runtime_stopped_mid_bulk_step() -> (
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

/// Issue 33: the bulk gate was process-wide, so a task on a paused clock waited for another
/// runtime's bulk step; its runtime, idle meanwhile, let the clock jump to the next timer and
/// the turn "never finished". Each runtime now takes its own turns.
#[test]
fn a_bulk_step_of_another_runtime_does_not_stall_a_task() {
    let (_other, _agents) = a_runtime_stopped_mid_bulk_step();
    let events = run_case(&issue_33_case()).unwrap();
    assert!(matches!(
        events.last(),
        Some(CoreEvent::TaskFinished { .. })
    ));
}

/// Guards the generator: the random schedules must reach every way an attempt or a card can end,
/// or the property above would pass without testing much.
#[test]
fn the_fault_generator_reaches_every_kind_of_ending() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    let mut runner = TestRunner::deterministic();
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..400 {
        let case = case().new_tree(&mut runner).unwrap().current();
        for ev in run_case(&case).unwrap() {
            let what = match ev {
                CoreEvent::PreparationDiscarded { reason, .. } => format!("discarded {reason:?}"),
                CoreEvent::ToolFinished { status, .. } => format!("finished {status:?}"),
                CoreEvent::PermissionResolved { decision, .. } => format!("resolved {decision:?}"),
                CoreEvent::TaskFinished { stop_reason, .. } => format!("task {stop_reason:?}"),
                CoreEvent::ModelFellBack { .. } => "fell back".into(),
                CoreEvent::AttemptRetried { .. } => "retried".into(),
                CoreEvent::Plan { .. } => "plan".into(),
                CoreEvent::ToolUseSummary { .. } => "summary".into(),
                CoreEvent::SummaryDropped { .. } => "summary dropped".into(),
                _ => continue,
            };
            seen.insert(what);
        }
    }
    let expected = [
        "discarded Cancelled",
        "discarded Fallback",
        "discarded Retry",
        "discarded StreamError",
        "fell back",
        "finished Completed",
        "finished Failed",
        "plan",
        "resolved AllowAlways",
        "resolved AllowOnce",
        "resolved Cancelled",
        "resolved RejectAlways",
        "resolved RejectOnce",
        "retried",
        "summary",
        "summary dropped",
        "task Cancelled",
        "task EndTurn",
        "task Error",
    ];
    let missing: Vec<&str> = expected
        .iter()
        .copied()
        .filter(|e| !seen.contains(*e))
        .collect();
    assert!(
        missing.is_empty(),
        "never reached: {missing:?} (seen {seen:?})"
    );
}
