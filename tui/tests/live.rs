//! Snapshots of the live area in its states, fed core events (no agent, no terminal).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use std::time::{Duration, Instant};

use common::*;
use corvid_protocol::{ApprovalMode, ApprovalPreview, CoreEvent, DiscardReason, Provenance};
use corvid_tui::app::{App, TuiOptions};
use insta::assert_snapshot;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const WIDTH: u16 = 60;

fn app(compact: bool) -> App {
    App::new(&TuiOptions {
        compact,
        model: "demo-large".into(),
        approval_mode: ApprovalMode::Default,
        no_color: false,
        transcript: Vec::new(),
        models: None,
        theme: corvid_core::settings::UiTheme::Dark,
        sessions: None,
    })
}

/// Feeds events with a pinned clock and renders the live area 12 s after the task started.
fn live(app: &mut App, events: &[CoreEvent]) -> String {
    let t0 = Instant::now();
    for ev in events {
        app.stats.observe(ev);
        app.chat.on_event_at(ev, t0);
    }
    let view = app.view(t0 + Duration::from_secs(12));
    let (lines, _) = view.lines(WIDTH);
    let h = u16::try_from(lines.len()).unwrap();
    let mut t = Terminal::new(TestBackend::new(WIDTH, h)).unwrap();
    t.draw(|f| {
        let pos = view.render(f.area(), f.buffer_mut());
        f.set_cursor_position(pos);
    })
    .unwrap();
    t.backend().to_string()
}

fn usage(n: u64) -> CoreEvent {
    CoreEvent::Usage {
        prompt_id: "main".into(),
        usage: corvid_protocol::Usage {
            output_tokens: n,
            ..Default::default()
        },
    }
}

#[test]
fn an_idle_prompt_shows_the_composer_and_the_status_line() {
    assert_snapshot!(live(&mut app(false), &[]));
}

#[test]
fn preparing_calls_appear_as_pending_rows_with_their_tool_name() {
    let events = [
        task_started("look around"),
        usage(1234),
        preparing("a", "read_file", "ReadFile"),
        preparing("b", "grep_search", "Grep"),
    ];
    assert_snapshot!(live(&mut app(false), &events));
}

#[test]
fn a_discarded_preparation_removes_its_row() {
    let events = [
        task_started("look around"),
        preparing("a", "read_file", "ReadFile"),
        preparing("b", "grep_search", "Grep"),
        CoreEvent::PreparationDiscarded {
            call_id: "b".into(),
            tool_name: "grep_search".into(),
            reason: DiscardReason::Retry,
            provenance: Provenance::Builtin,
        },
    ];
    assert_snapshot!(live(&mut app(false), &events));
}

#[test]
fn a_running_group_mixes_finished_running_and_preparing_rows() {
    let events = [
        task_started("fix it"),
        text("Let me look at the loader first."),
        started("a", "read_file", "Read src/config.rs"),
        ok("a", "read_file", "one\ntwo"),
        started("b", "run_shell_command", "Run cargo test"),
        preparing("c", "edit", "Edit"),
    ];
    assert_snapshot!(live(&mut app(false), &events));
}

#[test]
fn the_approval_dialog_previews_the_diff_and_offers_three_choices() {
    let events = [
        task_started("fix it"),
        permission(
            "e",
            "edit",
            "Edit src/lib.rs",
            ApprovalPreview::Diff(sample_diff()),
        ),
    ];
    assert_snapshot!(live(&mut app(false), &events));
}

#[test]
fn the_approval_dialog_previews_a_command() {
    let events = [
        task_started("test it"),
        permission(
            "s",
            "run_shell_command",
            "Run cargo test",
            ApprovalPreview::Command {
                command: "cargo test -p corvid-core".into(),
            },
        ),
    ];
    assert_snapshot!(live(&mut app(false), &events));
}

#[test]
fn the_approval_dialog_says_why_it_asks_and_what_always_allows() {
    let mut request = permission(
        "s",
        "run_shell_command",
        "Run cargo test",
        ApprovalPreview::Command {
            command: "cargo test".into(),
        },
    );
    if let CoreEvent::PermissionRequested {
        reason,
        always_scope,
        ..
    } = &mut request
    {
        *reason = Some("no sandbox is available: the command would run unconfined".into());
        *always_scope = Some("cargo test".into());
    }
    let events = [task_started("test it"), request];
    assert_snapshot!(live(&mut app(false), &events));
}

#[test]
fn the_approval_dialog_of_a_new_file_says_create_not_created() {
    let diff = corvid_protocol::FileDiff {
        path: "src/new.rs".into(),
        old_text: None,
        new_text: "pub fn new() {}\n".into(),
    };
    let events = [
        task_started("add it"),
        permission(
            "w",
            "write_file",
            "Write src/new.rs",
            ApprovalPreview::Diff(diff),
        ),
    ];
    let shown = live(&mut app(false), &events);
    assert!(shown.contains("Create src/new.rs (+1 -0)"), "{shown}");
    assert!(!shown.contains("Created"), "{shown}");
}

#[test]
fn a_compact_group_has_a_generic_header_before_its_label() {
    let mut events = vec![task_started("look around")];
    events.extend(read_batch("a", "a.rs"));
    events.push(started("b", "read_file", "Read b.rs"));
    assert_snapshot!(live(&mut app(true), &events));
}

#[test]
fn a_compact_group_header_takes_the_first_batch_label_in_place() {
    let mut events = vec![task_started("look around")];
    events.extend(read_batch("a", "a.rs"));
    events.push(summary("Read a.rs", &["a"]));
    events.push(started("b", "read_file", "Read b.rs"));
    assert_snapshot!(live(&mut app(true), &events));
}

#[test]
fn streaming_text_shows_the_unfinished_block_only() {
    let events = [
        task_started("explain"),
        text("First paragraph is done.\n\nSecond paragraph is still stre"),
    ];
    let mut a = app(false);
    let out = live(&mut a, &events);
    assert_eq!(
        a.chat.transcript().len(),
        2,
        "prompt and the finished paragraph are committed"
    );
    assert_snapshot!(out);
}

#[test]
fn the_resume_picker_lists_earlier_sessions_with_time_first_prompt_and_id() {
    let mut a = App::new(&TuiOptions {
        compact: false,
        model: "demo-large".into(),
        approval_mode: ApprovalMode::Default,
        no_color: false,
        transcript: Vec::new(),
        models: None,
        theme: corvid_core::settings::UiTheme::Dark,
        sessions: Some(listed_sessions()),
    });
    a.session_id = "cur-0000-current".into();
    a.command("/resume");
    a.on_key(
        crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Down,
            crossterm::event::KeyModifiers::NONE,
        ),
        Instant::now(),
    );
    assert_snapshot!(live(&mut a, &[]));
}

fn child(parent: &str, event: CoreEvent) -> CoreEvent {
    CoreEvent::Subagent {
        parent_call_id: parent.into(),
        event: Box::new(event),
    }
}

#[test]
fn a_running_task_shows_its_childs_latest_step_and_asks_its_approvals() {
    let mut app = app(false);
    let screen = live(
        &mut app,
        &[
            task_started("delegate"),
            started("t1", "task", "Find the parser"),
            child("t1", started("c1", "read_file", "Read src/a.rs")),
            child("t1", ok("c1", "read_file", "fn a() {}")),
            child("t1", started("c2", "grep_search", "Search 'parse'")),
        ],
    );
    assert!(screen.contains("Find the parser"), "{screen}");
    assert!(screen.contains("↳ Search 'parse'"), "{screen}");
    assert!(!screen.contains("Read src/a.rs"), "{screen}");

    let asking = live(
        &mut app,
        &[child(
            "t1",
            permission(
                "c3",
                "run_shell_command",
                "Run cargo test",
                ApprovalPreview::Command {
                    command: "cargo test".into(),
                },
            ),
        )],
    );
    assert!(
        asking.contains("Find the parser: Run cargo test"),
        "{asking}"
    );
}

#[test]
fn a_thirty_line_paste_shows_eight_rows_and_a_marker_for_the_other_twenty_two() {
    let mut a = app(false);
    let pasted: Vec<String> = (1..=30).map(|i| format!("pasted line {i}")).collect();
    a.on_paste(&pasted.join("\n"), Instant::now());
    let out = live(&mut a, &[]);
    assert!(out.contains("… +22 lines"), "{out}");
    assert_snapshot!(out);
}

#[test]
fn the_status_hint_names_the_transcript_view_in_both_modes() {
    assert!(live(&mut app(true), &[]).contains("ctrl+o transcript"));
    assert!(live(&mut app(false), &[]).contains("ctrl+o transcript"));
}

#[test]
fn typing_a_slash_opens_a_popup_of_commands_with_their_arguments_and_descriptions() {
    let mut a = app(false);
    a.composer.insert_str("/");
    assert_snapshot!(live(&mut a, &[]));
    a.composer.insert_str("m");
    let out = live(&mut a, &[]);
    assert!(out.contains("/memory") && out.contains("/model [NAME]") && out.contains("/mcp"));
    assert!(!out.contains("this list"), "{out}");
}

#[test]
fn the_resume_picker_searches_as_you_type_and_esc_clears_the_search_first() {
    let mut a = App::new(&TuiOptions {
        compact: false,
        model: "demo-large".into(),
        approval_mode: ApprovalMode::Default,
        no_color: false,
        transcript: Vec::new(),
        models: None,
        theme: corvid_core::settings::UiTheme::Dark,
        sessions: Some(listed_sessions()),
    });
    a.session_id = "cur-0000-current".into();
    a.command("/resume");
    let press = |a: &mut App, code| {
        a.on_key(
            crossterm::event::KeyEvent::new(code, crossterm::event::KeyModifiers::NONE),
            Instant::now(),
        )
    };
    for c in "PARSER".chars() {
        press(&mut a, crossterm::event::KeyCode::Char(c));
    }
    assert!(a.composer.is_empty(), "typing goes to the search");
    assert_snapshot!(live(&mut a, &[]));
    press(&mut a, crossterm::event::KeyCode::Esc);
    assert_eq!(a.picker.as_ref().map(|p| p.query.as_str()), Some(""));
    press(&mut a, crossterm::event::KeyCode::Esc);
    assert!(a.picker.is_none());
}
