//! The task/turn loop driven by a scripted provider: turns, history pairing, concurrency,
//! call ids, invalid calls, suppression, approvals and stop reasons.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use std::sync::Arc;

use common::fake_tools::{ExecLog, FakeTool};
use common::invariants::check_invariants;
use common::scripted::*;
use common::{assert_lifecycle, collect_task_deciding, lifecycle, prompt, run_task, test_config};
use corvid_core::agent::{AgentHandle, spawn_agent};
use corvid_protocol::{
    ApprovalDecision, ApprovalMode, CoreEvent, FinishReason, Message, Part, Role, StopReason,
    ToolCall, ToolResult,
};
use pretty_assertions::assert_eq;
use serde_json::json;

fn start(provider: &ScriptedProvider, tools: Vec<Arc<dyn corvid_tools::Tool>>) -> AgentHandle {
    spawn_agent(test_config(Arc::new(provider.clone()), tools))
}

#[tokio::test(start_paused = true)]
async fn a_two_turn_tool_task_pairs_each_result_with_its_call_id() {
    let log = ExecLog::default();
    let provider = ScriptedProvider::new(vec![
        vec![
            text("Let me look."),
            preparing("a", "read"),
            delay_ms(5),
            preparing("b", "read"),
            call("a", "read", json!({"tag": "a"})),
            call("b", "read", json!({"tag": "b"})),
            usage(100, 20),
            finish(FinishReason::ToolCalls),
        ],
        answer("Both files are fine."),
    ]);
    let mut handle = start(&provider, vec![FakeTool::reader("read", 10, &log)]);
    let events = run_task(&mut handle, "check a and b").await;
    check_invariants(&events, &["todo_write"]).unwrap();
    assert_lifecycle(
        &events,
        &[
            "task_started",
            "turn 1 main-model",
            "preparing a",
            "preparing b",
            "started a prepared=true",
            "started b prepared=true",
            "finished a Completed",
            "finished b Completed",
            "batch a,b",
            "turn 2 main-model",
            "task_finished EndTurn",
        ],
    );
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].model, "main-model");
    assert_eq!(requests[1].tools.len(), 1);
    assert_eq!(
        requests[1].messages,
        vec![
            Message::user_text("check a and b"),
            Message {
                role: Role::Assistant,
                parts: vec![
                    Part::Text {
                        text: "Let me look.".into()
                    },
                    Part::ToolCall(ToolCall {
                        call_id: "a".into(),
                        name: "read".into(),
                        args: json!({"tag": "a"})
                    }),
                    Part::ToolCall(ToolCall {
                        call_id: "b".into(),
                        name: "read".into(),
                        args: json!({"tag": "b"})
                    }),
                ],
            },
            Message {
                role: Role::User,
                parts: vec![
                    Part::ToolResult(ToolResult {
                        call_id: "a".into(),
                        name: "read".into(),
                        output: "ok a".into(),
                        is_error: false,
                        images: Vec::new(),
                    }),
                    Part::ToolResult(ToolResult {
                        call_id: "b".into(),
                        name: "read".into(),
                        output: "ok b".into(),
                        is_error: false,
                        images: Vec::new(),
                    }),
                ],
            },
        ]
    );
    let usage: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            CoreEvent::Usage { prompt_id, usage } => Some((prompt_id.as_str(), usage.input_tokens)),
            _ => None,
        })
        .collect();
    assert_eq!(usage, vec![("main", 100), ("main", 10)]);
}

#[tokio::test(start_paused = true)]
async fn read_only_calls_overlap_and_mutating_calls_run_in_order() {
    let log = ExecLog::default();
    let provider = ScriptedProvider::new(vec![
        vec![
            call("1", "read", json!({"tag": "r1"})),
            call("2", "read", json!({"tag": "r2"})),
            call("3", "write", json!({"tag": "w1"})),
            call("4", "write", json!({"tag": "w2"})),
            call("5", "read", json!({"tag": "r3"})),
            finish(FinishReason::ToolCalls),
        ],
        answer("done"),
    ]);
    let mut handle = start(
        &provider,
        vec![
            FakeTool::reader("read", 100, &log),
            FakeTool::writer("write", 100, &log),
        ],
    );
    let events = run_task(&mut handle, "go").await;
    check_invariants(&events, &[]).unwrap();
    let runs = log.all();
    let by_tag = |tag: &str| runs.iter().find(|e| e.args["tag"] == tag).unwrap().clone();
    let (r1, r2, w1, w2, r3) = (
        by_tag("r1"),
        by_tag("r2"),
        by_tag("w1"),
        by_tag("w2"),
        by_tag("r3"),
    );
    assert!(
        r1.started < r2.ended && r2.started < r1.ended,
        "r1 and r2 must overlap"
    );
    assert!(
        w1.started >= r1.ended && w1.started >= r2.ended,
        "w1 waits for the reads before it"
    );
    assert!(w2.started >= w1.ended, "mutating calls run in order");
    assert!(r3.started >= w2.ended, "a read after a write waits for it");
    let batch = events.iter().find_map(|e| match e {
        CoreEvent::BatchCompleted { call_ids } => Some(call_ids.clone()),
        _ => None,
    });
    assert_eq!(
        batch,
        Some(vec![
            "1".into(),
            "2".into(),
            "3".into(),
            "4".into(),
            "5".into()
        ])
    );
}

#[tokio::test(start_paused = true)]
async fn ids_reused_from_history_are_renamed_consistently_for_card_and_call() {
    let log = ExecLog::default();
    let provider = ScriptedProvider::new(vec![
        vec![
            preparing("x", "read"),
            call("x", "read", json!({"tag": "first"})),
            finish(FinishReason::ToolCalls),
        ],
        vec![
            preparing("x", "read"),
            call("x", "read", json!({"tag": "second"})),
            call("x", "read", json!({"tag": "same turn duplicate"})),
            call("", "read", json!({"tag": "no id"})),
            finish(FinishReason::ToolCalls),
        ],
        vec![
            preparing("x", "read"),
            call("x", "read", json!({"tag": "third"})),
            finish(FinishReason::ToolCalls),
        ],
        answer("done"),
    ]);
    let mut handle = start(&provider, vec![FakeTool::reader("read", 1, &log)]);
    let events = run_task(&mut handle, "go").await;
    check_invariants(&events, &[]).unwrap();
    let generated = events
        .iter()
        .find_map(|e| match e {
            CoreEvent::ToolStarted { call_id, args, .. } if args["tag"] == "no id" => {
                Some(call_id.clone())
            }
            _ => None,
        })
        .unwrap();
    assert!(generated.starts_with("call_"), "{generated}");
    assert_eq!(
        lifecycle(&events),
        vec![
            "task_started".to_owned(),
            "turn 1 main-model".into(),
            "preparing x".into(),
            "started x prepared=true".into(),
            "finished x Completed".into(),
            "batch x".into(),
            "turn 2 main-model".into(),
            "preparing x__dup_2".into(),
            "started x__dup_2 prepared=true".into(),
            format!("started {generated} prepared=false"),
            "finished x__dup_2 Completed".into(),
            format!("finished {generated} Completed"),
            format!("batch x__dup_2,{generated}"),
            "turn 3 main-model".into(),
            "preparing x__dup_3".into(),
            "started x__dup_3 prepared=true".into(),
            "finished x__dup_3 Completed".into(),
            "batch x__dup_3".into(),
            "turn 4 main-model".into(),
            "task_finished EndTurn".into(),
        ]
    );
    assert_eq!(
        log.tags().len(),
        4,
        "the same-turn duplicate never runs: {:?}",
        log.tags()
    );
    let last = provider.requests().pop().unwrap();
    let result_ids: Vec<String> = last
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolResult(r) => Some(r.call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        result_ids,
        vec![
            "x".to_owned(),
            "x__dup_2".into(),
            generated,
            "x__dup_3".into()
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn unknown_tools_and_non_object_arguments_are_tool_errors_the_model_sees() {
    let log = ExecLog::default();
    let provider = ScriptedProvider::new(vec![
        vec![
            preparing("u", "nope"),
            call("u", "nope", json!({})),
            call("v", "read", json!([1, 2])),
            finish(FinishReason::ToolCalls),
        ],
        answer("sorry"),
    ]);
    let mut handle = start(&provider, vec![FakeTool::reader("read", 1, &log)]);
    let events = run_task(&mut handle, "go").await;
    check_invariants(&events, &[]).unwrap();
    assert_lifecycle(
        &events,
        &[
            "task_started",
            "turn 1 main-model",
            "preparing u",
            "started u prepared=true",
            "finished u Failed",
            "started v prepared=false",
            "finished v Failed",
            "batch u,v",
            "turn 2 main-model",
            "task_finished EndTurn",
        ],
    );
    assert!(log.all().is_empty());
    let results: Vec<ToolResult> = provider.requests()[1].messages[2]
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::ToolResult(r) => Some(r.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        vec![
            ToolResult {
                call_id: "u".into(),
                name: "nope".into(),
                output: "unknown tool `nope`; the available tools are: read".into(),
                is_error: true,
                images: Vec::new(),
            },
            ToolResult {
                call_id: "v".into(),
                name: "read".into(),
                output: "the arguments of `read` must be a JSON object, got: [1,2]".into(),
                is_error: true,
                images: Vec::new(),
            },
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn todo_write_shows_as_a_plan_never_as_a_card() {
    let log = ExecLog::default();
    let provider = ScriptedProvider::new(vec![
        vec![
            preparing("t", "todo_write"),
            call("t", "todo_write", json!({"tag": "step"})),
            finish(FinishReason::ToolCalls),
        ],
        answer("planned"),
    ]);
    let mut handle = start(&provider, vec![FakeTool::todo(&log)]);
    let events = run_task(&mut handle, "plan").await;
    check_invariants(&events, &["todo_write"]).unwrap();
    assert_lifecycle(
        &events,
        &[
            "task_started",
            "turn 1 main-model",
            "plan 1",
            "batch t",
            "turn 2 main-model",
            "task_finished EndTurn",
        ],
    );
}

#[tokio::test(start_paused = true)]
async fn approvals_follow_the_mode_and_always_decisions_are_remembered() {
    let log = ExecLog::default();
    let provider = ScriptedProvider::new(vec![
        vec![
            call("w1", "write", json!({"tag": "w1"})),
            finish(FinishReason::ToolCalls),
        ],
        vec![
            preparing("w2", "write"),
            call("w2", "write", json!({"tag": "w2"})),
            call("s1", "shell", json!({"tag": "s1"})),
            finish(FinishReason::ToolCalls),
        ],
        answer("ok"),
    ]);
    let mut config = test_config(
        Arc::new(provider.clone()),
        vec![
            FakeTool::writer("write", 1, &log),
            FakeTool::shell("shell", &log),
        ],
    );
    config.approval_mode = ApprovalMode::Default;
    let mut handle = spawn_agent(config);
    prompt(&handle, "go");
    let events = collect_task_deciding(&mut handle, |call_id| {
        if call_id == "w1" {
            ApprovalDecision::AllowAlways
        } else {
            ApprovalDecision::RejectOnce
        }
    })
    .await;
    check_invariants(&events, &[]).unwrap();
    assert_lifecycle(
        &events,
        &[
            "task_started",
            "turn 1 main-model",
            "asked w1",
            "resolved w1 AllowAlways",
            "started w1 prepared=false",
            "finished w1 Completed",
            "batch w1",
            "turn 2 main-model",
            "preparing w2",
            "started w2 prepared=true",
            "finished w2 Completed",
            "asked s1",
            "resolved s1 RejectOnce",
            "finished s1 Failed",
            "batch w2,s1",
            "turn 3 main-model",
            "task_finished EndTurn",
        ],
    );
    let rejected = provider.requests()[2].messages[4]
        .parts
        .iter()
        .find_map(|p| match p {
            Part::ToolResult(r) if r.call_id == "s1" => Some(r.output.clone()),
            _ => None,
        });
    assert!(
        rejected
            .unwrap()
            .starts_with("The user rejected this `shell` call")
    );
    assert_eq!(log.tags(), vec!["w1", "w2"]);
}

#[tokio::test(start_paused = true)]
async fn a_second_prompt_while_a_task_runs_is_refused_with_a_warning() {
    let provider = ScriptedProvider::new(vec![vec![
        text("thinking"),
        delay_ms(1000),
        finish(FinishReason::Stop),
    ]]);
    let mut handle = start(&provider, vec![]);
    prompt(&handle, "first");
    assert!(matches!(
        handle.next_event().await.unwrap(),
        CoreEvent::TaskStarted { .. }
    ));
    let events = run_task(&mut handle, "second").await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, CoreEvent::Warning { .. }))
    );
    assert_eq!(provider.requests().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn max_tokens_and_refusal_finishes_become_stop_reasons() {
    let provider = ScriptedProvider::new(vec![
        vec![text("long"), finish(FinishReason::MaxTokens)],
        vec![finish(FinishReason::Refusal)],
    ]);
    let mut handle = start(&provider, vec![]);
    let first = run_task(&mut handle, "one").await;
    let second = run_task(&mut handle, "two").await;
    let stop = |events: &[CoreEvent]| match events.last() {
        Some(CoreEvent::TaskFinished { stop_reason, .. }) => *stop_reason,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        (stop(&first), stop(&second)),
        (StopReason::MaxTokens, StopReason::Refusal)
    );
    // The second request carries the first task's exchange.
    assert_eq!(provider.requests()[1].messages.len(), 3);
}

#[tokio::test(start_paused = true)]
async fn dropping_every_sender_ends_the_agent_after_the_running_task() {
    let provider = ScriptedProvider::new(vec![answer("bye")]);
    let handle = start(&provider, vec![]);
    let extra = handle.sender();
    prompt(&handle, "hi");
    let (ops, mut events) = handle.split();
    drop(ops);
    drop(extra);
    let mut seen = Vec::new();
    while let Ok(ev) = events.next_event().await {
        seen.push(ev);
    }
    assert!(matches!(
        seen.last(),
        Some(CoreEvent::TaskFinished {
            stop_reason: StopReason::EndTurn,
            ..
        })
    ));
}

/// Found by fault injection: a call of a tool the user rejected "always" earlier finished
/// without any card having shown it.
#[tokio::test(start_paused = true)]
async fn a_tool_rejected_for_the_session_shows_its_card_then_fails_without_asking() {
    let log = ExecLog::default();
    let provider = ScriptedProvider::new(vec![
        vec![
            call("w1", "write", json!({"tag": "w1"})),
            finish(FinishReason::ToolCalls),
        ],
        vec![
            call("w2", "write", json!({"tag": "w2"})),
            finish(FinishReason::ToolCalls),
        ],
        answer("ok"),
    ]);
    let mut config = test_config(
        Arc::new(provider.clone()),
        vec![FakeTool::writer("write", 1, &log)],
    );
    config.approval_mode = ApprovalMode::Default;
    let mut handle = spawn_agent(config);
    prompt(&handle, "go");
    let events = collect_task_deciding(&mut handle, |_| ApprovalDecision::RejectAlways).await;
    check_invariants(&events, &[]).unwrap();
    assert_lifecycle(
        &events,
        &[
            "task_started",
            "turn 1 main-model",
            "asked w1",
            "resolved w1 RejectAlways",
            "finished w1 Failed",
            "batch w1",
            "turn 2 main-model",
            "started w2 prepared=false",
            "finished w2 Failed",
            "batch w2",
            "turn 3 main-model",
            "task_finished EndTurn",
        ],
    );
    assert!(log.all().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_panicking_tool_fails_its_call_and_the_session_goes_on() {
    let log = ExecLog::default();
    let provider = ScriptedProvider::new(vec![
        vec![
            preparing("p", "boom"),
            call("p", "boom", json!({})),
            finish(FinishReason::ToolCalls),
        ],
        answer("that tool is broken"),
    ]);
    let boom: Arc<dyn corvid_tools::Tool> = Arc::new(FakeTool {
        name: "boom",
        display_name: "Boom",
        kind: corvid_protocol::ToolKind::Other,
        mutates: false,
        shows_card: true,
        needs: common::fake_tools::Needs::Nothing,
        behavior: common::fake_tools::Behavior::Panic,
        log: log.clone(),
    });
    let mut handle = start(&provider, vec![boom]);
    let events = run_task(&mut handle, "go").await;
    check_invariants(&events, &[]).unwrap();
    assert_lifecycle(
        &events,
        &[
            "task_started",
            "turn 1 main-model",
            "preparing p",
            "started p prepared=true",
            "finished p Failed",
            "batch p",
            "turn 2 main-model",
            "task_finished EndTurn",
        ],
    );
}

#[derive(Default)]
struct Recorder(std::sync::Mutex<Vec<Message>>);

impl corvid_core::agent::HistoryObserver for Recorder {
    fn message_appended(&self, message: &Message) -> Option<String> {
        self.0.lock().unwrap().push(message.clone());
        None
    }
}

#[tokio::test(start_paused = true)]
async fn the_history_observer_sees_exactly_the_history_the_model_gets() {
    let log = ExecLog::default();
    let provider = ScriptedProvider::new(vec![
        vec![
            thought("hmm"),
            Step::Event(corvid_protocol::StreamEvent::ThoughtSignature {
                signature: "sig".into(),
            }),
            text("Reading."),
            call("a", "read", json!({"tag": "a"})),
            finish(FinishReason::ToolCalls),
        ],
        answer("done"),
        answer("again"),
    ]);
    let recorder = Arc::new(Recorder::default());
    let config = test_config(
        Arc::new(provider.clone()),
        vec![FakeTool::reader("read", 1, &log)],
    );
    let mut handle = corvid_core::agent::spawn_agent_observed(config, recorder.clone());
    run_task(&mut handle, "first").await;
    run_task(&mut handle, "second").await;
    let mut expected = provider.requests()[2].messages.clone();
    expected.push(Message {
        role: Role::Assistant,
        parts: vec![Part::Text {
            text: "again".into(),
        }],
    });
    assert_eq!(*recorder.0.lock().unwrap(), expected);
    assert_eq!(
        expected[1].parts[0],
        Part::Thought {
            text: "hmm".into(),
            signature: Some("sig".into()),
            provider_data: None,
        }
    );
}

/// A front end may send the next prompt the moment it sees `TaskFinished`; the session takes
/// it even if the task is still handing its state back (it was refused as "already running").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_sent_right_after_task_finished_is_taken() {
    let turns: Vec<Vec<Step>> = (0..100).map(|i| answer(&format!("answer {i}"))).collect();
    let provider = ScriptedProvider::new(turns);
    let mut handle = spawn_agent(test_config(Arc::new(provider), Vec::new()));
    for i in 0..100 {
        handle
            .submit(corvid_protocol::Op::user_turn(format!("prompt {i}")))
            .unwrap();
        loop {
            match handle.next_event().await.unwrap() {
                CoreEvent::Warning { message } => panic!("prompt {i} refused: {message}"),
                CoreEvent::TaskFinished { error, .. } => {
                    assert_eq!(error, None, "prompt {i}");
                    break;
                }
                _ => {}
            }
        }
    }
}
