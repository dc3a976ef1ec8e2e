//! Plan mode (issue 14 item 17): only read-only tools are offered and run, a mutating call is
//! refused unasked and never runs, and `exit_plan_mode` shows the plan and asks the user to
//! leave plan mode; a yes switches the mode (and says so), a no keeps planning.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::approvals::{
    Asked, Ran, asked, finished, one_call, run, turns, workspace_config, write,
};
use corvid_protocol::{
    ApprovalDecision, ApprovalMode, ApprovalPreview, CoreEvent, Todo, TodoStatus, ToolStatus,
};
use pretty_assertions::assert_eq;
use serde_json::json;

const REFUSED: &str = "plan mode: this session only plans; this call did not run. Call \
                       exit_plan_mode with your plan to ask the user to start working.";

const LEAVE: &str = "the agent asks to leave plan mode and start working on this plan";

fn exit_call(id: &str, plan: &str) -> Vec<common::scripted::Step> {
    one_call(id, "exit_plan_mode", json!({ "plan": plan }))
}

fn mode_changes(events: &[CoreEvent]) -> Vec<ApprovalMode> {
    events
        .iter()
        .filter_map(|ev| match ev {
            CoreEvent::ApprovalModeChanged { mode } => Some(*mode),
            _ => None,
        })
        .collect()
}

fn plans(events: &[CoreEvent]) -> Vec<Vec<Todo>> {
    events
        .iter()
        .filter_map(|ev| match ev {
            CoreEvent::Plan { todos } => Some(todos.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn in_plan_mode_a_write_is_refused_unasked_and_never_runs() {
    let ws = tempfile::tempdir().unwrap();
    let provider = turns(vec![write("w1", "a.txt", "hello")]);
    let config = workspace_config(&provider, ws.path(), ApprovalMode::Plan, &Ran::default());
    let (_h, events) = run(config, |_| ApprovalDecision::AllowOnce).await;
    assert_eq!(asked(&events), Vec::<Asked>::new());
    assert_eq!(
        finished(&events),
        vec![("w1".to_owned(), ToolStatus::Failed, REFUSED.to_owned())]
    );
    assert!(!ws.path().join("a.txt").exists());
    // The model is told why, in the tool result of the next request.
    let second = &provider.requests()[1];
    let told = serde_json::to_string(&second.messages).unwrap();
    assert!(
        told.contains("plan mode: this session only plans"),
        "{told}"
    );
}

#[tokio::test]
async fn plan_mode_offers_only_read_only_tools_and_says_it_is_planning() {
    let ws = tempfile::tempdir().unwrap();
    let provider = turns(vec![]);
    let ran = Ran::default();
    let config = workspace_config(&provider, ws.path(), ApprovalMode::Plan, &ran);
    let (_h, _events) = run(config, |_| ApprovalDecision::AllowOnce).await;
    let request = &provider.requests()[0];
    let names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "read_file",
            "list_directory",
            "glob",
            "grep_search",
            // Reads what was started before planning began.
            "shell_output",
            "todo_write",
            // Offered, but refused unasked unless a rule allows the domain (approval_web.rs).
            "web_fetch",
            "exit_plan_mode",
            // Asking the user is part of planning (never `enter_plan_mode`: it plans already).
            "ask_user"
        ]
    );
    assert!(request.system.contains("You are in PLAN MODE."));

    let provider = turns(vec![]);
    let config = workspace_config(&provider, ws.path(), ApprovalMode::Default, &ran);
    let (_h, _events) = run(config, |_| ApprovalDecision::AllowOnce).await;
    let request = &provider.requests()[0];
    let names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(!names.contains(&"exit_plan_mode"), "{names:?}");
    assert!(names.contains(&"write_file"), "{names:?}");
    assert!(!request.system.contains("PLAN MODE"));
}

#[tokio::test]
async fn an_approved_plan_switches_the_mode_and_the_next_write_runs() {
    for (decision, mode) in [
        (ApprovalDecision::AllowOnce, ApprovalMode::Default),
        (ApprovalDecision::AllowAlways, ApprovalMode::AutoEdit),
    ] {
        let ws = tempfile::tempdir().unwrap();
        let plan = "# Plan\n1. Write `a.txt`\n2. Check it";
        let provider = turns(vec![exit_call("x1", plan), write("w1", "a.txt", "hello")]);
        let config = workspace_config(&provider, ws.path(), ApprovalMode::Plan, &Ran::default());
        let (_h, events) = run(config, |_| decision).await;
        let expected_ask = Asked {
            call_id: "x1".into(),
            reason: Some(LEAVE.into()),
            always_scope: Some("edits".into()),
        };
        let asks = asked(&events);
        assert_eq!(asks[0], expected_ask, "{decision:?}");
        let preview = events.iter().find_map(|ev| match ev {
            CoreEvent::PermissionRequested { preview, .. } => Some(preview.clone()),
            _ => None,
        });
        assert_eq!(preview, Some(ApprovalPreview::Text { text: plan.into() }));
        assert_eq!(
            plans(&events),
            vec![vec![
                Todo {
                    id: "1".into(),
                    content: "Write `a.txt`".into(),
                    status: TodoStatus::Pending
                },
                Todo {
                    id: "2".into(),
                    content: "Check it".into(),
                    status: TodoStatus::Pending
                },
            ]]
        );
        assert_eq!(mode_changes(&events), vec![mode], "{decision:?}");
        let statuses: Vec<(String, ToolStatus)> = finished(&events)
            .into_iter()
            .map(|(id, status, _)| (id, status))
            .collect();
        assert_eq!(
            statuses,
            vec![
                ("x1".to_owned(), ToolStatus::Completed),
                ("w1".to_owned(), ToolStatus::Completed)
            ],
            "{decision:?}"
        );
        assert_eq!(
            std::fs::read_to_string(ws.path().join("a.txt")).unwrap(),
            "hello"
        );
        // After the switch the model is offered the working tools again.
        let names: Vec<String> = provider.requests()[1]
            .tools
            .iter()
            .map(|t| t.name.clone())
            .collect();
        assert!(names.contains(&"write_file".to_owned()), "{names:?}");
    }
}

#[tokio::test]
async fn a_rejected_plan_keeps_plan_mode_and_the_model_is_told_to_keep_planning() {
    let ws = tempfile::tempdir().unwrap();
    let provider = turns(vec![exit_call("x1", "- do it"), write("w1", "a.txt", "x")]);
    let config = workspace_config(&provider, ws.path(), ApprovalMode::Plan, &Ran::default());
    let (_h, events) = run(config, |_| ApprovalDecision::RejectOnce).await;
    assert_eq!(mode_changes(&events), Vec::<ApprovalMode>::new());
    let ends = finished(&events);
    assert_eq!(ends[0].0, "x1");
    assert_eq!(ends[0].1, ToolStatus::Failed);
    assert!(
        ends[0].2.starts_with("The user wants to keep planning"),
        "{}",
        ends[0].2
    );
    assert_eq!(
        ends[1],
        ("w1".to_owned(), ToolStatus::Failed, REFUSED.to_owned())
    );
    assert!(!ws.path().join("a.txt").exists());
    // Only one question: the write was refused, never asked.
    assert_eq!(asked(&events).len(), 1);
}

#[tokio::test]
async fn exit_plan_mode_outside_plan_mode_is_refused_without_asking() {
    let ws = tempfile::tempdir().unwrap();
    let provider = turns(vec![exit_call("x1", "- do it")]);
    let config = workspace_config(&provider, ws.path(), ApprovalMode::Yolo, &Ran::default());
    let (_h, events) = run(config, |_| ApprovalDecision::AllowOnce).await;
    assert_eq!(asked(&events), Vec::<Asked>::new());
    assert_eq!(mode_changes(&events), Vec::<ApprovalMode>::new());
    assert_eq!(finished(&events)[0].1, ToolStatus::Failed);
}

#[tokio::test]
async fn in_plan_mode_a_subagent_is_told_to_report_and_its_write_is_refused_without_exit_plan_mode()
{
    let ws = tempfile::tempdir().unwrap();
    let provider = turns(vec![
        one_call(
            "t1",
            "task",
            json!({"description": "Look around", "prompt": "Write a.txt.",
                   "subagent_type": "general"}),
        ),
        write("w1", "a.txt", "hello"),
        common::scripted::answer("I could not write in plan mode."),
    ]);
    let mut config = workspace_config(&provider, ws.path(), ApprovalMode::Plan, &Ran::default());
    config.policy.subagents = corvid_core::policy::Subagents::On {
        max_turns: corvid_core::policy::MaxTurns(5),
        time_limit: std::time::Duration::from_secs(600),
        types: corvid_core::agents::AgentTypes::default_types(),
    };
    let (_h, events) = run(config, |_| ApprovalDecision::AllowOnce).await;
    assert!(!ws.path().join("a.txt").exists());
    let requests = provider.requests();
    // The session plans and may leave plan mode; its child only reports.
    assert!(requests[0].system.contains("call exit_plan_mode"));
    let child = &requests[1].system;
    assert!(child.contains("report what you found"), "{child}");
    assert!(!child.contains("exit_plan_mode"), "{child}");
    // The child's refused write tells it what it can do instead.
    let child_told = serde_json::to_string(&requests[2].messages).unwrap();
    assert!(
        child_told.contains("Use the read-only tools and report what you found."),
        "{child_told}"
    );
    assert!(!child_told.contains("exit_plan_mode"), "{child_told}");
    assert!(matches!(
        events.last(),
        Some(CoreEvent::TaskFinished { .. })
    ));
}
