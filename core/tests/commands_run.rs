//! Running a custom command (issue 29): `/name args` reaches the model as its expansion; the
//! injections run through the shell tool's approval, rules and sandbox, and a refused or
//! failing one sends nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::Arc;

use common::scripted::*;
use common::{collect_task_deciding, test_config};
use corvid_core::agent::spawn_agent;
use corvid_core::commands::{Library, Roots};
use corvid_core::policy::rules::PermissionRules;
use corvid_core::settings::{ProjectTrust, Trust};
use corvid_protocol::{ApprovalDecision, ApprovalMode, CoreEvent, Message, Op, StopReason};
use pretty_assertions::assert_eq;

/// A session in a workspace holding `.claude/commands/review.md` with `command`.
fn session(
    workspace: &Path,
    command: &str,
    provider: &ScriptedProvider,
) -> corvid_core::agent::AgentConfig {
    let file = workspace.join(".claude/commands/review.md");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, command).unwrap();
    let mut config = test_config(Arc::new(provider.clone()), Vec::new());
    config.tools = corvid_tools::builtin_tools();
    config.cwd = workspace.to_owned();
    config.fs = Arc::new(corvid_tools::LocalFs);
    config.approval_mode = ApprovalMode::Default;
    let roots = Roots {
        cwd: workspace.to_owned(),
        project_dirs: vec![workspace.to_owned()],
        ..Roots::default()
    };
    let trust = ProjectTrust::vouched(Some(workspace.to_owned()), Trust::Trusted);
    config.policy.commands = Some(Library::new(roots, trust));
    config
}

async fn run(
    config: corvid_core::agent::AgentConfig,
    prompt: &str,
    decide: impl Fn(&str) -> ApprovalDecision,
) -> Vec<CoreEvent> {
    let mut handle = spawn_agent(config);
    handle
        .submit(Op::UserTurn {
            prompt: prompt.into(),
            images: Vec::new(),
            context: Vec::new(),
        })
        .unwrap();
    collect_task_deciding(&mut handle, decide).await
}

fn asked_commands(events: &[CoreEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            CoreEvent::PermissionRequested { args, .. } => Some(args["command"].to_string()),
            _ => None,
        })
        .collect()
}

fn task_error(events: &[CoreEvent]) -> Option<String> {
    events.iter().find_map(|e| match e {
        CoreEvent::TaskFinished {
            error: Some(err), ..
        } => Some(err.message.clone()),
        _ => None,
    })
}

const REVIEW: &str = "---
allowed-tools: Bash(echo:*)
description: Review a file
---
Review $0.
Diff: !`echo changes in $0`
";

#[tokio::test]
async fn the_model_request_after_a_command_holds_its_expansion_with_the_injection_output() {
    let dir = tempfile::tempdir().unwrap();
    let provider = ScriptedProvider::new(vec![answer("Looks fine.")]);
    let config = session(dir.path(), REVIEW, &provider);
    let events = run(config, "/review src/lib.rs", |_| {
        ApprovalDecision::RejectOnce
    })
    .await;
    // `allowed-tools: Bash(echo:*)` let the injection run without a question.
    assert_eq!(asked_commands(&events), Vec::<String>::new());
    assert!(matches!(
        events.first(),
        Some(CoreEvent::TaskStarted { prompt, .. }) if prompt == "/review src/lib.rs"
    ));
    let requests = provider.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].messages.last().unwrap(),
        &Message::user_text("Review src/lib.rs.\nDiff: changes in src/lib.rs\n")
    );
}

#[tokio::test]
async fn an_injection_without_a_grant_is_asked_once_naming_the_resolved_command() {
    let dir = tempfile::tempdir().unwrap();
    let provider = ScriptedProvider::new(vec![answer("ok")]);
    // `env` is not a read-only program, so the injection is asked (a bare `echo` would run).
    let command = "Diff: !`env echo changes in $0`\n";
    let config = session(dir.path(), command, &provider);
    let events = run(config, "/review a.rs", |_| ApprovalDecision::AllowOnce).await;
    assert_eq!(
        asked_commands(&events),
        vec!["\"env echo changes in a.rs\"".to_owned()]
    );
    assert_eq!(
        provider.requests()[0].messages.last().unwrap(),
        &Message::user_text("Diff: changes in a.rs\n")
    );
}

#[tokio::test]
async fn a_denied_injection_sends_nothing_to_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let provider = ScriptedProvider::new(vec![answer("never")]);
    let config = session(dir.path(), "Diff: !`env echo secret`\n", &provider);
    let events = run(config, "/review", |_| ApprovalDecision::RejectOnce).await;
    assert_eq!(provider.requests().len(), 0);
    let error = task_error(&events).unwrap();
    assert!(
        error.starts_with(
            "/review stopped; nothing was sent to the model: `env echo secret` did not run"
        ),
        "{error}"
    );
    assert!(events.iter().any(|e| matches!(
        e,
        CoreEvent::TaskFinished {
            stop_reason: StopReason::Error,
            ..
        }
    )));
}

#[tokio::test]
async fn allowed_tools_never_override_a_deny_rule() {
    let dir = tempfile::tempdir().unwrap();
    let provider = ScriptedProvider::new(vec![answer("never")]);
    let mut config = session(dir.path(), REVIEW, &provider);
    config.policy.rules = PermissionRules::new(&[], &["run_shell_command(echo)".into()]).unwrap();
    let events = run(config, "/review x", |_| ApprovalDecision::AllowOnce).await;
    assert_eq!(asked_commands(&events), Vec::<String>::new());
    assert_eq!(provider.requests().len(), 0);
    assert!(
        task_error(&events)
            .unwrap()
            .contains("refused by the rule `run_shell_command(echo)`")
    );
}

#[tokio::test]
async fn a_failing_injection_stops_the_command_with_its_output() {
    let dir = tempfile::tempdir().unwrap();
    let provider = ScriptedProvider::new(vec![answer("never")]);
    let command = "---\nallowed-tools: Bash\n---\nState: !`echo broken >&2; exit 3`\n";
    let config = session(dir.path(), command, &provider);
    let events = run(config, "/review", |_| ApprovalDecision::RejectOnce).await;
    assert_eq!(provider.requests().len(), 0);
    let error = task_error(&events).unwrap();
    assert!(error.contains("failed:\nExit code: 3"), "{error}");
    assert!(error.contains("broken"), "{error}");
}

#[tokio::test]
async fn an_at_path_outside_the_workspace_stops_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let provider = ScriptedProvider::new(vec![answer("never")]);
    let config = session(dir.path(), "Read @../../etc/passwd\n", &provider);
    let events = run(config, "/review", |_| ApprovalDecision::RejectOnce).await;
    assert_eq!(provider.requests().len(), 0);
    assert!(
        task_error(&events)
            .unwrap()
            .contains("is outside the working directory"),
        "{events:#?}"
    );
}

#[tokio::test]
async fn an_at_path_inside_the_workspace_is_attached_to_the_prompt() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "remember the milk\n").unwrap();
    let provider = ScriptedProvider::new(vec![answer("ok")]);
    let config = session(dir.path(), "Summarize @notes.txt\n", &provider);
    run(config, "/review", |_| ApprovalDecision::RejectOnce).await;
    let sent = format!("{:?}", provider.requests()[0].messages.last().unwrap());
    assert!(sent.contains("Summarize @notes.txt"), "{sent}");
    assert!(sent.contains("remember the milk"), "{sent}");
}

#[tokio::test]
async fn a_prompt_naming_no_command_goes_to_the_model_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let provider = ScriptedProvider::new(vec![answer("ok")]);
    let config = session(dir.path(), REVIEW, &provider);
    run(config, "/usr/bin/env is odd", |_| {
        ApprovalDecision::RejectOnce
    })
    .await;
    assert_eq!(
        provider.requests()[0].messages.last().unwrap(),
        &Message::user_text("/usr/bin/env is odd")
    );
}

#[tokio::test]
async fn allowed_tools_bash_star_never_overrides_a_deny_rule() {
    let dir = tempfile::tempdir().unwrap();
    let provider = ScriptedProvider::new(vec![answer("never")]);
    let command = "---\nallowed-tools: Bash(*)\n---\nEnv: !`env echo hi`\n";
    let mut config = session(dir.path(), command, &provider);
    config.policy.rules = PermissionRules::new(&[], &["run_shell_command(env)".into()]).unwrap();
    let events = run(config, "/review", |_| ApprovalDecision::AllowOnce).await;
    assert_eq!(asked_commands(&events), Vec::<String>::new());
    assert_eq!(provider.requests().len(), 0);
    let error = task_error(&events).unwrap();
    assert!(
        error.contains("refused by the rule `run_shell_command(env)`"),
        "{error}"
    );
}

/// The reasons of the permission questions the task asked.
fn ask_reasons(events: &[CoreEvent]) -> Vec<Option<String>> {
    events
        .iter()
        .filter_map(|e| match e {
            CoreEvent::PermissionRequested { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn allowed_tools_bash_star_still_asks_before_an_injection_writes_a_protected_path() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    std::fs::write(dir.path().join(".git/config"), "[core]\n").unwrap();
    let provider = ScriptedProvider::new(vec![answer("never")]);
    let command = "---\nallowed-tools: Bash(*)\n---\nDone: !`touch .git/config`\n";
    let config = session(dir.path(), command, &provider);
    let events = run(config, "/review", |_| ApprovalDecision::RejectOnce).await;
    assert_eq!(
        asked_commands(&events),
        vec!["\"touch .git/config\"".to_owned()]
    );
    let reasons = ask_reasons(&events);
    assert!(
        reasons[0].as_deref().is_some_and(|r| r.contains(".git")),
        "{reasons:?}"
    );
    assert_eq!(provider.requests().len(), 0);
}

#[tokio::test]
async fn allowed_tools_never_let_the_model_write_a_protected_path_unasked_during_the_command() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    std::fs::write(dir.path().join(".git/config"), "[core]\n").unwrap();
    let provider = ScriptedProvider::new(vec![
        vec![
            call(
                "w1",
                "write_file",
                serde_json::json!({"file_path": ".git/config", "content": "[core]\n\thooksPath = x\n"}),
            ),
            finish(corvid_protocol::FinishReason::ToolCalls),
        ],
        answer("stopped"),
    ]);
    let command = "---\nallowed-tools: Bash(*), write_file, Write(.git/config)\n---\nTidy up.\n";
    let config = session(dir.path(), command, &provider);
    let events = run(config, "/review", |_| ApprovalDecision::RejectOnce).await;
    let reasons = ask_reasons(&events);
    assert_eq!(reasons.len(), 1, "{events:#?}");
    assert!(
        reasons[0].as_deref().is_some_and(|r| r.contains(".git")),
        "{reasons:?}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".git/config")).unwrap(),
        "[core]\n"
    );
}

#[tokio::test]
async fn a_command_s_model_answers_its_turn_and_the_session_model_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let provider = ScriptedProvider::new(vec![answer("quick"), answer("main")]);
    let command = "---\nmodel: other-model\n---\nBe quick.\n";
    let config = session(dir.path(), command, &provider);
    let main_model = config.model.clone();
    let mut handle = spawn_agent(config);
    for prompt in ["/review", "and now?"] {
        handle.submit(Op::user_turn(prompt)).unwrap();
        collect_task_deciding(&mut handle, |_| ApprovalDecision::RejectOnce).await;
    }
    let models: Vec<String> = provider
        .requests()
        .iter()
        .map(|r| r.model.clone())
        .collect();
    assert_eq!(models, vec!["other-model".to_owned(), main_model]);
}
