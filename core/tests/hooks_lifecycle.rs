//! The session's own hook events in a real agent (issue 27): `SessionStart` and `SessionEnd`
//! around the session and `/clear`, `PreCompact` before `/compress`, `Notification` when a
//! permission prompt shows, and `continue: false` ending the task. Handlers are real `bash`
//! commands that log their stdin, so each event's input is checked as Claude Code defines it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::Arc;

use common::approvals::{Ran, shell, workspace_config};
use common::scripted::{ScriptedProvider, answer};
use common::{collect_task, run_task, shut_down};
use corvid_core::agent::spawn_agent;
use corvid_core::hooks::{HookScope, Hooks, HooksConfig, SessionHooks};
use corvid_protocol::{ApprovalDecision, ApprovalMode, CoreEvent, Op};
use corvid_tools::shell::EnvFilter;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// Appends the handler's stdin as one line of `events.jsonl` in the project.
const LOG: &str = r#"{ cat; echo; } >> "$CLAUDE_PROJECT_DIR/events.jsonl""#;

fn handler(command: &str) -> Value {
    json!([{"hooks": [{"type": "command", "command": command}]}])
}

fn session_hooks(dir: &Path, hooks: Value) -> Arc<SessionHooks> {
    let mut config = HooksConfig::default();
    let text = json!({ "hooks": hooks }).to_string();
    config
        .add_file(&dir.join("settings.json"), &text, HookScope::User)
        .unwrap();
    let env = vec![("PATH".into(), std::env::var_os("PATH").unwrap())];
    let hooks = Hooks::new(config, env, &EnvFilter::default());
    Arc::new(SessionHooks::new(
        hooks,
        "test-session".into(),
        dir.to_owned(),
    ))
}

fn logged(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn names_and(entries: &[Value], key: &str) -> Vec<(String, Value)> {
    entries
        .iter()
        .map(|e| {
            (
                e["hook_event_name"].as_str().unwrap().to_owned(),
                e[key].clone(),
            )
        })
        .collect()
}

fn hook_notices(events: &[CoreEvent]) -> Vec<(String, String, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            CoreEvent::Hook {
                event,
                decision,
                reason,
                ..
            } => Some((event.clone(), decision.clone(), reason.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn session_start_context_reaches_the_first_request_and_session_end_fires_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let provider = ScriptedProvider::new(vec![answer("hi")]);
    let mut config = workspace_config(&provider, dir.path(), ApprovalMode::Yolo, &Ran::default());
    let start = format!("{LOG}; echo 'the build is red since Tuesday'");
    config.policy.hooks = Some(session_hooks(
        dir.path(),
        json!({"SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": start}]}],
               "SessionEnd": handler(LOG)}),
    ));
    let mut handle = spawn_agent(config);
    run_task(&mut handle, "hello").await;
    shut_down(handle).await;

    let sent = serde_json::to_string(&provider.requests()[0].messages).unwrap();
    assert!(sent.contains("the build is red since Tuesday"), "{sent}");
    let entries = logged(dir.path());
    let cwd = dir.path().to_string_lossy().into_owned();
    assert_eq!(
        entries,
        vec![
            json!({"session_id": "test-session", "transcript_path": null, "cwd": cwd,
                   "permission_mode": "bypassPermissions", "hook_event_name": "SessionStart",
                   "source": "startup", "model": "main-model"}),
            json!({"session_id": "test-session", "transcript_path": null, "cwd": cwd,
                   "permission_mode": "bypassPermissions", "hook_event_name": "SessionEnd",
                   "reason": "other"}),
        ]
    );
}

#[tokio::test]
async fn clear_ends_the_session_and_starts_it_again_with_source_clear() {
    let dir = tempfile::tempdir().unwrap();
    let provider = ScriptedProvider::new(vec![answer("one"), answer("two")]);
    let mut config = workspace_config(&provider, dir.path(), ApprovalMode::Yolo, &Ran::default());
    let start = r#"input=$(cat); echo "$input" >> "$CLAUDE_PROJECT_DIR/events.jsonl"; echo "$input" | jq -r '"started by " + .source'"#;
    config.policy.hooks = Some(session_hooks(
        dir.path(),
        json!({"SessionStart": handler(start), "SessionEnd": handler(LOG)}),
    ));
    let mut handle = spawn_agent(config);
    run_task(&mut handle, "first").await;
    handle.submit(Op::ClearHistory).unwrap();
    run_task(&mut handle, "second").await;
    shut_down(handle).await;

    let entries = logged(dir.path());
    let order: Vec<(String, Value)> = entries
        .iter()
        .map(|e| {
            let detail = if e["hook_event_name"] == "SessionStart" {
                e["source"].clone()
            } else {
                e["reason"].clone()
            };
            (e["hook_event_name"].as_str().unwrap().to_owned(), detail)
        })
        .collect();
    assert_eq!(
        order,
        vec![
            ("SessionStart".to_owned(), json!("startup")),
            ("SessionEnd".to_owned(), json!("clear")),
            ("SessionStart".to_owned(), json!("clear")),
            ("SessionEnd".to_owned(), json!("other")),
        ]
    );
    let second = serde_json::to_string(&provider.requests()[1].messages).unwrap();
    assert!(second.contains("started by clear"), "{second}");
    assert!(!second.contains("started by startup"), "{second}");
}

#[tokio::test]
async fn a_pre_compact_exit_2_keeps_the_history_and_names_the_manual_trigger() {
    let dir = tempfile::tempdir().unwrap();
    let provider = ScriptedProvider::new(vec![answer("one"), answer("two")]);
    let mut config = workspace_config(&provider, dir.path(), ApprovalMode::Yolo, &Ran::default());
    let guard = format!("{LOG}; echo 'the transcript is being audited' >&2; exit 2");
    config.policy.hooks = Some(session_hooks(
        dir.path(),
        json!({"PreCompact": [{"matcher": "manual", "hooks": [{"type": "command", "command": guard}]}]}),
    ));
    let mut handle = spawn_agent(config);
    run_task(&mut handle, "first").await;
    run_task(&mut handle, "second").await;
    handle.submit(Op::Compact).unwrap();
    let events = collect_task(&mut handle).await;
    shut_down(handle).await;

    assert_eq!(provider.requests().len(), 2, "no summary was asked for");
    let Some(CoreEvent::TaskFinished { error, .. }) = events.last() else {
        panic!("{events:?}")
    };
    let message = &error.as_ref().unwrap().message;
    assert!(
        message.contains("the transcript is being audited"),
        "{message}"
    );
    assert_eq!(
        hook_notices(&events),
        vec![(
            "PreCompact".to_owned(),
            "block".to_owned(),
            "the transcript is being audited".to_owned()
        )]
    );
    let entries = logged(dir.path());
    assert_eq!(
        names_and(&entries, "trigger"),
        vec![("PreCompact".to_owned(), json!("manual"))]
    );
    assert_eq!(entries[0]["custom_instructions"], "");
}

#[tokio::test]
async fn a_permission_prompt_fires_a_notification_with_its_type() {
    let dir = tempfile::tempdir().unwrap();
    let provider = common::approvals::turns(vec![shell("c1", "make deploy")]);
    let ran = Ran::default();
    let mut config = workspace_config(&provider, dir.path(), ApprovalMode::Default, &ran);
    let notify = format!(r#"{LOG}; echo '{{"systemMessage": "desktop notification sent"}}'"#);
    config.policy.hooks = Some(session_hooks(
        dir.path(),
        json!({"Notification": [{"matcher": "permission_prompt", "hooks": [{"type": "command", "command": notify}]},
                                {"matcher": "idle_prompt", "hooks": [{"type": "command", "command": "exit 2"}]}]}),
    ));
    let (handle, events) = common::approvals::run(config, |_| ApprovalDecision::AllowOnce).await;
    shut_down(handle).await;

    assert!(
        events
            .iter()
            .any(|e| matches!(e, CoreEvent::PermissionRequested { .. }))
    );
    assert_eq!(ran.all(), vec!["make deploy".to_owned()]);
    let entries = logged(dir.path());
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["hook_event_name"], "Notification");
    assert_eq!(entries[0]["notification_type"], "permission_prompt");
    assert_eq!(
        entries[0]["message"],
        "corvid needs your permission to use run_shell_command"
    );
}

#[tokio::test]
async fn continue_false_ends_the_task_before_the_call_runs_and_shows_the_stop_reason() {
    let dir = tempfile::tempdir().unwrap();
    let provider = common::approvals::turns(vec![shell("c1", "make deploy")]);
    let ran = Ran::default();
    let mut config = workspace_config(&provider, dir.path(), ApprovalMode::Yolo, &ran);
    let stop = r#"echo '{"continue": false, "stopReason": "deploys are frozen today"}'"#;
    config.policy.hooks = Some(session_hooks(
        dir.path(),
        json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": stop}]}]}),
    ));
    let mut handle = spawn_agent(config);
    let events = run_task(&mut handle, "deploy").await;
    shut_down(handle).await;

    assert!(ran.all().is_empty(), "the call ran: {:?}", ran.all());
    assert_eq!(provider.requests().len(), 1, "the model was asked again");
    assert_eq!(
        hook_notices(&events),
        vec![(
            "PreToolUse".to_owned(),
            "stop".to_owned(),
            "deploys are frozen today".to_owned()
        )]
    );
}

/// The next `Notification` hook notice, with the events read before it.
async fn next_notification(handle: &mut corvid_core::agent::AgentHandle) -> CoreEvent {
    loop {
        let ev = handle.next_event().await.unwrap();
        if matches!(&ev, CoreEvent::Hook { event, .. } if event == "Notification") {
            return ev;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_session_waiting_for_the_user_sixty_seconds_after_a_task_fires_idle_prompt() {
    use corvid_core::hooks::lifecycle::IDLE_AFTER;
    use std::time::Duration;

    let dir = tempfile::tempdir().unwrap();
    let provider = ScriptedProvider::new(vec![answer("done")]);
    let mut config = workspace_config(&provider, dir.path(), ApprovalMode::Yolo, &Ran::default());
    // The notice shows whether the handler finishes or the paused clock runs out its timeout:
    // what is checked is that the event fires for `idle_prompt`, and when.
    let notify = r#"echo '{"systemMessage": "still there?"}'"#;
    config.policy.hooks = Some(session_hooks(
        dir.path(),
        json!({"Notification": [{"matcher": "permission_prompt", "hooks": [{"type": "command", "command": "exit 3"}]},
                                {"matcher": "idle_prompt", "hooks": [{"type": "command", "command": notify}]}]}),
    ));
    let mut handle = spawn_agent(config);
    run_task(&mut handle, "hello").await;

    let early = tokio::time::timeout(
        IDLE_AFTER - Duration::from_secs(1),
        next_notification(&mut handle),
    )
    .await;
    assert!(early.is_err(), "fired before 60 s: {early:?}");
    let CoreEvent::Hook { handler, .. } = next_notification(&mut handle).await else {
        unreachable!("next_notification returns hook notices only")
    };
    assert_eq!(handler, notify);
    shut_down(handle).await;
}
