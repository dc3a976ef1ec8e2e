//! Randomized fault injection (DESIGN convention 5) with the model of `common::fault_model`.
//! Time is paused and each case runs on one thread, its interleaving chosen with the case, so
//! a failure replays from its seed.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;
#[path = "common/fault_model.rs"]
mod fault_model;

use corvid_protocol::{CoreEvent, ErrorKind, StopReason};
use fault_model::*;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

// CI runs a few hundred cases (a case now also runs subagents, MCP calls, compactions,
// hooks, checkpoints, SSE bytes through the decoders and a second prompt: with the generator
// guard below, the file takes about 50 s of CPU in a debug build); `cargo bench -p
// corvid-core --bench fault_runs -- --cases 10000` runs the long count.
proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
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
        cases: 100,
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

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 60,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/fault_injection.txt",
        ))),
        ..ProptestConfig::default()
    })]

    /// A case is its schedule: run twice on the paused clock it emits the same events, so a
    /// failure found once (here or by `benches/fault_runs.rs`) fails again on every replay.
    /// One attempt per model: a retry waits a random jitter (`retry::RetryPolicy`), an input
    /// a case does not fix; no checkpoints: their store work runs on blocking threads, whose
    /// timing the paused clock does not fix either (a rewind asked for with a cancel may find
    /// the task still running or ended).
    #[test]
    fn a_paused_case_replays_to_the_same_events(
        case in case().prop_map(|case| Case { max_attempts: 1, checkpoints: None, ..case })
    ) {
        let first = run_case(&case).map(|events| format!("{events:?}"));
        let second = run_case(&case).map(|events| format!("{events:?}"));
        prop_assert_eq!(first, second);
    }
}

/// The case proptest shrank issue 33's "the task never finished" to.
fn issue_33_case() -> Case {
    let call = |tool| CallSpec {
        tool,
        prepare: true,
        object_args: true,
        fate: 0,
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
        neighbour_mid_bulk_step: true,
        ..Case::plain(Vec::new())
    }
}

/// Issue 33: the bulk gate was process-wide, so a task on a paused clock waited for another
/// runtime's bulk step; its runtime, idle meanwhile, let the clock jump to the next timer and
/// the turn "never finished". Each runtime now takes its own turns.
#[test]
fn a_bulk_step_of_another_runtime_does_not_stall_a_task() {
    let events = run_case(&issue_33_case()).unwrap();
    assert!(matches!(
        events.last(),
        Some(CoreEvent::TaskFinished { .. })
    ));
}

/// A cancel queued while the task's last poll finishes it (proptest found this schedule).
fn cancel_as_the_task_finishes() -> Case {
    let call = |tool, prepare| CallSpec {
        tool,
        prepare,
        object_args: true,
        fate: 0,
    };
    Case {
        responses: vec![
            ResponseSpec {
                text: false,
                calls: vec![call(2, true), call(3, true), call(1, false)],
                eager_calls: true,
                delays: vec![13, 13, 3, 21],
                fault: Fault::None,
            },
            ResponseSpec {
                text: false,
                calls: vec![call(4, true)],
                eager_calls: true,
                delays: vec![27, 3, 2],
                fault: Fault::Cut(17),
            },
        ],
        cancel_at: Some(18),
        max_attempts: 1,
        fallback: false,
        decisions: vec![2, 1, 0, 1, 0, 0, 3, 1],
        summary_delays: vec![147, 117, 152],
        ..Case::plain(Vec::new())
    }
}

/// The session takes an ended task back before its next operation: a cancel queued as the
/// task finished finds no task, and the finished task's summary lands. Both were ready at
/// once, and an unbiased `select!` chose at random (a replay then dropped the summary as
/// cancelled half the time).
#[test]
fn a_cancel_queued_as_the_task_finishes_leaves_its_summary_alone() {
    for _ in 0..10 {
        let events = run_case(&cancel_as_the_task_finishes()).unwrap();
        let n = events.len();
        assert!(
            matches!(
                &events[n - 2..],
                [
                    CoreEvent::TaskFinished {
                        stop_reason: StopReason::EndTurn,
                        pending_summaries: 1,
                        ..
                    },
                    CoreEvent::ToolUseSummary { .. }
                ]
            ),
            "{:?}",
            &events[n - 2..]
        );
    }
}

/// Guards the generator: the random schedules must reach every way an attempt or a card can end,
/// or the property above would pass without testing much.
#[test]
fn the_fault_generator_reaches_every_kind_of_ending() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    let mut runner = TestRunner::deterministic();
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..500 {
        let case = case().new_tree(&mut runner).unwrap().current();
        let events = run_case(&case).unwrap_or_else(|e| panic!("{e}\n{case:#?}"));
        for ev in events {
            let (child, ev) = match ev {
                CoreEvent::Subagent { event, .. } => ("child ", *event),
                ev => ("", ev),
            };
            let what = match ev {
                CoreEvent::PreparationDiscarded { reason, .. } => format!("discarded {reason:?}"),
                CoreEvent::ToolFinished {
                    status,
                    tool_name,
                    output,
                    ..
                } => match tool_name.as_str() {
                    "task" => subagent_ending(&output.text, status),
                    MCP_TOOL => mcp_ending(&output.text),
                    _ => format!("finished {status:?}"),
                },
                CoreEvent::PermissionResolved { decision, .. } => {
                    format!("{child}resolved {decision:?}")
                }
                CoreEvent::TaskFinished {
                    stop_reason, error, ..
                } => match error {
                    Some(e) if e.message.contains("could not be compacted") => {
                        "compaction failed on an overflow".into()
                    }
                    Some(e) if e.message.contains("UserPromptSubmit hook blocked") => {
                        "prompt blocked".into()
                    }
                    _ => format!("{child}task {stop_reason:?}"),
                },
                CoreEvent::ModelFellBack { .. } => "fell back".into(),
                CoreEvent::AttemptRetried { .. } => "retried".into(),
                CoreEvent::Plan { .. } => "plan".into(),
                CoreEvent::ToolUseSummary { .. } => "summary".into(),
                CoreEvent::SummaryDropped { .. } => "summary dropped".into(),
                CoreEvent::Compacted { .. } => format!("{child}compacted"),
                CoreEvent::Warning { message } if message.contains("could not compact") => {
                    "compaction failed before a request".into()
                }
                CoreEvent::Warning { message } if message.contains("Stop hooks kept") => {
                    "stop hooks capped".into()
                }
                CoreEvent::Warning { message }
                    if message.contains("could not take a checkpoint") =>
                {
                    "checkpoint failed".into()
                }
                CoreEvent::Warning { message } if message.contains("rewind once it finished") => {
                    "rewind refused during a task".into()
                }
                CoreEvent::Rewound { error, .. } => match error {
                    None => "rewound".into(),
                    Some(_) => "rewind failed".into(),
                },
                CoreEvent::Hook {
                    event, decision, ..
                } => format!("hook {event} {decision}"),
                _ => continue,
            };
            seen.insert(what);
        }
    }
    // Two child endings are rare among random cases now that calls meet hooks, wires and
    // checkpoints: a child's own compaction and a child's call rejected once; each has a
    // deterministic test (`a_subagent_compacts_its_own_history_on_an_overflow`,
    // `a_subagent_call_rejected_once_fails_and_the_child_goes_on`).
    let expected = [
        "checkpoint failed",
        "child resolved AllowOnce",
        "child resolved Cancelled",
        "compacted",
        "compaction failed before a request",
        "compaction failed on an overflow",
        "discarded Cancelled",
        "discarded Fallback",
        "discarded Retry",
        "discarded StreamError",
        "fell back",
        "finished Completed",
        "finished Failed",
        "hook PostToolUse block",
        "hook PostToolUse failed",
        "hook PreToolUse allow",
        "hook PreToolUse ask",
        "hook PreToolUse block",
        "hook PreToolUse failed",
        "hook Stop block",
        "hook UserPromptSubmit block",
        "hook UserPromptSubmit failed",
        "mcp answered",
        "mcp cancelled",
        "mcp crashed",
        "mcp down",
        "mcp erred",
        "mcp timed out",
        "plan",
        "prompt blocked",
        "resolved AllowAlways",
        "resolved AllowOnce",
        "resolved Cancelled",
        "resolved RejectAlways",
        "resolved RejectOnce",
        "retried",
        "rewind failed",
        "rewind refused during a task",
        "rewound",
        "stop hooks capped",
        "subagent cancelled",
        "subagent completed",
        "subagent failed",
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

/// How an MCP call's card ended, by the adapter's wording.
fn mcp_ending(text: &str) -> String {
    let ending = [
        ("found ", "answered"),
        ("cancelled by the user", "cancelled"),
        ("stopped during the call", "crashed"),
        ("is not running", "down"),
        ("did not answer within", "timed out"),
        ("failed: no entry", "erred"),
    ]
    .iter()
    .find(|(words, _)| text.contains(words))
    .map_or("refused", |(_, ending)| ending);
    format!("mcp {ending}")
}

/// How a `task` call's card ended.
fn subagent_ending(text: &str, status: corvid_protocol::ToolStatus) -> String {
    let ending = if status == corvid_protocol::ToolStatus::Completed {
        "completed"
    } else if text.contains("was cancelled before it finished") {
        "cancelled"
    } else if text.contains("` failed: ") {
        "failed"
    } else {
        "refused"
    };
    format!("subagent {ending}")
}

fn one_call(tool: usize, fate: u8) -> ResponseSpec {
    ResponseSpec {
        text: true,
        calls: vec![CallSpec {
            tool,
            prepare: true,
            object_args: true,
            fate,
        }],
        eager_calls: false,
        delays: vec![5],
        fault: Fault::None,
    }
}

/// The stop reasons of the session's tasks, in order.
fn task_ends(events: &[CoreEvent]) -> Vec<StopReason> {
    events
        .iter()
        .filter_map(|e| match e {
            CoreEvent::TaskFinished { stop_reason, .. } => Some(*stop_reason),
            _ => None,
        })
        .collect()
}

/// The output of the card of `id` (a subagent's cards included).
fn card_output(events: &[CoreEvent], id: &str) -> String {
    events
        .iter()
        .map(|e| match e {
            CoreEvent::Subagent { event, .. } => &**event,
            e => e,
        })
        .find_map(|e| match e {
            CoreEvent::ToolFinished {
                call_id, output, ..
            } if call_id == id => Some(output.text.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// Issue 33: an MCP server that never answers holds its call until the user gives up; the
/// card ends with the cancel, not the server's two-minute timeout, and the next prompt works.
#[test]
fn a_hanging_mcp_call_ends_on_the_users_cancel_and_the_next_prompt_goes_on() {
    let case = Case {
        impatient: true,
        follow_up: true,
        ..Case::plain(vec![one_call(6, 3)])
    };
    let events = run_case(&case).unwrap();
    assert_eq!(card_output(&events, "r0c0"), "cancelled by the user");
    assert_eq!(
        task_ends(&events),
        [StopReason::Cancelled, StopReason::EndTurn]
    );
}

/// Issue 33: a server that exits mid-call fails the card naming the server, and the model
/// gets the error back in the same task.
#[test]
fn an_mcp_server_crashing_mid_call_fails_the_card_and_the_turn_goes_on() {
    let events = run_case(&Case::plain(vec![one_call(6, 2)])).unwrap();
    assert_eq!(
        card_output(&events, "r0c0"),
        "MCP server `srv` stopped during the call to `lookup` (Transport closed); it is \
         restarted on next use"
    );
    assert_eq!(task_ends(&events), [StopReason::EndTurn]);
}

/// Issue 33: a subagent waiting on an approval the user leaves open is cancelled with the
/// parent: the prompt resolves as cancelled, the `task` call fails saying so, and the next
/// prompt's request pairs that call with its result (checked by `run_case`).
#[test]
fn a_subagent_left_waiting_for_approval_is_cancelled_with_its_parent() {
    let case = Case {
        children: vec![vec![one_call(1, 0)]],
        decisions: vec![4],
        follow_up: true,
        ..Case::plain(vec![one_call(TASK, 0)])
    };
    let events = run_case(&case).unwrap();
    assert!(events.iter().any(|e| matches!(e,
    CoreEvent::Subagent { event, .. } if matches!(**event, CoreEvent::PermissionResolved {
        decision: corvid_protocol::ApprovalDecision::Cancelled, ..
    }))));
    assert!(
        card_output(&events, "r0c0").contains("was cancelled before it finished"),
        "{}",
        card_output(&events, "r0c0")
    );
    assert_eq!(
        task_ends(&events),
        [StopReason::Cancelled, StopReason::EndTurn]
    );
}

/// Issue 33: a "context too long" answer whose compaction the server refuses ends the task
/// with both errors, and the history stays as it was (the next prompt's request extends the
/// refused one: checked by `run_case`).
#[test]
fn a_refused_compaction_leaves_the_history_as_it_was() {
    let overflow = ResponseSpec {
        fault: Fault::Http(ErrorKind::ContextTooLong, None),
        ..one_call(0, 0)
    };
    let case = Case {
        compactions: vec![CompactionSpec {
            empty: false,
            delay: 3,
            fault: Fault::Http(ErrorKind::Server, None),
        }],
        follow_up: true,
        ..Case::plain(vec![one_call(0, 0), overflow])
    };
    let events = run_case(&case).unwrap();
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, CoreEvent::Compacted { .. }))
    );
    let error = events.iter().find_map(|e| match e {
        CoreEvent::TaskFinished { error, .. } => error.clone(),
        _ => None,
    });
    assert!(
        error
            .as_ref()
            .is_some_and(|e| e.message.contains("could not be compacted")),
        "{error:?}"
    );
    assert_eq!(task_ends(&events), [StopReason::Error, StopReason::EndTurn]);
}

fn hooks(pre: u8) -> HookSpec {
    HookSpec {
        pre: vec![pre],
        post: vec![0],
        prompt: vec![0],
        stop_blocks: 0,
        on_error_block: false,
    }
}

/// Issue 33 (found by the fault model): a PreToolUse `ask` on `todo_write`, which shows no
/// card, opened a permission prompt that nothing ended (its card stayed pending after the
/// call ran). The call now goes the normal way, with a warning, and no prompt shows.
#[test]
fn a_hook_asking_about_a_tool_without_a_card_opens_no_prompt() {
    let case = Case {
        hooks: Some(hooks(3)),
        ..Case::plain(vec![one_call(3, 0)])
    };
    let events = run_case(&case).unwrap();
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, CoreEvent::PermissionRequested { .. }))
    );
    assert!(events.iter().any(|e| matches!(e, CoreEvent::Plan { .. })));
    assert_eq!(task_ends(&events), [StopReason::EndTurn]);
}

/// Issue 33: a PreToolUse handler that denies a call keeps it from running; its card fails
/// with the hook's reason, which the model gets as the call's result (checked by `run_case`).
#[test]
fn a_call_a_hook_denies_never_runs_and_the_model_hears_why() {
    let case = Case {
        hooks: Some(hooks(2)),
        ..Case::plain(vec![one_call(2, 0)])
    };
    let events = run_case(&case).unwrap();
    let output = card_output(&events, "r0c0");
    assert!(
        output.starts_with("A PreToolUse hook blocked this `shell` call")
            && output.contains("policy says deny to r0c0"),
        "{output}"
    );
    assert_eq!(task_ends(&events), [StopReason::EndTurn]);
}

/// Issue 33: a PreToolUse handler that hangs holds its call until the user gives up; the
/// task ends on the cancel, not the handler's 60 s timeout, and the next prompt goes on.
#[test]
fn a_hanging_pre_tool_hook_ends_on_the_users_cancel() {
    let case = Case {
        hooks: Some(hooks(8)),
        impatient: true,
        follow_up: true,
        ..Case::plain(vec![one_call(0, 0)])
    };
    let events = run_case(&case).unwrap();
    assert_eq!(
        task_ends(&events),
        [StopReason::Cancelled, StopReason::EndTurn]
    );
}

/// Issue 33: a Stop handler that always blocks keeps the agent going at most
/// `MAX_STOP_BLOCKS` times, then the task ends saying so.
#[test]
fn a_stop_hook_that_always_blocks_is_bounded() {
    let case = Case {
        hooks: Some(HookSpec {
            stop_blocks: 20,
            ..hooks(0)
        }),
        ..Case::plain(vec![one_call(0, 0)])
    };
    let events = run_case(&case).unwrap();
    let blocks = events
        .iter()
        .filter(|e| matches!(e, CoreEvent::Hook { event, decision, .. } if event == "Stop" && decision == "block"))
        .count();
    assert_eq!(blocks, 8);
    assert_eq!(task_ends(&events), [StopReason::EndTurn]);
}

/// A subagent whose request overflows compacts its own history and goes on (a summary
/// written for that child, so its next request is still its own: checked by `run_case`).
#[test]
fn a_subagent_compacts_its_own_history_on_an_overflow() {
    let overflow = ResponseSpec {
        fault: Fault::Http(ErrorKind::ContextTooLong, None),
        ..one_call(0, 0)
    };
    let case = Case {
        children: vec![vec![one_call(0, 0), overflow]],
        ..Case::plain(vec![one_call(TASK, 0)])
    };
    let events = run_case(&case).unwrap();
    assert!(events.iter().any(|e| matches!(e,
        CoreEvent::Subagent { event, .. } if matches!(**event, CoreEvent::Compacted { .. }))));
    assert_eq!(task_ends(&events), [StopReason::EndTurn]);
}

/// Issue 33: two `task` calls of one response run their children at once, each from its
/// own script (told apart by its prompt, then by the summary written for it), and both
/// reports reach the model.
#[test]
fn two_subagents_of_one_response_run_side_by_side() {
    let overflow = ResponseSpec {
        fault: Fault::Http(ErrorKind::ContextTooLong, None),
        ..one_call(0, 0)
    };
    let both = ResponseSpec {
        calls: vec![
            one_call(TASK, 0).calls[0].clone(),
            one_call(TASK, 1).calls[0].clone(),
        ],
        ..one_call(TASK, 0)
    };
    let case = Case {
        children: vec![vec![one_call(0, 0), overflow], vec![one_call(1, 0)]],
        ..Case::plain(vec![both])
    };
    let events = run_case(&case).unwrap();
    for id in ["r0c0", "r0c1"] {
        assert!(
            events.iter().any(|e| matches!(e, CoreEvent::ToolFinished { call_id, status: corvid_protocol::ToolStatus::Completed, .. } if call_id == id)),
            "{id} did not complete"
        );
    }
    assert_eq!(task_ends(&events), [StopReason::EndTurn]);
}

/// Issue 33: a Responses API stream cut at a byte before it completes is a truncated
/// stream to the decoder: the call it was sending never runs, and the task ends with the
/// error (one attempt, no fallback).
#[test]
fn a_responses_body_cut_mid_response_runs_none_of_its_calls() {
    let cut = ResponseSpec {
        fault: Fault::Cut(5),
        ..one_call(2, 0)
    };
    let case = Case {
        wire: Some(Wire::Responses),
        follow_up: true,
        ..Case::plain(vec![cut])
    };
    let events = run_case(&case).unwrap();
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, CoreEvent::ToolStarted { call_id, .. } if call_id == "r0c0"))
    );
    assert_eq!(task_ends(&events), [StopReason::Error, StopReason::EndTurn]);
}

/// Issue 33: Gemini sends calls without ids; the decoder's minted ids carry each call
/// through its card, its run and its result (pairing checked by `run_case`).
#[test]
fn gemini_calls_without_ids_run_once_each_through_the_decoder() {
    let case = Case {
        wire: Some(Wire::Gemini),
        ..Case::plain(vec![one_call(0, 0), one_call(1, 0)])
    };
    let events = run_case(&case).unwrap();
    let completed = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                CoreEvent::ToolFinished {
                    status: corvid_protocol::ToolStatus::Completed,
                    ..
                }
            )
        })
        .count();
    assert_eq!(completed, 2);
    assert_eq!(task_ends(&events), [StopReason::EndTurn]);
}

/// A subagent's call the user rejects once fails, the child goes on and reports, and the
/// parent's task ends normally.
#[test]
fn a_subagent_call_rejected_once_fails_and_the_child_goes_on() {
    let case = Case {
        children: vec![vec![one_call(1, 0)]],
        decisions: vec![1],
        ..Case::plain(vec![one_call(TASK, 0)])
    };
    let events = run_case(&case).unwrap();
    assert!(events.iter().any(|e| matches!(e,
    CoreEvent::Subagent { event, .. } if matches!(**event, CoreEvent::PermissionResolved {
        decision: corvid_protocol::ApprovalDecision::RejectOnce, ..
    }))));
    assert_eq!(
        subagent_ending(
            &card_output(&events, "r0c0"),
            corvid_protocol::ToolStatus::Completed
        ),
        "subagent completed"
    );
    assert_eq!(task_ends(&events), [StopReason::EndTurn]);
}

fn with_checkpoints(spec: CheckpointSpec, responses: Vec<ResponseSpec>) -> Case {
    Case {
        checkpoints: Some(spec),
        follow_up: true,
        ..Case::plain(responses)
    }
}

const NO_REWIND: CheckpointSpec = CheckpointSpec {
    broken: false,
    rewind_at: None,
    rewind_with_cancel: false,
    rewind_between: false,
};

/// Issue 33: a checkpoint store that cannot be written warns before the turn and the
/// mutating call, and both tasks go on.
#[test]
fn an_unwritable_checkpoint_store_warns_and_the_turns_go_on() {
    let spec = CheckpointSpec {
        broken: true,
        ..NO_REWIND
    };
    let events = run_case(&with_checkpoints(spec, vec![one_call(1, 0)])).unwrap();
    assert!(events.iter().any(|e| matches!(e,
        CoreEvent::Warning { message } if message.contains("could not take a checkpoint"))));
    assert_eq!(card_output(&events, "r0c0"), "ok r0c0");
    assert_eq!(
        task_ends(&events),
        [StopReason::EndTurn, StopReason::EndTurn]
    );
}

/// Issue 33: undoing the first turn between the prompts cuts the conversation back: the
/// second prompt's request holds none of the undone turn (checked by `run_case`).
#[test]
fn a_rewind_between_prompts_leaves_the_undone_turn_out_of_the_next_request() {
    let spec = CheckpointSpec {
        rewind_between: true,
        ..NO_REWIND
    };
    let events = run_case(&with_checkpoints(spec, vec![one_call(1, 0)])).unwrap();
    assert!(events.iter().any(|e| matches!(e,
        CoreEvent::Rewound { error: None, report, .. } if report.kept_messages == Some(0))));
    assert_eq!(
        task_ends(&events),
        [StopReason::EndTurn, StopReason::EndTurn]
    );
}

/// Issue 33: a rewind asked for while a task runs is refused with a warning; the task
/// finishes as if nothing was asked.
#[test]
fn a_rewind_asked_for_mid_task_is_refused_and_the_task_finishes() {
    let spec = CheckpointSpec {
        rewind_at: Some(2),
        ..NO_REWIND
    };
    let events = run_case(&with_checkpoints(spec, vec![one_call(1, 0)])).unwrap();
    assert!(events.iter().any(|e| matches!(e,
        CoreEvent::Warning { message } if message.contains("a task is running; rewind"))));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, CoreEvent::Rewound { .. }))
    );
    assert_eq!(
        task_ends(&events),
        [StopReason::EndTurn, StopReason::EndTurn]
    );
}
