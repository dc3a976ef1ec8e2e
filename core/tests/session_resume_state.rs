//! What a resumed session goes on with besides its history: the model switched to with
//! `/model` and the approval mode set over ACP or the TUI (issue 14 defects 5 and 12).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::fake_tools::{ExecLog, FakeTool};
use common::scripted::*;
use common::{collect_task_deciding, read_until, run_task, test_config};
use corvid_core::agent::spawn_agent_observed;
use corvid_core::session::{Record, SessionStore, spawn_resumed};
use corvid_protocol::{
    ApprovalDecision, ApprovalMode, CoreEvent, FinishReason, Op, ReasoningEffort,
};
use pretty_assertions::assert_eq;
use serde_json::json;

fn changes(records: &[Record]) -> Vec<Record> {
    records
        .iter()
        .filter(|r| {
            matches!(
                r,
                Record::ModelChange { .. } | Record::ApprovalModeChange { .. }
            )
        })
        .cloned()
        .collect()
}

#[tokio::test]
async fn a_model_switch_is_recorded_and_resume_applies_it() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let recorder = Arc::new(store.create(cwd.path(), "m1", "main-model").unwrap());
    let provider = ScriptedProvider::new(vec![answer("one"), answer("two")]);
    let mut handle = spawn_agent_observed(
        test_config(Arc::new(provider.clone()), Vec::new()),
        recorder,
    );
    run_task(&mut handle, "first").await;
    handle
        .submit(Op::SetModel {
            model: "other-model".into(),
        })
        .unwrap();
    let seen = read_until(&mut handle, |e| matches!(e, CoreEvent::ModelChanged { .. })).await;
    assert_eq!(
        seen,
        vec![CoreEvent::ModelChanged {
            from: "main-model".into(),
            to: "other-model".into(),
        }]
    );
    run_task(&mut handle, "second").await;
    common::shut_down(handle).await;

    let loaded = store.load(cwd.path(), "m1").unwrap();
    assert_eq!(
        changes(&loaded.records),
        vec![Record::ModelChange {
            from: "main-model".into(),
            to: "other-model".into(),
        }]
    );
    let provider = ScriptedProvider::new(vec![answer("three")]);
    // The configured model is the settings' one; the recording wins.
    let resumed = spawn_resumed(
        test_config(Arc::new(provider.clone()), Vec::new()),
        &store,
        &loaded,
    )
    .unwrap();
    assert_eq!(resumed.model, "other-model");
    assert!(resumed.transcript.contains(&CoreEvent::ModelChanged {
        from: "main-model".into(),
        to: "other-model".into(),
    }));
    let mut handle = resumed.handle;
    run_task(&mut handle, "third").await;
    assert_eq!(provider.requests()[0].model, "other-model");
}

#[tokio::test]
async fn an_approval_mode_change_is_recorded_and_resume_applies_it() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let recorder = Arc::new(store.create(cwd.path(), "a1", "main-model").unwrap());
    let provider = ScriptedProvider::new(vec![answer("one")]);
    let mut config = test_config(Arc::new(provider), Vec::new());
    config.approval_mode = ApprovalMode::Default;
    let mut handle = spawn_agent_observed(config, recorder);
    run_task(&mut handle, "first").await;
    // Setting the mode it already has changes nothing and records nothing.
    for mode in [ApprovalMode::Default, ApprovalMode::AutoEdit] {
        handle.submit(Op::SetApprovalMode { mode }).unwrap();
    }
    let seen = read_until(&mut handle, |e| {
        matches!(e, CoreEvent::ApprovalModeChanged { .. })
    })
    .await;
    assert_eq!(
        seen,
        vec![CoreEvent::ApprovalModeChanged {
            mode: ApprovalMode::AutoEdit
        }]
    );
    common::shut_down(handle).await;

    let loaded = store.load(cwd.path(), "a1").unwrap();
    assert_eq!(
        changes(&loaded.records),
        vec![Record::ApprovalModeChange {
            mode: ApprovalMode::AutoEdit
        }]
    );
    let provider = ScriptedProvider::new(vec![
        vec![
            call("w1", "write", json!({"tag": "w1"})),
            finish(FinishReason::ToolCalls),
        ],
        answer("written"),
    ]);
    let log = ExecLog::default();
    let mut config = test_config(Arc::new(provider), vec![FakeTool::writer("write", 1, &log)]);
    config.approval_mode = ApprovalMode::Default;
    let resumed = spawn_resumed(config, &store, &loaded).unwrap();
    assert_eq!(resumed.approval_mode, ApprovalMode::AutoEdit);
    assert!(
        resumed
            .transcript
            .contains(&CoreEvent::ApprovalModeChanged {
                mode: ApprovalMode::AutoEdit
            })
    );
    // In auto-edit the edit runs without a question.
    let mut handle = resumed.handle;
    common::prompt(&handle, "write it");
    let events = collect_task_deciding(&mut handle, |_| ApprovalDecision::RejectOnce).await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, CoreEvent::PermissionRequested { .. })),
        "{events:?}"
    );
    assert_eq!(log.tags(), vec!["w1"]);
}

#[tokio::test]
async fn the_auto_mode_is_recorded_and_resume_applies_it() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let recorder = Arc::new(store.create(cwd.path(), "a2", "main-model").unwrap());
    let provider = ScriptedProvider::new(vec![answer("one")]);
    let mut handle = spawn_agent_observed(test_config(Arc::new(provider), Vec::new()), recorder);
    run_task(&mut handle, "first").await;
    handle
        .submit(Op::SetApprovalMode {
            mode: ApprovalMode::Auto,
        })
        .unwrap();
    read_until(&mut handle, |e| {
        matches!(e, CoreEvent::ApprovalModeChanged { .. })
    })
    .await;
    common::shut_down(handle).await;

    let loaded = store.load(cwd.path(), "a2").unwrap();
    assert_eq!(
        changes(&loaded.records),
        vec![Record::ApprovalModeChange {
            mode: ApprovalMode::Auto
        }]
    );
    let provider = ScriptedProvider::new(vec![answer("two")]);
    let resumed =
        spawn_resumed(test_config(Arc::new(provider), Vec::new()), &store, &loaded).unwrap();
    assert_eq!(resumed.approval_mode, ApprovalMode::Auto);
}

/// A Responses provider on a loopback server answering every request with text.
fn responses_provider(
    server: &corvid_testkit::MockServer,
) -> corvid_providers::OpenAiResponsesProvider {
    corvid_providers::OpenAiResponsesProvider::new(&corvid_providers::ProviderConfig {
        base_url: server.url(),
        api_key: corvid_providers::ApiKey::new("sk-resume-effort"),
        ..corvid_providers::ProviderConfig::default()
    })
    .unwrap()
}

fn push_answers(server: &corvid_testkit::MockServer, count: usize) {
    let answer = corvid_testkit::fixtures::load("openai-responses/text_only");
    for _ in 0..count {
        server.push(corvid_testkit::ScriptedResponse::sse(
            corvid_testkit::fixtures::split_into_events(&answer.body),
        ));
    }
}

#[tokio::test]
async fn a_reasoning_effort_change_is_recorded_and_resume_asks_for_it_again() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let server = corvid_testkit::MockServer::start().await;
    push_answers(&server, 1);
    let recorder = Arc::new(store.create(cwd.path(), "e1", "gpt-5.1-codex").unwrap());
    let mut config = test_config(Arc::new(responses_provider(&server)), Vec::new());
    config.model = "gpt-5.1-codex".into();
    let mut handle = spawn_agent_observed(config, recorder);
    // Asking for the effort twice records it once: the second changes nothing.
    for _ in 0..2 {
        handle
            .submit(Op::SetReasoningEffort {
                effort: ReasoningEffort::High,
            })
            .unwrap();
    }
    let seen = read_until(&mut handle, |e| {
        matches!(e, CoreEvent::ReasoningEffortChanged { .. })
    })
    .await;
    assert_eq!(
        seen,
        vec![CoreEvent::ReasoningEffortChanged {
            effort: ReasoningEffort::High
        }]
    );
    run_task(&mut handle, "first").await;
    common::shut_down(handle).await;

    let loaded = store.load(cwd.path(), "e1").unwrap();
    let recorded: Vec<&Record> = loaded
        .records
        .iter()
        .filter(|r| matches!(r, Record::ReasoningEffortChange { .. }))
        .collect();
    assert_eq!(
        recorded,
        vec![&Record::ReasoningEffortChange {
            effort: ReasoningEffort::High
        }]
    );
    // A fresh provider asks for the server's default until the recording is applied.
    let server = corvid_testkit::MockServer::start().await;
    push_answers(&server, 1);
    let mut config = test_config(Arc::new(responses_provider(&server)), Vec::new());
    config.model = "gpt-5.1-codex".into();
    let resumed = spawn_resumed(config, &store, &loaded).unwrap();
    assert_eq!(resumed.reasoning_effort, Some(ReasoningEffort::High));
    assert!(
        resumed
            .transcript
            .contains(&CoreEvent::ReasoningEffortChanged {
                effort: ReasoningEffort::High
            })
    );
    let mut handle = resumed.handle;
    run_task(&mut handle, "second").await;
    assert_eq!(
        server.requests()[0].body["reasoning"]["effort"],
        json!("high")
    );
}

#[tokio::test]
async fn a_recorded_effort_the_resumed_model_does_not_take_is_left_out() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let recorder = store.create(cwd.path(), "e2", "gpt-5.1-codex").unwrap();
    recorder
        .append(&Record::ReasoningEffortChange {
            effort: ReasoningEffort::Low,
        })
        .unwrap();
    drop(recorder);
    let loaded = store.load(cwd.path(), "e2").unwrap();
    // The scripted provider takes no effort for any model.
    let provider = ScriptedProvider::new(vec![answer("one")]);
    let resumed =
        spawn_resumed(test_config(Arc::new(provider), Vec::new()), &store, &loaded).unwrap();
    assert_eq!(resumed.reasoning_effort, None);
}
