//! Subagents (issue 13): `task` calls run child agents with fresh histories, concurrently when
//! their type only reads, cancelled with the parent, limited in turns, never summarized.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::fake_tools::{ExecLog, FakeTool};
use common::invariants::check_invariants;
use common::scripted::*;
use common::{cancel_when, collect_task, read_until, run_task, test_config};
use corvid_core::agent::{AgentConfig, AgentHandle, spawn_agent};
use corvid_core::agents::AgentTypes;
use corvid_core::policy::{MaxTurns, SubagentCaps, Subagents};
use corvid_core::summary::SummaryConfig;
use corvid_protocol::{
    CoreEvent, FinishReason, Message, ModelRequest, Part, Role, SUBAGENT_PROMPT_ID, StopReason,
    ToolResult,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::sync::Notify;

fn start(provider: &ScriptedProvider, log: &ExecLog, max_turns: u32) -> AgentHandle {
    spawn_agent(config(provider, log, max_turns))
}

/// A session with a reader and a writer whose `task` calls run children of at most
/// `max_turns` turns.
fn config(provider: &ScriptedProvider, log: &ExecLog, max_turns: u32) -> AgentConfig {
    let mut config = test_config(
        Arc::new(provider.clone()),
        vec![
            FakeTool::reader("read", 1, log),
            FakeTool::editor("write", log),
        ],
    );
    config.policy.subagents = Subagents::On {
        max_turns: MaxTurns(max_turns),
        time_limit: Duration::from_secs(600),
        types: AgentTypes::default_types(),
    };
    config
}

fn task_call(id: &str, prompt: &str, kind: &str) -> Step {
    call(
        id,
        "task",
        json!({"description": format!("Do {prompt}"), "prompt": prompt, "subagent_type": kind}),
    )
}

fn tool_names(request: &ModelRequest) -> Vec<String> {
    request.tools.iter().map(|t| t.name.clone()).collect()
}

/// The tool results of a request's last message.
fn last_results(request: &ModelRequest) -> Vec<ToolResult> {
    request
        .messages
        .last()
        .unwrap()
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::ToolResult(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

fn user(text: &str) -> Message {
    Message {
        role: Role::User,
        parts: vec![Part::Text { text: text.into() }],
    }
}

fn is_child_turn(ev: &CoreEvent, parent: &str) -> bool {
    matches!(ev, CoreEvent::Subagent { parent_call_id, event }
        if parent_call_id == parent && matches!(**event, CoreEvent::TurnStarted { .. }))
}

/// Waits (boundedly, so a broken feature fails instead of hanging) until the provider has
/// seen `n` requests.
async fn requests_reach(provider: &ScriptedProvider, n: usize) {
    let seen = async {
        while provider.requests().len() < n {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), seen)
        .await
        .unwrap_or_else(|_| {
            panic!(
                "only {} of {n} requests were sent: the children did not run concurrently",
                provider.requests().len()
            )
        });
}

#[tokio::test]
async fn two_explore_tasks_run_concurrently_each_with_a_fresh_history() {
    let log = ExecLog::default();
    let (gate_a, gate_b) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let provider = ScriptedProvider::new(vec![
        vec![
            task_call("t1", "look for A", "explore"),
            task_call("t2", "look for B", "explore"),
            finish(FinishReason::ToolCalls),
        ],
        vec![
            Step::Wait(gate_a.clone()),
            text("A is in a.rs"),
            usage(7, 3),
            finish(FinishReason::Stop),
        ],
        vec![
            Step::Wait(gate_b.clone()),
            text("B is in b.rs"),
            usage(7, 3),
            finish(FinishReason::Stop),
        ],
        answer("both found"),
    ]);
    let mut handle = start(&provider, &log, 5);
    common::prompt(&handle, "find A and B");

    // Both children asked the model before either got an answer.
    requests_reach(&provider, 3).await;
    gate_a.notify_one();
    gate_b.notify_one();
    let events = collect_task(&mut handle).await;
    check_invariants(&events, &[]).unwrap();

    let requests = provider.requests();
    assert_eq!(requests.len(), 4);
    assert!(tool_names(&requests[0]).contains(&"task".to_owned()));
    for (request, prompt) in [(&requests[1], "look for A"), (&requests[2], "look for B")] {
        assert!(
            request.system.starts_with("You are a corvid subagent"),
            "{}",
            request.system
        );
        assert_eq!(request.messages.to_vec(), vec![user(prompt)]);
        // explore: read-only tools, and no `task` (children do not nest).
        assert_eq!(tool_names(request), vec!["read"]);
    }
    let results: Vec<(String, String, bool)> = last_results(&requests[3])
        .into_iter()
        .map(|r| (r.call_id, r.output, r.is_error))
        .collect();
    assert_eq!(
        results,
        vec![
            ("t1".into(), "A is in a.rs".into(), false),
            ("t2".into(), "B is in b.rs".into(), false),
        ]
    );
    let child_usage = events
        .iter()
        .filter(
            |e| matches!(e, CoreEvent::Usage { prompt_id, .. } if prompt_id == SUBAGENT_PROMPT_ID),
        )
        .count();
    assert_eq!(child_usage, 2);
}

#[tokio::test]
async fn cancelling_the_parent_ends_every_card_of_both_children_and_sends_nothing_more() {
    let log = ExecLog::default();
    let provider = ScriptedProvider::new(vec![
        vec![
            task_call("t1", "look for A", "explore"),
            task_call("t2", "look for B", "explore"),
            finish(FinishReason::ToolCalls),
        ],
        vec![preparing("c1", "read"), Step::Hang],
        vec![preparing("c1", "read"), Step::Hang],
    ]);
    let mut handle = start(&provider, &log, 5);
    common::prompt(&handle, "find A and B");
    let preparing_in = |ev: &CoreEvent, parent: &str| {
        matches!(ev, CoreEvent::Subagent { parent_call_id, event }
            if parent_call_id == parent && matches!(**event, CoreEvent::ToolPreparing { .. }))
    };
    // Bounded: children that do not run side by side fail here instead of hanging.
    let both_running = async {
        let mut events = read_until(&mut handle, |ev| {
            preparing_in(ev, "t1") || preparing_in(ev, "t2")
        })
        .await;
        let other = if events.iter().any(|ev| preparing_in(ev, "t1")) {
            "t2"
        } else {
            "t1"
        };
        events.extend(cancel_when(&mut handle, |ev| preparing_in(ev, other)).await);
        events
    };
    let events = tokio::time::timeout(Duration::from_secs(20), both_running)
        .await
        .expect("both children never had a call preparing at once");

    check_invariants(&events, &[]).unwrap();
    assert!(matches!(
        events.last(),
        Some(CoreEvent::TaskFinished {
            stop_reason: StopReason::Cancelled,
            ..
        })
    ));
    let ended: Vec<(String, String)> = events
        .iter()
        .filter_map(|ev| match ev {
            CoreEvent::Subagent {
                parent_call_id,
                event,
            } => match &**event {
                CoreEvent::PreparationDiscarded { call_id, .. } => {
                    Some((parent_call_id.clone(), format!("discarded {call_id}")))
                }
                _ => None,
            },
            CoreEvent::ToolFinished {
                call_id, status, ..
            } => Some((call_id.clone(), format!("{status:?}"))),
            _ => None,
        })
        .collect();
    let mut ended_sorted = ended.clone();
    ended_sorted.sort();
    assert_eq!(
        ended_sorted,
        vec![
            ("t1".to_owned(), "Failed".to_owned()),
            ("t1".to_owned(), "discarded c1".to_owned()),
            ("t2".to_owned(), "Failed".to_owned()),
            ("t2".to_owned(), "discarded c1".to_owned()),
        ]
    );
    assert_eq!(provider.requests().len(), 3, "no request after the cancel");
    assert!(log.tags().is_empty());
}

#[tokio::test]
async fn a_child_at_its_turn_limit_fails_its_call_and_the_parent_goes_on() {
    let log = ExecLog::default();
    let reading = |id: &str| {
        vec![
            call(id, "read", json!({"tag": id})),
            finish(FinishReason::ToolCalls),
        ]
    };
    let provider = ScriptedProvider::new(vec![
        vec![
            task_call("t1", "keep reading", "general"),
            finish(FinishReason::ToolCalls),
        ],
        vec![
            call("c1", "write", json!({"tag": "src/a.rs"})),
            finish(FinishReason::ToolCalls),
        ],
        reading("c2"),
        answer("I will do it myself"),
    ]);
    let mut handle = start(&provider, &log, 2);
    let events = run_task(&mut handle, "delegate").await;
    check_invariants(&events, &[]).unwrap();

    assert!(matches!(
        events.last(),
        Some(CoreEvent::TaskFinished {
            stop_reason: StopReason::EndTurn,
            ..
        })
    ));
    assert_eq!(log.tags(), vec!["src/a.rs", "c2"]);
    let requests = provider.requests();
    assert_eq!(requests.len(), 4);
    // general: every tool but `task`.
    assert_eq!(tool_names(&requests[1]), vec!["read", "write"]);
    let results = last_results(&requests[3]);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].call_id, "t1");
    assert!(results[0].is_error);
    assert_eq!(
        results[0].output,
        "subagent `Do keep reading` stopped after 2 model turns without finishing \
         (agent.subagentMaxTurns); give it a narrower job or do the rest yourself\n\n\
         Files changed: src/a.rs"
    );
}

#[tokio::test]
async fn only_the_parent_batch_is_summarized_never_a_child_batch() {
    let log = ExecLog::default();
    let provider = ScriptedProvider::new(vec![
        vec![
            task_call("t1", "look around", "explore"),
            finish(FinishReason::ToolCalls),
        ],
        vec![
            call("c1", "read", json!({"tag": "c1"})),
            finish(FinishReason::ToolCalls),
        ],
        answer("found it"),
        answer("done"),
    ]);
    let fast = ScriptedProvider::new(vec![answer("Explored the code")]);
    let mut config = test_config(
        Arc::new(provider.clone()),
        vec![FakeTool::reader("read", 1, &log)],
    );
    config.policy.subagents = Subagents::On {
        max_turns: MaxTurns(5),
        time_limit: Duration::from_secs(600),
        types: AgentTypes::default_types(),
    };
    config.summaries = Some(SummaryConfig {
        provider: Arc::new(fast.clone()),
        model: "fast-model".into(),
    });
    let mut handle = spawn_agent(config);
    let mut events = run_task(&mut handle, "explore").await;
    // The label is written while the next turn runs: it may settle before the task ends.
    let settles = |ev: &CoreEvent| {
        matches!(
            ev,
            CoreEvent::ToolUseSummary { .. } | CoreEvent::SummaryDropped { .. }
        )
    };
    if !events.iter().any(settles) {
        events.extend(read_until(&mut handle, settles).await);
    }
    check_invariants(&events, &[]).unwrap();
    assert_eq!(log.tags(), vec!["c1"]);
    assert_eq!(fast.requests().len(), 1);
    let summary: Vec<Value> = events
        .iter()
        .filter_map(|ev| match ev {
            CoreEvent::ToolUseSummary {
                summary,
                preceding_tool_use_ids,
            } => Some(json!([summary, preceding_tool_use_ids])),
            _ => None,
        })
        .collect();
    assert_eq!(summary, vec![json!(["Explored the code", ["t1"]])]);
    assert!(events.iter().any(|ev| is_child_turn(ev, "t1")));
}

#[tokio::test]
async fn an_agent_file_gives_a_child_with_its_tools_model_and_instructions_and_a_bad_file_warns() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let agents = home.path().join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews a diff\ntools: [read_file, grep]\n\
         model: review-model\n---\nLook for bugs only.\n",
    )
    .unwrap();
    let project_agents = project.path().join(".corvid").join("agents");
    std::fs::create_dir_all(&project_agents).unwrap();
    let broken = project_agents.join("broken.md");
    std::fs::write(&broken, "---\nname: broken\n").unwrap();
    let trusted = corvid_core::settings::ProjectTrust::vouched(
        Some(project.path().to_owned()),
        corvid_core::settings::Trust::Trusted,
    );
    let types = corvid_core::agents::files::load(Some(home.path()), project.path(), &trusted);

    let log = ExecLog::default();
    let provider = ScriptedProvider::new(vec![
        vec![
            task_call("t1", "review the diff", "reviewer"),
            finish(FinishReason::ToolCalls),
        ],
        answer("no bugs"),
        answer("reviewed"),
    ]);
    let mut config = test_config(
        Arc::new(provider.clone()),
        vec![
            FakeTool::reader("read_file", 1, &log),
            FakeTool::reader("grep", 1, &log),
            FakeTool::reader("glob", 1, &log),
            FakeTool::writer("write", 1, &log),
        ],
    );
    config.policy.subagents = Subagents::On {
        max_turns: MaxTurns(5),
        time_limit: Duration::from_secs(600),
        types,
    };
    let mut handle = spawn_agent(config);
    let warning = handle.next_event().await.unwrap();
    assert_eq!(
        warning,
        CoreEvent::Warning {
            message: format!(
                "agent file {} was left out: its front matter has no closing `---`",
                broken.display()
            ),
        }
    );
    let events = run_task(&mut handle, "review").await;
    check_invariants(&events, &[]).unwrap();

    let requests = provider.requests();
    assert_eq!(requests.len(), 3);
    let task_schema = requests[0].tools.iter().find(|t| t.name == "task").unwrap();
    assert!(
        task_schema
            .description
            .contains("- reviewer: Reviews a diff")
    );
    assert_eq!(tool_names(&requests[1]), vec!["read_file", "grep"]);
    assert_eq!(requests[1].model, "review-model");
    assert!(requests[1].system.ends_with("Look for bugs only."));
    assert_eq!(requests[2].model, "main-model");
    assert_eq!(last_results(&requests[2])[0].output, "no bugs");
}

#[tokio::test(start_paused = true)]
async fn a_child_at_its_time_limit_fails_its_call_with_its_cards_ended_and_the_parent_goes_on() {
    let log = ExecLog::default();
    let provider = ScriptedProvider::new(vec![
        vec![
            task_call("t1", "look everywhere", "explore"),
            finish(FinishReason::ToolCalls),
        ],
        vec![preparing("c1", "read"), Step::Hang],
        answer("I will look myself"),
    ]);
    let mut config = test_config(
        Arc::new(provider.clone()),
        vec![FakeTool::reader("read", 1, &log)],
    );
    config.policy.subagents = Subagents::On {
        max_turns: MaxTurns(5),
        time_limit: Duration::from_secs(30),
        types: AgentTypes::default_types(),
    };
    let mut handle = spawn_agent(config);
    let events = run_task(&mut handle, "delegate").await;
    check_invariants(&events, &[]).unwrap();
    assert!(matches!(
        events.last(),
        Some(CoreEvent::TaskFinished {
            stop_reason: StopReason::EndTurn,
            ..
        })
    ));
    let requests = provider.requests();
    assert_eq!(requests.len(), 3);
    let results = last_results(&requests[2]);
    assert!(results[0].is_error);
    assert_eq!(
        results[0].output,
        "subagent `Do look everywhere` stopped at its time limit of 30 s without finishing \
         (agent.subagentTimeoutMs); give it a narrower job or do the rest yourself"
    );
    assert!(
        events
            .iter()
            .any(|ev| matches!(ev, CoreEvent::Subagent { event, .. }
        if matches!(**event, CoreEvent::PreparationDiscarded { .. })))
    );
}

#[tokio::test]
async fn a_childs_approval_is_answered_under_the_task_and_call_ids() {
    let log = ExecLog::default();
    let provider = ScriptedProvider::new(vec![
        vec![
            task_call("t1", "edit a file", "general"),
            finish(FinishReason::ToolCalls),
        ],
        vec![
            call("c1", "write", json!({"tag": "src/a.rs"})),
            finish(FinishReason::ToolCalls),
        ],
        answer("edited"),
        answer("done"),
    ]);
    let mut config = config(&provider, &log, 10);
    config.approval_mode = corvid_protocol::ApprovalMode::Default;
    let mut handle = spawn_agent(config);
    handle
        .submit(corvid_protocol::Op::user_turn("delegate"))
        .unwrap();
    let run = async {
        loop {
            match handle.next_event().await.unwrap() {
                CoreEvent::Subagent {
                    parent_call_id,
                    event,
                } => {
                    if let CoreEvent::PermissionRequested { call_id, .. } = *event {
                        // Concurrent children may use the same call ids: the answer names
                        // the task too.
                        handle
                            .submit(corvid_protocol::Op::Approval {
                                call_id: corvid_protocol::subagent_call_id(
                                    &parent_call_id,
                                    &call_id,
                                ),
                                decision: corvid_protocol::ApprovalDecision::AllowOnce,
                            })
                            .unwrap();
                    }
                }
                CoreEvent::TaskFinished { .. } => return,
                _ => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("the child's approval was answered");
    assert_eq!(log.tags(), vec!["src/a.rs"]);
}

/// The session of `config` with these subagent caps.
fn capped(provider: &ScriptedProvider, log: &ExecLog, caps: SubagentCaps) -> AgentHandle {
    let mut config = config(provider, log, 5);
    config.policy.subagent_caps = caps;
    spawn_agent(config)
}

#[test]
fn subagents_are_capped_at_four_at_once_and_sixteen_per_turn_by_default() {
    assert_eq!(
        SubagentCaps::default(),
        SubagentCaps {
            concurrent: 4,
            per_turn: 16
        }
    );
}

#[tokio::test]
async fn one_model_turn_cannot_start_more_subagents_than_the_per_turn_cap() {
    let log = ExecLog::default();
    let provider = ScriptedProvider::new(vec![
        vec![
            task_call("t1", "look 1", "explore"),
            task_call("t2", "look 2", "explore"),
            task_call("t3", "look 3", "explore"),
            finish(FinishReason::ToolCalls),
        ],
        answer("found"),
        answer("found"),
        // The next turn counts afresh.
        vec![
            task_call("t4", "look 4", "explore"),
            finish(FinishReason::ToolCalls),
        ],
        answer("found again"),
        answer("done"),
    ]);
    let mut handle = capped(
        &provider,
        &log,
        SubagentCaps {
            concurrent: 4,
            per_turn: 2,
        },
    );
    let events = run_task(&mut handle, "look three times").await;
    check_invariants(&events, &[]).unwrap();

    let requests = provider.requests();
    assert_eq!(
        requests.len(),
        6,
        "two children, not three, ran in turn one"
    );
    let mut first: Vec<(String, bool)> = last_results(&requests[3])
        .into_iter()
        .map(|r| (r.output, r.is_error))
        .collect();
    first.sort();
    assert_eq!(
        first,
        vec![
            ("found".to_owned(), false),
            ("found".to_owned(), false),
            (
                "refused: one model turn may start at most 2 subagents \
                 (agent.maxSubagentsPerTurn); do this one yourself or ask for it in a later turn"
                    .to_owned(),
                true
            ),
        ]
    );
    let second: Vec<(String, bool)> = last_results(&requests[5])
        .into_iter()
        .map(|r| (r.output, r.is_error))
        .collect();
    assert_eq!(second, vec![("found again".to_owned(), false)]);
}

/// Paused time: a sleep returns only once every task that can run has run, so the count seen
/// after it is the count the session settles at, not a guess about timing.
#[tokio::test(start_paused = true)]
async fn no_more_subagents_run_at_once_than_the_concurrency_cap() {
    let log = ExecLog::default();
    let gates: Vec<Arc<Notify>> = (0..3).map(|_| Arc::new(Notify::new())).collect();
    let child = |gate: &Arc<Notify>| {
        vec![
            Step::Wait(gate.clone()),
            text("found"),
            finish(FinishReason::Stop),
        ]
    };
    let provider = ScriptedProvider::new(vec![
        vec![
            task_call("t1", "look 1", "explore"),
            task_call("t2", "look 2", "explore"),
            task_call("t3", "look 3", "explore"),
            finish(FinishReason::ToolCalls),
        ],
        child(&gates[0]),
        child(&gates[1]),
        child(&gates[2]),
        answer("done"),
    ]);
    let mut handle = capped(
        &provider,
        &log,
        SubagentCaps {
            concurrent: 2,
            per_turn: 16,
        },
    );
    common::prompt(&handle, "look three times");
    requests_reach(&provider, 3).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        provider.requests().len(),
        3,
        "a third child started while two were running"
    );
    for gate in &gates {
        gate.notify_one();
    }
    let events = collect_task(&mut handle).await;
    check_invariants(&events, &[]).unwrap();
    let requests = provider.requests();
    assert_eq!(requests.len(), 5);
    let results: Vec<(String, bool)> = last_results(&requests[4])
        .into_iter()
        .map(|r| (r.output, r.is_error))
        .collect();
    assert_eq!(results, vec![("found".to_owned(), false); 3]);
}
