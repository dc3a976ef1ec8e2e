//! Snapshots of every history cell kind, rendered as the scrollback will show them.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use common::*;
use corvid_protocol::{
    ErrorInfo, ErrorKind, StopReason, Todo, TodoStatus, ToolKind, ToolOutput, ToolStatus,
};
use corvid_tui::cells::{HistoryCell, NoticeKind};
use corvid_tui::chat::ChatState;
use corvid_tui::tools::{Batch, CallRow, CallState, ToolGroup};
use insta::assert_snapshot;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};

const WIDTH: u16 = 60;

fn grid(lines: Vec<Line<'static>>) -> String {
    let h = u16::try_from(lines.len().max(1)).unwrap();
    let mut t = Terminal::new(TestBackend::new(WIDTH, h)).unwrap();
    t.draw(|f| Paragraph::new(lines).render(f.area(), f.buffer_mut()))
        .unwrap();
    t.backend().to_string()
}

fn cell(c: &HistoryCell) -> String {
    grid(c.render(WIDTH))
}

fn row(id: &str, kind: ToolKind, title: &str, state: CallState) -> CallRow {
    CallRow::new(id, "t", title, kind, state)
}

#[test]
fn a_user_prompt_is_bold_with_a_chevron_and_wraps_under_itself() {
    let c = HistoryCell::UserPrompt(
        "Find where the config is loaded and explain the precedence of the sources\nsecond line"
            .into(),
    );
    assert_snapshot!(cell(&c));
}

#[test]
fn assistant_markdown_shows_headings_lists_inline_code_and_highlighted_code() {
    let md = "## Plan\n\nThe loader reads `settings.json` **first**, then:\n\n1. project settings\n2. environment\n   - `OPENAI_API_KEY`\n3. flags\n\n> quoted note\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```";
    assert_snapshot!(cell(&HistoryCell::Assistant(md.into())));
}

#[test]
fn a_thought_is_shortened_to_three_lines() {
    let c = HistoryCell::Thought("first idea\nsecond idea\nthird idea\nfourth\nfifth".into());
    assert_snapshot!(cell(&c));
}

#[test]
fn a_full_tool_group_shows_one_row_per_call_with_diffs_and_shell_tails() {
    let edit = ToolOutput {
        text: "Edited src/lib.rs".into(),
        diffs: vec![sample_diff()],
        raw: serde_json::Value::Null,
        ..Default::default()
    };
    let shell = output("line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nerror: test failed");
    let group = ToolGroup {
        batches: vec![Batch {
            calls: vec![
                row(
                    "a",
                    ToolKind::Read,
                    "Read src/main.rs",
                    CallState::Completed(output("a\nb\nc")),
                ),
                row(
                    "b",
                    ToolKind::Edit,
                    "Edit src/lib.rs",
                    CallState::Completed(edit),
                ),
                row(
                    "c",
                    ToolKind::Execute,
                    "Run cargo test",
                    CallState::Failed(shell),
                ),
            ],
            completed: true,
            label: None,
            attention: true,
            ..Default::default()
        }],
        compact: false,
    };
    assert_snapshot!(cell(&HistoryCell::Tools(group)));
}

#[test]
fn a_compact_group_folds_finished_calls_into_its_labelled_header() {
    let done = |id: &str, t: &str| row(id, ToolKind::Read, t, CallState::Completed(output("x")));
    let group = ToolGroup {
        batches: vec![
            Batch {
                calls: vec![done("a", "Read a.rs"), done("b", "Read b.rs")],
                completed: true,
                label: Some("Read the config loaders".into()),
                attention: false,
                ..Default::default()
            },
            Batch {
                calls: vec![done("c", "Search \"load\"")],
                completed: true,
                label: Some("Searched for load".into()),
                attention: false,
                ..Default::default()
            },
        ],
        compact: true,
    };
    assert_snapshot!(cell(&HistoryCell::Tools(group)));
}

#[test]
fn a_summary_is_a_dim_bullet_line() {
    assert_snapshot!(cell(&HistoryCell::Summary("Read config.json".into())));
}

#[test]
fn notices_show_retry_fallback_errors_and_cancellation() {
    let mut chat = ChatState::new(false);
    let err = ErrorInfo::new(ErrorKind::Overloaded, "server busy");
    chat.on_event(&task_started("hi"));
    chat.on_event(&corvid_protocol::CoreEvent::AttemptRetried {
        attempt: 2,
        max_attempts: 5,
        delay_ms: 1500,
        error: err.clone(),
    });
    chat.on_event(&corvid_protocol::CoreEvent::ModelFellBack {
        from: "big".into(),
        to: "small".into(),
        error: err.clone(),
    });
    chat.on_event(&corvid_protocol::CoreEvent::TaskFinished {
        task_id: "t1".into(),
        stop_reason: StopReason::Error,
        error: Some(ErrorInfo::new(ErrorKind::Auth, "bad key")),
        pending_summaries: 0,
    });
    chat.commit(HistoryCell::Notice(
        NoticeKind::Cancelled,
        "Cancelled".into(),
    ));
    let lines: Vec<Line<'static>> = chat.transcript()[1..]
        .iter()
        .flat_map(|c| c.render(WIDTH))
        .collect();
    assert_snapshot!(grid(lines));
}

#[test]
fn the_plan_is_a_checklist_with_progress() {
    let todo = |id: &str, content: &str, status| Todo {
        id: id.into(),
        content: content.into(),
        status,
    };
    let c = HistoryCell::Plan(vec![
        todo("1", "Read the settings loader", TodoStatus::Completed),
        todo("2", "Add the fallback key", TodoStatus::InProgress),
        todo("3", "Run the tests", TodoStatus::Pending),
    ]);
    assert_snapshot!(cell(&c));
}

#[test]
fn a_failed_call_keeps_its_first_error_line_in_the_row() {
    let mut chat = ChatState::new(false);
    chat.on_event(&task_started("go"));
    chat.on_event(&started("x", "read_file", "Read missing.txt"));
    chat.on_event(&finished(
        "x",
        "read_file",
        ToolStatus::Failed,
        output("file not found: missing.txt"),
    ));
    chat.on_event(&batch(&["x"]));
    assert_snapshot!(cell(&chat.transcript()[1]));
}

#[test]
fn a_markdown_table_renders_as_aligned_columns() {
    let md = "Sources, in order:\n\n| Source | Key | Wins |\n|:-------|:---:|-----:|\n| `settings.json` | model | 1 |\n| environment | `OPENAI_API_KEY` | 2 |\n| flags | **--model** | 10 |\n\nDone.";
    let shown = cell(&HistoryCell::Assistant(md.into()));
    assert_snapshot!(shown);
}

#[test]
fn a_markdown_table_wider_than_the_terminal_wraps_inside_its_columns() {
    let md = "| Setting | What it does |\n|---|---|\n| `ui.compactMode` | Starts the terminal UI with tool groups folded into one labelled header per group of batches, as /view compact does |\n| `agent.maxTurns` | Ends a task after this many model turns |";
    let lines = HistoryCell::Assistant(md.into()).render(WIDTH);
    assert!(
        lines.iter().all(|l| l.width() <= usize::from(WIDTH)),
        "{lines:#?}"
    );
    assert_snapshot!(grid(lines));
}

#[test]
fn a_rejected_call_says_rejected_and_not_the_text_meant_for_the_model() {
    let mut chat = ChatState::new(false);
    chat.on_event(&task_started("go"));
    chat.on_event(&permission(
        "s",
        "run_shell_command",
        "Run rm -rf build",
        corvid_protocol::ApprovalPreview::Command {
            command: "rm -rf build".into(),
        },
    ));
    chat.on_event(&corvid_protocol::CoreEvent::PermissionResolved {
        call_id: "s".into(),
        decision: corvid_protocol::ApprovalDecision::RejectOnce,
    });
    chat.on_event(&finished(
        "s",
        "run_shell_command",
        ToolStatus::Failed,
        output(
            "The user rejected this `run_shell_command` call; it did not run. Do not retry it as \
             is; ask the user how to proceed or take another approach.",
        ),
    ));
    chat.on_event(&batch(&["s"]));
    let shown = cell(&chat.transcript()[1]);
    assert!(!shown.contains("Do not retry"), "{shown}");
    assert_snapshot!(shown);
}

#[test]
fn a_running_command_shows_the_end_of_its_live_output_with_progress_bars_redrawn() {
    let mut running = row("r", ToolKind::Execute, "Run make", CallState::Running);
    for i in 1..=8 {
        running.push_live(&format!("step {i}\n"));
    }
    running.push_live("download 10%\rdownload 55%\rdownload 90%");
    let group = ToolGroup {
        batches: vec![Batch {
            calls: vec![running],
            ..Default::default()
        }],
        compact: false,
    };
    let shown = cell(&HistoryCell::Tools(group));
    assert!(shown.contains("│ download 90%"), "{shown}");
    assert!(!shown.contains("55%"), "{shown}");
    for kept in ["step 5", "step 8"] {
        assert!(shown.contains(kept), "{kept} missing:\n{shown}");
    }
    assert!(!shown.contains("step 4"), "{shown}");
}

#[test]
fn a_running_row_keeps_only_the_end_of_a_long_output() {
    let mut running = row("r", ToolKind::Execute, "Run yes", CallState::Running);
    for _ in 0..10_000 {
        running.push_live("ä line of output\n");
    }
    running.push_live("the last line");
    assert!(running.live.len() <= 8 * 1024, "{}", running.live.len());
    assert!(running.live.ends_with("the last line"));
}

#[test]
fn live_output_stops_showing_once_the_call_finished() {
    let mut chat = ChatState::new(false);
    chat.on_event(&task_started("go"));
    chat.on_event(&corvid_protocol::CoreEvent::ToolStarted {
        call_id: "s".into(),
        tool_name: "run_shell_command".into(),
        args: serde_json::json!({"command": "make"}),
        display: corvid_protocol::ToolDisplay {
            title: "Run make".into(),
            kind: ToolKind::Execute,
            locations: Vec::new(),
        },
        provenance: corvid_protocol::Provenance::Builtin,
        was_prepared: false,
    });
    chat.on_event(&corvid_protocol::CoreEvent::ToolOutputDelta {
        call_id: "s".into(),
        text: "compiling the live preview\n".into(),
    });
    chat.on_event(&finished(
        "s",
        "run_shell_command",
        ToolStatus::Completed,
        output("built"),
    ));
    chat.on_event(&batch(&["s"]));
    let shown = cell(&chat.transcript()[1]);
    assert!(shown.contains("built"), "{shown}");
    assert!(!shown.contains("live preview"), "{shown}");
}

#[test]
fn a_compaction_shows_as_a_bullet_line_with_the_token_counts() {
    let mut chat = ChatState::new(false);
    chat.on_event(&task_started("go"));
    chat.on_event(&corvid_protocol::CoreEvent::Compacted {
        summary: "the summary".into(),
        kept_messages: 4,
        tokens_before: 33_000,
        tokens_after: 9_000,
    });
    let shown = cell(chat.transcript().last().unwrap());
    assert!(
        shown.contains("● Compacted the conversation (33000 → 9000 tokens)"),
        "{shown}"
    );
}

#[test]
fn a_running_call_says_how_long_it_has_been_running() {
    let now = std::time::Instant::now();
    let mut task = row(
        "t",
        ToolKind::Think,
        "Find the config loader",
        CallState::Running,
    );
    task.started = Some(now - std::time::Duration::from_secs(65));
    task.live = "↳ Search \"load\"".into();
    let group = ToolGroup {
        batches: vec![Batch {
            calls: vec![task],
            ..Default::default()
        }],
        compact: false,
    };
    let shown = grid(group.render_at(WIDTH, 0, Some(now)));
    assert!(shown.contains("Find the config loader · 1m 05s"), "{shown}");
    assert!(shown.contains("↳ Search \"load\""), "{shown}");
    // A committed group (no clock) shows no time.
    assert!(!grid(group.render(WIDTH, 0)).contains("1m 05s"));
}

#[test]
fn a_finished_task_collapses_to_the_first_line_of_its_report() {
    let group = ToolGroup {
        batches: vec![Batch {
            calls: vec![row(
                "t",
                ToolKind::Think,
                "Read the notes",
                CallState::Completed(output("a.txt says hello.\n\nFiles changed: none")),
            )],
            completed: true,
            ..Default::default()
        }],
        compact: false,
    };
    let shown = cell(&HistoryCell::Tools(group));
    assert!(
        shown.contains("✓ Read the notes · a.txt says hello."),
        "{shown}"
    );
}

/// A shell result as the local shell tool frames it for the model.
fn shell_result(code: i64, stdout: &str, stderr: &str) -> ToolOutput {
    let mut text = format!("Exit code: {code}");
    for (label, s) in [("Stdout", stdout), ("Stderr", stderr)] {
        if !s.is_empty() {
            text.push_str(&format!("\n\n{label}:\n{s}"));
        }
    }
    ToolOutput::new(
        text,
        serde_json::json!({"exit_code": code, "stdout": stdout, "stderr": stderr, "timed_out": false, "signal": null}),
    )
}

#[test]
fn a_command_that_exits_non_zero_shows_a_failed_mark_and_its_own_output_without_framing() {
    let mut chat = ChatState::new(false);
    chat.on_event(&task_started("!ls nonexist"));
    chat.on_event(&started("s", "run_shell_command", "Run ls nonexist"));
    chat.on_event(&finished(
        "s",
        "run_shell_command",
        ToolStatus::Completed,
        shell_result(
            2,
            "",
            "ls: cannot access 'nonexist': No such file or directory",
        ),
    ));
    chat.on_event(&task_finished(0));
    let shown: String = chat
        .transcript()
        .iter()
        .map(|c| grid(c.render(WIDTH)))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(shown.contains("✗ Run ls nonexist"), "{shown}");
    assert!(!shown.contains('✓'), "{shown}");
    assert!(
        !shown.contains("Exit code") && !shown.contains("Stderr"),
        "{shown}"
    );
    assert_snapshot!(shown);
}

#[test]
fn a_long_commands_card_counts_the_earlier_lines_of_its_output_only() {
    let stdout: Vec<String> = (1..=9).map(|i| format!("out {i}")).collect();
    let group = ToolGroup {
        batches: vec![Batch {
            calls: vec![row(
                "c",
                ToolKind::Execute,
                "Run seq",
                CallState::Completed(shell_result(0, &stdout.join("\n"), "")),
            )],
            completed: true,
            ..Default::default()
        }],
        compact: false,
    };
    let shown = cell(&HistoryCell::Tools(group));
    // Nine lines, the last five shown: four earlier ones, not seven.
    assert!(shown.contains("… 4 earlier lines"), "{shown}");
    assert!(
        shown.contains("│ out 9") && !shown.contains("Stdout"),
        "{shown}"
    );
}

#[test]
fn a_long_code_line_wraps_under_its_own_indent_at_a_narrow_width() {
    let md = "```\nfn main() {\n        let value = compute_something_long(alpha, beta, gamma, delta);\n}\n```";
    let rows: Vec<String> = HistoryCell::Assistant(md.into())
        .render(32)
        .iter()
        .map(|l| l.to_string())
        .collect();
    let at = rows
        .iter()
        .position(|r| r.contains("let value"))
        .unwrap_or_else(|| panic!("{rows:#?}"));
    let next = &rows[at + 1];
    assert!(
        next.starts_with(&" ".repeat(10)) && !next.trim().is_empty(),
        "the continuation keeps the code's indent: {rows:#?}"
    );
}
