//! A recorded session replayed by core (`replay_events`) and shown by the UI on an emulated
//! terminal: the earlier tool group and its label appear again, once, in both modes.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::VtTerm;
use corvid_core::session::{Record, SessionStore, replay_events};
use corvid_protocol::{ApprovalMode, CoreEvent, Message, Part, Role, ToolCall, ToolResult, Usage};
use corvid_tools::{LocalFs, ToolContext, builtin_tools};
use corvid_tui::app::{App, TuiOptions};
use pretty_assertions::assert_eq;
use tokio_util::sync::CancellationToken;

fn assistant(parts: Vec<Part>) -> Record {
    Record::Message {
        message: Message {
            role: Role::Assistant,
            parts,
        },
    }
}

fn call(id: &str, name: &str, args: serde_json::Value) -> Part {
    Part::ToolCall(ToolCall {
        call_id: id.into(),
        name: name.into(),
        args,
    })
}

fn result(id: &str, name: &str, output: &str) -> Part {
    Part::ToolResult(ToolResult {
        call_id: id.into(),
        name: name.into(),
        output: output.into(),
        is_error: false,
        images: Vec::new(),
    })
}

/// Records `records` as session `s1`, loads it back and replays it as core does.
fn replayed(records: &[Record]) -> Vec<CoreEvent> {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let cwd = project.path().canonicalize().unwrap();
    let store = SessionStore::new(home.path());
    let recorder = store.create(&cwd, "s1", "demo").unwrap();
    for record in records {
        recorder.append(record).unwrap();
    }
    let loaded = store.load(&cwd, "s1").unwrap();
    let ctx = ToolContext {
        call_id: String::new(),
        cwd,
        fs: Arc::new(LocalFs),
        cancel: CancellationToken::new(),
        shell_timeout: Duration::from_secs(10),
        shell: Default::default(),
        live_output: None,
    };
    replay_events(&loaded, &builtin_tools(), &ctx)
}

/// A tool task whose label was written after the answer that followed the batch (as it
/// happens live when the fast model is slower), replayed.
fn recorded_transcript() -> Vec<CoreEvent> {
    replayed(&[
        Record::Message {
            message: Message::user_text("Where is the config loaded?"),
        },
        assistant(vec![
            Part::Text {
                text: "I will look at the loaders.".into(),
            },
            call(
                "a",
                "read_file",
                serde_json::json!({"file_path": "src/config.rs"}),
            ),
            call("b", "grep_search", serde_json::json!({"pattern": "load"})),
        ]),
        Record::Message {
            message: Message {
                role: Role::User,
                parts: vec![
                    result("a", "read_file", "fn load() {}"),
                    result("b", "grep_search", "src/config.rs:1: fn load() {}"),
                ],
            },
        },
        Record::Usage {
            prompt_id: "main".into(),
            usage: Usage::default(),
        },
        assistant(vec![Part::Text {
            text: "The config is loaded in `src/config.rs`.".into(),
        }]),
        Record::ToolUseSummary {
            summary: "Read the config and searched for load".into(),
            preceding_tool_use_ids: vec!["a".into(), "b".into()],
        },
    ])
}

/// A batch of `read_file`, `todo_write` and a rejected shell call, whose label names only the
/// read (the core leaves the plan call and rejected calls out of a summary's ids), replayed.
fn recorded_mixed_batch() -> Vec<CoreEvent> {
    let rejected = Part::ToolResult(ToolResult {
        call_id: "s".into(),
        name: "run_shell_command".into(),
        output: "The user rejected this `run_shell_command` call; it did not run.".into(),
        is_error: true,
        images: Vec::new(),
    });
    replayed(&[
        Record::Message {
            message: Message::user_text("Plan the config work"),
        },
        assistant(vec![
            call(
                "r",
                "read_file",
                serde_json::json!({"file_path": "src/config.rs"}),
            ),
            call(
                "t",
                "todo_write",
                serde_json::json!({"todos": [
                    {"id": "1", "content": "Split the loader", "status": "pending"}
                ]}),
            ),
            call(
                "s",
                "run_shell_command",
                serde_json::json!({"command": "rm -rf build"}),
            ),
        ]),
        Record::CallRejected {
            call_id: "s".into(),
        },
        Record::Message {
            message: Message {
                role: Role::User,
                parts: vec![
                    result("r", "read_file", "fn load() {}"),
                    result("t", "todo_write", "Plan updated"),
                    rejected,
                ],
            },
        },
        assistant(vec![Part::Text {
            text: "I read it and made a plan.".into(),
        }]),
        Record::ToolUseSummary {
            summary: "Read the config and planned".into(),
            preceding_tool_use_ids: vec!["r".into()],
        },
    ])
}

/// Every terminal row (scrollback and screen) after the UI started with `transcript`.
fn shown(compact: bool, transcript: Vec<CoreEvent>) -> (Vec<String>, App) {
    let term = VtTerm::new(24, 80);
    let mut screen = term.screen(false);
    let options = TuiOptions {
        compact,
        model: "demo".into(),
        approval_mode: ApprovalMode::Yolo,
        no_color: false,
        transcript,
        models: None,
        theme: corvid_core::settings::UiTheme::Dark,
        sessions: None,
    };
    let mut app = App::new(&options);
    app.on_resumed("s1", &options.transcript);
    screen.frame(&app, Instant::now()).unwrap();
    (term.all_rows(), app)
}

fn count(rows: &[String], needle: &str) -> usize {
    rows.iter().filter(|r| r.contains(needle)).count()
}

fn position(rows: &[String], needle: &str) -> usize {
    rows.iter()
        .position(|r| r.contains(needle))
        .unwrap_or_else(|| panic!("{needle:?} not in {rows:#?}"))
}

#[test]
fn a_recorded_session_shows_its_tool_group_and_label_once_when_resumed_in_full_mode() {
    let (rows, app) = shown(false, recorded_transcript());
    for needle in [
        "Resumed session s1",
        "› Where is the config loaded?",
        "I will look at the loaders.",
        "● Read the config and searched for load",
        "The config is loaded in src/config.rs.",
    ] {
        assert_eq!(count(&rows, needle), 1, "{needle:?} once in {rows:#?}");
    }
    let tool_rows: Vec<&str> = rows
        .iter()
        .filter(|r| r.starts_with("  ✓ "))
        .map(String::as_str)
        .collect();
    assert_eq!(
        tool_rows,
        vec![
            "  ✓ Read src/config.rs · fn load() {}",
            "  ✓ Search \"load\" · src/config.rs:1: fn load() {}",
        ]
    );
    let order = [
        position(&rows, "Resumed session"),
        position(&rows, "› Where"),
        position(&rows, "I will look"),
        position(&rows, "  ✓ "),
        position(&rows, "● Read the config"),
        position(&rows, "The config is loaded"),
    ];
    let mut sorted = order;
    sorted.sort_unstable();
    assert_eq!(order, sorted, "{rows:#?}");
    assert!(!app.chat.is_running() && !app.animating());
}

#[test]
fn a_recorded_session_shows_its_labelled_compact_header_when_resumed_in_compact_mode() {
    let (rows, app) = shown(true, recorded_transcript());
    assert_eq!(
        count(&rows, "✓ Read the config and searched for load · 2 tools"),
        1,
        "{rows:#?}"
    );
    assert_eq!(count(&rows, "●"), 0, "{rows:#?}");
    assert_eq!(count(&rows, "  ✓ "), 0, "{rows:#?}");
    assert!(position(&rows, "2 tools") < position(&rows, "The config is loaded"));
    assert!(app.chat.group.is_none() && !app.animating());
}

#[test]
fn a_replayed_mixed_batch_shows_its_label_line_in_full_mode() {
    let (rows, _) = shown(false, recorded_mixed_batch());
    assert_eq!(
        count(&rows, "● Read the config and planned"),
        1,
        "{rows:#?}"
    );
    assert!(position(&rows, "● Read the config") < position(&rows, "I read it and made"));
}

#[test]
fn a_replayed_mixed_batch_shows_its_labelled_header_in_compact_mode() {
    let (rows, _) = shown(true, recorded_mixed_batch());
    assert_eq!(
        count(&rows, "Read the config and planned · 2 tools"),
        1,
        "{rows:#?}"
    );
    assert_eq!(count(&rows, "Tool × "), 0, "{rows:#?}");
    assert_eq!(count(&rows, "●"), 0, "{rows:#?}");
}

#[test]
fn a_replayed_rejected_call_says_rejected_and_not_the_text_meant_for_the_model() {
    let (rows, _) = shown(false, recorded_mixed_batch());
    assert_eq!(
        count(&rows, "✗ Run rm -rf build · Rejected"),
        1,
        "{rows:#?}"
    );
    assert_eq!(count(&rows, "The user rejected"), 0, "{rows:#?}");
}
