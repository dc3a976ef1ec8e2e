//! `/tasks` and the status line's count of background processes, with a real process in a
//! session's table (no agent running).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use corvid_protocol::ApprovalMode;
use corvid_tools::shell::{BackgroundLimits, BackgroundProcesses, SandboxLevel, ShellPolicy};
use corvid_tools::{KillShell, LocalFs, RunShellCommand, Tool, ToolContext};
use corvid_tui::app::{App, TuiOptions};
use corvid_tui::cells::{HistoryCell, NoticeKind};
use insta::assert_snapshot;
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn app() -> App {
    App::new(&TuiOptions {
        compact: false,
        model: "demo".into(),
        approval_mode: ApprovalMode::Default,
        no_color: false,
        transcript: Vec::new(),
        sessions: None,
        models: None,
        theme: corvid_core::settings::UiTheme::Dark,
    })
}

fn ctx(dir: &std::path::Path, table: &Arc<BackgroundProcesses>) -> ToolContext {
    ToolContext {
        call_id: String::new(),
        cwd: dir.to_owned(),
        fs: Arc::new(LocalFs),
        cancel: CancellationToken::new(),
        shell_timeout: Duration::from_secs(30),
        shell: ShellPolicy {
            sandbox: SandboxLevel::WorkspaceWrite,
            background: Some(table.clone()),
            ..ShellPolicy::default()
        },
        live_output: None,
    }
}

fn status_line(app: &App) -> String {
    let (lines, _) = app.view(Instant::now()).lines(70);
    lines
        .last()
        .unwrap()
        .spans
        .iter()
        .map(|s| s.content.as_ref())
        .collect()
}

/// The text of the last notice `/tasks` committed.
fn tasks(app: &mut App) -> String {
    app.command("/tasks");
    match app.chat.transcript().last() {
        Some(HistoryCell::Notice(NoticeKind::Info, text)) => text.clone(),
        other => panic!("no notice: {other:?}"),
    }
}

#[tokio::test]
async fn slash_tasks_lists_the_background_processes_and_the_status_line_counts_running_ones() {
    let dir = tempfile::tempdir().unwrap();
    let table = Arc::new(BackgroundProcesses::new(BackgroundLimits::default()));
    let mut a = app();
    a.background = Some(table.clone());
    assert_snapshot!("tasks_none", tasks(&mut a));
    assert!(!status_line(&a).contains("background"));

    let ctx = ctx(dir.path(), &table);
    for command in ["sleep 300", "exec sleep 301"] {
        RunShellCommand
            .execute(
                json!({"command": command, "run_in_background": true}),
                ctx.clone(),
            )
            .await
            .unwrap();
    }
    KillShell.execute(json!({"id": "bg-2"}), ctx).await.unwrap();
    a.tick(Instant::now());

    assert_snapshot!("tasks_one_running_one_killed", tasks(&mut a));
    assert!(
        status_line(&a).starts_with("demo · default · full · 1 background"),
        "{}",
        status_line(&a)
    );
    table.kill_all();
}
