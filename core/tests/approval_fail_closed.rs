//! Approvals never fail open (issue 14 defect 2): a plan that failed or crashed refuses its
//! call without asking and without running it; an escalated call is asked in every mode.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::approvals::{
    Asked, FixedNeed, Planning, Ran, asked, finished, one_call, run, turns, workspace_config,
};
use corvid_core::policy::rules::PermissionRules;
use corvid_protocol::{ApprovalDecision, ApprovalMode, ApprovalPreview, CoreEvent, ToolStatus};
use corvid_tools::{ApprovalNeed, ToolError};
use pretty_assertions::assert_eq;
use serde_json::json;

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test]
async fn a_refused_plan_never_runs_and_never_asks() {
    for mode in [
        ApprovalMode::Default,
        ApprovalMode::AutoEdit,
        ApprovalMode::Yolo,
    ] {
        let ws = tempfile::tempdir().unwrap();
        let ran = Ran::default();
        let provider = turns(vec![one_call("p1", "flaky_edit", json!({}))]);
        let mut config = workspace_config(&provider, ws.path(), mode, &ran);
        let message = "cannot read src/a.rs: Resource temporarily unavailable";
        config.tools = corvid_tools::ToolRegistry::new(vec![Arc::new(FixedNeed {
            name: "flaky_edit",
            plan: Planning::Answers(ApprovalNeed::Refuse(ToolError::new(message))),
            ran: ran.clone(),
        })]);
        let (_h, events) = run(config, |_| ApprovalDecision::AllowOnce).await;
        assert_eq!(asked(&events), Vec::<Asked>::new(), "{mode:?}");
        assert_eq!(
            finished(&events),
            vec![("p1".to_owned(), ToolStatus::Failed, message.to_owned())],
            "{mode:?}"
        );
        assert_eq!(ran.all(), Vec::<String>::new(), "{mode:?}");
    }
}

#[tokio::test]
async fn escalated_calls_are_asked_even_in_yolo() {
    let ws = tempfile::tempdir().unwrap();
    let ran = Ran::default();
    let provider = turns(vec![
        one_call("x1", "unconfined", json!({})),
        one_call("x2", "unconfined", json!({})),
    ]);
    let mut config = workspace_config(&provider, ws.path(), ApprovalMode::Yolo, &ran);
    let reason = "the sandbox could not be set up: the command would run unconfined";
    config.tools = corvid_tools::ToolRegistry::new(vec![Arc::new(FixedNeed {
        name: "unconfined",
        plan: Planning::Answers(ApprovalNeed::Escalated {
            preview: ApprovalPreview::Text { text: "id".into() },
            reason: reason.to_owned(),
        }),
        ran: ran.clone(),
    })]);
    // Neither an allow rule nor an earlier "always" skips the question.
    config.policy.rules = PermissionRules::new(&strings(&["unconfined"]), &[]).unwrap();
    let (_h, events) = run(config, |_| ApprovalDecision::AllowAlways).await;
    let expected = |id: &str| Asked {
        call_id: id.to_owned(),
        reason: Some(reason.to_owned()),
        always_scope: None,
    };
    assert_eq!(asked(&events), vec![expected("x1"), expected("x2")]);
    assert_eq!(ran.all(), strings(&["unconfined", "unconfined"]));
    assert!(
        events
            .iter()
            .all(|e| !matches!(e, CoreEvent::Warning { .. }))
    );
}

#[tokio::test]
async fn a_tool_that_panics_while_planning_is_refused_and_the_session_goes_on() {
    let ws = tempfile::tempdir().unwrap();
    let ran = Ran::default();
    let provider = turns(vec![one_call("p1", "crashing_plan", json!({}))]);
    let mut config = workspace_config(&provider, ws.path(), ApprovalMode::Yolo, &ran);
    config.tools = corvid_tools::ToolRegistry::new(vec![Arc::new(FixedNeed {
        name: "crashing_plan",
        plan: Planning::Panics,
        ran: ran.clone(),
    })]);
    let (_h, events) = run(config, |_| ApprovalDecision::AllowOnce).await;
    assert_eq!(asked(&events), Vec::<Asked>::new());
    assert_eq!(
        finished(&events),
        vec![(
            "p1".to_owned(),
            ToolStatus::Failed,
            "internal error: the `crashing_plan` tool crashed while planning the call; it did \
             not run"
                .to_owned()
        )]
    );
    assert_eq!(ran.all(), Vec::<String>::new());
    assert!(matches!(
        events.last(),
        Some(CoreEvent::TaskFinished { .. })
    ));
}

#[tokio::test]
async fn a_cancel_while_a_call_is_being_planned_ends_the_task_without_running_it() {
    let ws = tempfile::tempdir().unwrap();
    let ran = Ran::default();
    let planning = Arc::new(tokio::sync::Notify::new());
    let provider = turns(vec![one_call("p1", "endless_plan", json!({}))]);
    let mut config = workspace_config(&provider, ws.path(), ApprovalMode::Yolo, &ran);
    config.tools = corvid_tools::ToolRegistry::new(vec![Arc::new(FixedNeed {
        name: "endless_plan",
        plan: Planning::NeverEnds(planning.clone()),
        ran: ran.clone(),
    })]);
    let mut handle = corvid_core::agent::spawn_agent(config);
    common::prompt(&handle, "go");
    planning.notified().await;
    handle.submit(corvid_protocol::Op::Cancel).unwrap();
    // A hang guard, not a timing assertion: before the fix the task never ended.
    let events = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        common::collect_task(&mut handle),
    )
    .await
    .expect("the task must end after the cancel");
    common::invariants::check_invariants(&events, &[]).unwrap();
    assert_eq!(asked(&events), Vec::<Asked>::new());
    assert_eq!(ran.all(), Vec::<String>::new());
    assert!(matches!(
        events.last(),
        Some(CoreEvent::TaskFinished { .. })
    ));
}
