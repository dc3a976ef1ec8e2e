//! `enter_plan_mode` (issue 30): asked in `default`, allowed unasked in the modes that let the
//! agent work alone, a no-op with a note while planning; once in plan mode the next request
//! offers only the plan tools.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::approvals::{Asked, Ran, asked, finished, one_call, run, turns, workspace_config};
use corvid_protocol::{ApprovalDecision, ApprovalMode, ApprovalPreview, CoreEvent, ToolStatus};
use pretty_assertions::assert_eq;
use serde_json::json;

const ENTERED: &str = "Plan mode is on. Do not change anything: no file edits, no shell \
                       commands; only the read-only tools (and todo_write) are available. \
                       Investigate, then call exit_plan_mode with a concise plan in Markdown \
                       for the user to approve.";

const PLAN_TOOLS: [&str; 9] = [
    "read_file",
    "list_directory",
    "glob",
    "grep_search",
    "shell_output",
    "todo_write",
    "web_fetch",
    "exit_plan_mode",
    "ask_user",
];

fn enter(id: &str) -> Vec<common::scripted::Step> {
    one_call(id, "enter_plan_mode", json!({}))
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

fn offered(provider: &common::scripted::ScriptedProvider, request: usize) -> Vec<String> {
    provider.requests()[request]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect()
}

#[tokio::test]
async fn in_default_mode_it_is_asked_and_once_approved_only_the_plan_tools_are_offered() {
    let ws = tempfile::tempdir().unwrap();
    let provider = turns(vec![enter("e1")]);
    let config = workspace_config(&provider, ws.path(), ApprovalMode::Default, &Ran::default());
    let (_h, events) = run(config, |_| ApprovalDecision::AllowOnce).await;
    assert_eq!(
        asked(&events),
        vec![Asked {
            call_id: "e1".into(),
            reason: None,
            // "Always" covers the whole tool.
            always_scope: None,
        }]
    );
    let preview = events.iter().find_map(|ev| match ev {
        CoreEvent::PermissionRequested { preview, .. } => Some(preview.clone()),
        _ => None,
    });
    assert_eq!(
        preview,
        Some(ApprovalPreview::Text {
            text: corvid_tools::enter_plan_mode::ENTER_QUESTION.into()
        })
    );
    assert_eq!(mode_changes(&events), vec![ApprovalMode::Plan]);
    assert_eq!(
        finished(&events),
        vec![("e1".to_owned(), ToolStatus::Completed, ENTERED.to_owned())]
    );
    assert!(offered(&provider, 0).contains(&"write_file".to_owned()));
    assert_eq!(offered(&provider, 1), PLAN_TOOLS);
    assert!(
        provider.requests()[1]
            .system
            .contains("You are in PLAN MODE.")
    );
}

#[tokio::test]
async fn a_rejected_request_keeps_the_mode_and_every_tool() {
    let ws = tempfile::tempdir().unwrap();
    let provider = turns(vec![enter("e1")]);
    let config = workspace_config(&provider, ws.path(), ApprovalMode::Default, &Ran::default());
    let (_h, events) = run(config, |_| ApprovalDecision::RejectOnce).await;
    assert_eq!(mode_changes(&events), Vec::<ApprovalMode>::new());
    assert_eq!(finished(&events)[0].1, ToolStatus::Failed);
    assert!(offered(&provider, 1).contains(&"write_file".to_owned()));
}

#[tokio::test]
async fn the_modes_that_work_alone_enter_plan_mode_without_asking() {
    for mode in [
        ApprovalMode::AutoEdit,
        ApprovalMode::Yolo,
        ApprovalMode::Auto,
    ] {
        let ws = tempfile::tempdir().unwrap();
        let provider = turns(vec![enter("e1")]);
        let config = workspace_config(&provider, ws.path(), mode, &Ran::default());
        let (_h, events) = run(config, |_| ApprovalDecision::RejectOnce).await;
        assert_eq!(asked(&events), Vec::<Asked>::new(), "{mode:?}");
        assert_eq!(mode_changes(&events), vec![ApprovalMode::Plan], "{mode:?}");
        assert_eq!(offered(&provider, 1), PLAN_TOOLS, "{mode:?}");
    }
}

#[tokio::test]
async fn while_planning_it_is_not_offered_and_a_call_is_a_no_op_with_a_note() {
    let ws = tempfile::tempdir().unwrap();
    let provider = turns(vec![enter("e1")]);
    let config = workspace_config(&provider, ws.path(), ApprovalMode::Plan, &Ran::default());
    let (_h, events) = run(config, |_| ApprovalDecision::RejectOnce).await;
    assert_eq!(offered(&provider, 0), PLAN_TOOLS);
    assert_eq!(asked(&events), Vec::<Asked>::new());
    assert_eq!(mode_changes(&events), Vec::<ApprovalMode>::new());
    assert_eq!(
        finished(&events),
        vec![(
            "e1".to_owned(),
            ToolStatus::Completed,
            "The session is already in plan mode; nothing changed. Go on planning and call \
             exit_plan_mode with your plan when it is ready."
                .to_owned()
        )]
    );
}

#[tokio::test]
async fn a_deny_rule_still_refuses_it_in_yolo() {
    let ws = tempfile::tempdir().unwrap();
    let provider = turns(vec![enter("e1")]);
    let mut config = workspace_config(&provider, ws.path(), ApprovalMode::Yolo, &Ran::default());
    config.policy.rules =
        corvid_core::policy::rules::PermissionRules::new(&[], &["enter_plan_mode".to_owned()])
            .unwrap();
    let (_h, events) = run(config, |_| ApprovalDecision::AllowOnce).await;
    assert_eq!(mode_changes(&events), Vec::<ApprovalMode>::new());
    assert_eq!(finished(&events)[0].1, ToolStatus::Failed);
}

#[tokio::test]
async fn the_switch_is_recorded_and_a_resumed_session_starts_planning() {
    use corvid_core::session::{SessionStore, spawn_resumed};
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let recorder = std::sync::Arc::new(store.create(ws.path(), "p1", "main-model").unwrap());
    let provider = turns(vec![enter("e1")]);
    let config = workspace_config(&provider, ws.path(), ApprovalMode::Yolo, &Ran::default());
    let mut handle = corvid_core::agent::spawn_agent_observed(config, recorder);
    common::prompt(&handle, "go");
    common::collect_task(&mut handle).await;
    common::shut_down(handle).await;

    let loaded = store.load(ws.path(), "p1").unwrap();
    let provider = turns(vec![]);
    let config = workspace_config(&provider, ws.path(), ApprovalMode::Default, &Ran::default());
    let resumed = spawn_resumed(config, &store, &loaded).unwrap();
    assert_eq!(resumed.approval_mode, ApprovalMode::Plan);
    let card = resumed.transcript.iter().find_map(|ev| match ev {
        CoreEvent::ToolStarted { display, .. } => Some(display.title.clone()),
        _ => None,
    });
    assert_eq!(card.as_deref(), Some("Enter plan mode"));
    let mut handle = resumed.handle;
    common::prompt(&handle, "again");
    common::collect_task(&mut handle).await;
    assert_eq!(offered(&provider, 0), PLAN_TOOLS);
}

#[tokio::test]
async fn after_entering_plan_mode_in_yolo_a_write_is_refused_and_never_runs() {
    let ws = tempfile::tempdir().unwrap();
    let provider = turns(vec![
        enter("e1"),
        common::approvals::write("w1", "a.txt", "x"),
    ]);
    let config = workspace_config(&provider, ws.path(), ApprovalMode::Yolo, &Ran::default());
    let (_h, events) = run(config, |_| ApprovalDecision::AllowAlways).await;
    assert_eq!(asked(&events), Vec::<Asked>::new());
    let statuses: Vec<(String, ToolStatus)> = finished(&events)
        .into_iter()
        .map(|(id, status, _)| (id, status))
        .collect();
    assert_eq!(
        statuses,
        vec![
            ("e1".to_owned(), ToolStatus::Completed),
            ("w1".to_owned(), ToolStatus::Failed)
        ]
    );
    assert!(!ws.path().join("a.txt").exists());
}
