//! Scrollback insertion on an emulated terminal (vt100): committed items appear exactly once,
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns
//! in order, and rows above the live area are never rewritten.

mod common;

use std::time::Instant;

use common::*;
use corvid_protocol::{ApprovalMode, CoreEvent};
use corvid_tui::app::{Action, App, TuiOptions};
use corvid_tui::backend::Probe;
use corvid_tui::screen::Screen;
use pretty_assertions::assert_eq;
use ratatui::layout::Size;
use std::io::Write;

struct Harness {
    term: VtTerm,
    screen: Screen<VtTerm, VtTerm>,
    app: App,
    /// The committed history seen after the previous frame.
    history: Vec<String>,
}

impl Harness {
    fn new(rows: u16, cols: u16, compact: bool) -> Self {
        let term = VtTerm::new(rows, cols);
        let screen = term.screen(false);
        let app = App::new(&TuiOptions {
            compact,
            model: "demo".into(),
            approval_mode: ApprovalMode::Yolo,
            no_color: false,
            transcript: Vec::new(),
            models: None,
            theme: corvid_core::settings::UiTheme::Dark,
            sessions: None,
        });
        Self {
            term,
            screen,
            app,
            history: Vec::new(),
        }
    }

    /// Applies events, draws one frame, and checks that old history rows are untouched.
    fn feed(&mut self, events: &[CoreEvent]) {
        for ev in events {
            self.app.on_core_event(ev);
        }
        self.screen.frame(&self.app, Instant::now()).unwrap();
        let history = self.history_rows();
        assert!(
            history.len() >= self.history.len()
                && history[..self.history.len()] == self.history[..],
            "committed rows were rewritten:\nbefore {:#?}\nafter {:#?}",
            self.history,
            history
        );
        for row in &history {
            assert!(
                !row.contains("esc to cancel") && !row.contains("ctrl+o transcript"),
                "a live-area row leaked into history: {history:#?}"
            );
        }
        self.history = history;
    }

    /// Scrollback plus the screen rows above the live area.
    fn history_rows(&mut self) -> Vec<String> {
        let all = self.term.all_rows();
        let rows = usize::from(self.term.screen_rows());
        let top = usize::from(self.screen.viewport_top());
        let cut = all.len() - rows + top;
        all[..cut].to_vec()
    }

    fn count(&self, needle: &str) -> usize {
        self.history.iter().filter(|r| r.contains(needle)).count()
    }

    fn position(&self, needle: &str) -> usize {
        self.history
            .iter()
            .position(|r| r.contains(needle))
            .unwrap_or_else(|| panic!("{needle:?} not in history {:#?}", self.history))
    }
}

/// A session of two tool batches with labels between answer paragraphs.
fn two_batches(late_first_label: bool) -> Vec<Vec<CoreEvent>> {
    let mut steps = vec![vec![task_started("Where is the config loaded?")]];
    steps.push(vec![text("I will look at the loaders.\n\n")]);
    steps.push(vec![preparing("a", "read_file", "ReadFile")]);
    steps.push(vec![started("a", "read_file", "Read src/config.rs")]);
    steps.push(vec![ok("a", "read_file", "x\ny"), batch(&["a"])]);
    if !late_first_label {
        steps.push(vec![summary("Read the config module", &["a"])]);
    }
    steps.push(vec![started("b", "grep_search", "Search \"load\"")]);
    steps.push(vec![ok("b", "grep_search", "1 match"), batch(&["b"])]);
    steps.push(vec![summary("Searched for load", &["b"])]);
    steps.push(vec![text(
        "The config is loaded in `settings/mod.rs`.\n\nDone.",
    )]);
    steps.push(vec![task_finished(0)]);
    steps
}

#[test]
fn full_mode_commits_each_item_once_with_the_label_line_after_its_group() {
    let mut h = Harness::new(24, 80, false);
    for step in two_batches(false) {
        h.feed(&step);
    }
    for needle in [
        "› Where is the config loaded?",
        "I will look at the loaders.",
        "✓ Read src/config.rs",
        "● Read the config module",
        "✓ Search \"load\"",
        "● Searched for load",
        "The config is loaded in settings/mod.rs.",
        "Done.",
    ] {
        assert_eq!(h.count(needle), 1, "{needle:?} once in {:#?}", h.history);
    }
    let order: Vec<usize> = [
        "› Where",
        "I will look",
        "✓ Read src/config.rs",
        "● Read the config module",
        "✓ Search",
        "● Searched for load",
        "The config is loaded",
        "Done.",
    ]
    .iter()
    .map(|n| h.position(n))
    .collect();
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert_eq!(order, sorted);
}

#[test]
fn compact_mode_merges_two_batches_under_the_first_label_without_a_label_line() {
    let mut h = Harness::new(24, 80, true);
    for step in two_batches(false) {
        h.feed(&step);
    }
    assert_eq!(
        h.count("✓ Read the config module · 2 tools"),
        1,
        "{:#?}",
        h.history
    );
    assert_eq!(h.count("●"), 0, "{:#?}", h.history);
    assert_eq!(
        h.count("Read src/config.rs"),
        0,
        "finished rows fold into the header"
    );
    assert!(h.position("I will look") < h.position("2 tools"));
    assert!(h.position("2 tools") < h.position("The config is loaded"));
}

#[test]
fn compact_mode_shows_a_label_that_arrives_after_its_group_was_committed_as_a_line() {
    let mut h = Harness::new(24, 80, true);
    h.feed(&[task_started("read it")]);
    h.feed(&read_batch("a", "a.rs"));
    h.feed(&[text("It says hello.\n\n")]);
    h.feed(&[summary("Read a.rs", &["a"])]);
    h.feed(&[task_finished(0)]);
    assert_eq!(h.count("✓ Tool × 1"), 1, "{:#?}", h.history);
    assert_eq!(h.count("● Read a.rs"), 1, "{:#?}", h.history);
    assert!(h.position("It says hello.") < h.position("● Read a.rs"));
}

#[test]
fn a_stale_label_is_dropped() {
    let mut h = Harness::new(24, 80, false);
    h.feed(&[task_started("read two")]);
    h.feed(&read_batch("a", "a.rs"));
    h.feed(&read_batch("b", "b.rs"));
    h.feed(&[summary("Read a.rs", &["a"]), summary("Read b.rs", &["b"])]);
    h.feed(&[task_finished(0)]);
    assert_eq!(h.count("● Read a.rs"), 0, "{:#?}", h.history);
    assert_eq!(h.count("● Read b.rs"), 1, "{:#?}", h.history);
}

#[test]
fn a_long_session_on_a_short_terminal_keeps_every_item_once_and_in_order() {
    // 10 rows: the live area (approval dialog, running group) is often taller than the screen.
    let mut h = Harness::new(10, 60, false);
    for i in 0..40 {
        let id = format!("c{i}");
        h.feed(&[task_started(&format!("prompt number {i}."))]);
        h.feed(&[
            preparing(&id, "read_file", "ReadFile"),
            preparing("x", "grep_search", "Grep"),
            preparing("y", "grep_search", "Grep"),
        ]);
        let discard = |id: &str| CoreEvent::PreparationDiscarded {
            call_id: id.into(),
            tool_name: "grep_search".into(),
            reason: corvid_protocol::DiscardReason::Retry,
            provenance: corvid_protocol::Provenance::Builtin,
        };
        h.feed(&[discard("x"), discard("y")]);
        h.feed(&read_batch(&id, &format!("file{i}.rs")));
        let e = format!("e{i}");
        h.feed(&[permission(
            &e,
            "edit",
            "Edit src/lib.rs",
            corvid_protocol::ApprovalPreview::Diff(sample_diff()),
        )]);
        // Inserted while the dialog makes the viewport fill the whole screen.
        h.feed(&[CoreEvent::Warning {
            message: format!("warning {i}."),
        }]);
        h.feed(&[
            CoreEvent::PermissionResolved {
                call_id: e.clone(),
                decision: corvid_protocol::ApprovalDecision::AllowOnce,
            },
            ok(&e, "edit", "edited"),
            batch(&[&e]),
        ]);
        h.feed(&[text(&format!(
            "answer number {i}.\n\nwith a second paragraph {i}."
        ))]);
        h.feed(&[task_finished(0)]);
    }
    for i in 0..40 {
        assert_eq!(
            h.count(&format!("prompt number {i}.")),
            1,
            "{:#?}",
            h.history
        );
        assert_eq!(h.count(&format!("Read file{i}.rs ")), 1, "{:#?}", h.history);
        assert_eq!(h.count(&format!("answer number {i}.")), 1);
        assert_eq!(h.count(&format!("warning {i}.")), 1);
        assert_eq!(h.count(&format!("with a second paragraph {i}.")), 1);
    }
    assert_eq!(h.count("awaiting approval"), 0);
    let positions: Vec<usize> = (0..40)
        .map(|i| h.position(&format!("answer number {i}.")))
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn no_color_output_has_no_colours_but_keeps_bold() {
    let term = VtTerm::new(12, 60);
    let mut screen = term.screen(true);
    let mut app = App::new(&TuiOptions {
        compact: false,
        model: "demo".into(),
        approval_mode: ApprovalMode::Yolo,
        no_color: true,
        transcript: Vec::new(),
        models: None,
        theme: corvid_core::settings::UiTheme::Dark,
        sessions: None,
    });
    for ev in read_batch("a", "a.rs") {
        app.on_core_event(&ev);
    }
    screen.frame(&app, Instant::now()).unwrap();
    let p = term.parser.borrow();
    let s = p.screen();
    let mut bold = false;
    for r in 0..12 {
        for c in 0..60 {
            let cell = s.cell(r, c).unwrap();
            assert_eq!(cell.fgcolor(), vt100::Color::Default, "row {r} col {c}");
            bold |= cell.bold();
        }
    }
    assert!(bold);
}

#[test]
fn a_width_change_and_clear_keep_the_shells_lines_and_every_item_once_in_scrollback() {
    let term = VtTerm::new(24, 80);
    // What the user's shell printed before corvid started: corvid never wrote it.
    let mut shell = term.clone();
    for i in 1..=30 {
        write!(shell, "shell line {i}\r\n").unwrap();
    }
    let screen = term.screen(false);
    let mut h = Harness {
        term,
        screen,
        app: App::new(&TuiOptions {
            compact: false,
            model: "demo".into(),
            approval_mode: ApprovalMode::Yolo,
            no_color: false,
            transcript: Vec::new(),
            models: None,
            theme: corvid_core::settings::UiTheme::Dark,
            sessions: None,
        }),
        history: Vec::new(),
    };
    for step in two_batches(false) {
        h.feed(&step);
    }
    h.term.resize(24, 100);
    let cursor = h.term.clone().query_cursor().unwrap();
    h.screen
        .on_resize(Size::new(100, 24), Some(cursor))
        .unwrap();
    h.feed(&[]);
    assert_eq!(
        h.app.command("/clear"),
        vec![
            Action::Submit(corvid_protocol::Op::ClearHistory),
            Action::ClearScreen
        ]
    );
    h.screen.clear_screen().unwrap();
    h.feed(&[]);
    let bytes = String::from_utf8_lossy(&h.term.bytes.borrow()).into_owned();
    assert!(
        !bytes.contains("\x1b[3J"),
        "corvid erased the terminal's scrollback"
    );
    assert!(!bytes.contains("\x1b[2J"), "corvid erased the whole screen");
    for needle in [
        "shell line 1",
        "shell line 30",
        "› Where is the config loaded?",
        "I will look at the loaders.",
        "✓ Read src/config.rs",
        "● Read the config module",
        "● Searched for load",
        "Done.",
    ] {
        let rows = h.term.all_rows();
        let n = rows
            .iter()
            .filter(|r| {
                r.trim_end() == needle || (r.contains(needle) && !needle.starts_with("shell"))
            })
            .count();
        assert_eq!(n, 1, "{needle:?} once in {rows:#?}");
    }
    // The screen itself is clean: only the live area is left on it.
    let visible: Vec<String> = h
        .term
        .visible_rows()
        .into_iter()
        .filter(|r| !r.is_empty())
        .collect();
    assert_eq!(visible.len(), 3, "{visible:#?}");
}

#[test]
fn a_resize_right_after_a_turn_never_fails_even_when_the_terminal_does_not_answer_the_cursor_query()
{
    let mut h = Harness::new(24, 80, false);
    for step in two_batches(false) {
        h.feed(&step);
    }
    h.term.mute_cursor.set(true);
    for (rows, cols) in [(18, 80), (24, 80), (24, 100)] {
        h.term.resize(rows, cols);
        h.screen
            .on_resize(Size::new(cols, rows), None)
            .unwrap_or_else(|e| panic!("a resize to {cols}x{rows} failed: {e}"));
        h.screen.frame(&h.app, Instant::now()).unwrap();
        // Redrawn at once: one live area, whole, and no stale copy of it.
        let visible = h.term.visible_rows();
        let composer = visible.iter().position(|r| r.starts_with("› Ask corvid"));
        assert!(
            composer.is_some_and(|i| visible[i + 1].starts_with("demo · yolo")),
            "{visible:#?}"
        );
        let live_rows = visible
            .iter()
            .filter(|r| r.starts_with("› Ask") || r.starts_with("demo · yolo"));
        assert_eq!(live_rows.count(), 2, "{visible:#?}");
        assert_eq!(
            visible.iter().filter(|r| r.contains("Done.")).count(),
            1,
            "{visible:#?}"
        );
    }
    // A size change the run loop has not reported yet is handled by the next frame too.
    h.term.resize(20, 100);
    h.screen.frame(&h.app, Instant::now()).unwrap();
    let visible = h.term.visible_rows();
    assert_eq!(
        visible
            .iter()
            .filter(|r| r.starts_with("› Ask corvid"))
            .count(),
        1,
        "{visible:#?}"
    );
}

#[test]
fn a_compact_session_on_an_eight_row_terminal_leaks_no_live_rows() {
    let mut h = Harness::new(8, 70, true);
    h.feed(&[task_started("again")]);
    h.feed(&[text(
        "I'll start by looking around the working directory and reading the most telling file.",
    )]);
    h.feed(&[preparing("a", "list_directory", "List")]);
    h.feed(&[preparing("b", "read_file", "ReadFile")]);
    h.feed(&[started("a", "list_directory", "List .")]);
    h.feed(&[started("b", "read_file", "Read README.md")]);
    h.feed(&[ok("a", "list_directory", "x\ny")]);
    h.feed(&[ok("b", "read_file", "# Demo"), batch(&["a", "b"])]);
    h.feed(&[CoreEvent::TurnStarted {
        turn: 2,
        model: "m".into(),
    }]);
    h.feed(&[text("Here is my plan")]);
    h.feed(&[summary("Listed files and read README.md", &["a", "b"])]);
    h.feed(&[text(" for this task.")]);
    h.feed(&[CoreEvent::TurnStarted {
        turn: 3,
        model: "m".into(),
    }]);
    h.feed(&[text("Let me run a harmless command.")]);
    h.feed(&[permission(
        "s",
        "run_shell_command",
        "Run ls -la",
        corvid_protocol::ApprovalPreview::Command {
            command: "ls -la".into(),
        },
    )]);
    h.feed(&[CoreEvent::PermissionResolved {
        call_id: "s".into(),
        decision: corvid_protocol::ApprovalDecision::AllowOnce,
    }]);
    h.feed(&[ok("s", "run_shell_command", "total 0"), batch(&["s"])]);
    h.feed(&[text("Done."), task_finished(0)]);
    assert_eq!(
        h.count("Listed files and read README.md · 2 tools"),
        1,
        "{:#?}",
        h.history
    );
}

/// A recorded task as core's `replay_events` yields it: whole messages as single deltas, calls
/// without preparation, and the label recorded late (after the next answer's text).
fn recorded_transcript() -> Vec<CoreEvent> {
    let started_unprepared = |id: &str, name: &str, title: &str| {
        let mut ev = started(id, name, title);
        if let CoreEvent::ToolStarted { was_prepared, .. } = &mut ev {
            *was_prepared = false;
        }
        ev
    };
    vec![
        CoreEvent::TaskStarted {
            task_id: "replay-0".into(),
            prompt: "Where is the config loaded?".into(),
        },
        text("I will look at the loaders."),
        started_unprepared("a", "read_file", "Read src/config.rs"),
        started_unprepared("b", "grep_search", "Search \"load\""),
        ok("a", "read_file", "x\ny"),
        ok("b", "grep_search", "1 match"),
        batch(&["a", "b"]),
        text("The config is loaded in `settings/mod.rs`."),
        summary("Read the config and searched for load", &["a", "b"]),
        CoreEvent::TaskFinished {
            task_id: "replay-0".into(),
            stop_reason: corvid_protocol::StopReason::EndTurn,
            error: None,
            pending_summaries: 0,
        },
    ]
}

#[test]
fn a_resumed_transcript_shows_its_tool_group_and_label_once_in_full_mode() {
    let mut h = Harness::new(24, 80, false);
    h.app.replay(&recorded_transcript());
    h.feed(&[]);
    for needle in [
        "› Where is the config loaded?",
        "I will look at the loaders.",
        "✓ Read src/config.rs",
        "✓ Search \"load\"",
        "● Read the config and searched for load",
        "The config is loaded in settings/mod.rs.",
    ] {
        assert_eq!(h.count(needle), 1, "{needle:?} once in {:#?}", h.history);
    }
    // The late label is placed under its group, before the answer that followed it.
    assert!(h.position("✓ Search") < h.position("● Read the config"));
    assert!(h.position("● Read the config") < h.position("The config is loaded"));
    assert!(!h.app.chat.is_running() && !h.app.animating());

    // The session goes on live below the replayed transcript.
    h.feed(&[task_started("And the tests?")]);
    h.feed(&read_batch("c", "tests/config.rs"));
    h.feed(&[text("They are in `tests/config.rs`."), task_finished(0)]);
    assert_eq!(h.count("● Read the config and searched for load"), 1);
    assert_eq!(h.count("✓ Read src/config.rs"), 1);
    assert!(h.position("The config is loaded") < h.position("› And the tests?"));
}

#[test]
fn a_resumed_transcript_shows_the_merged_labelled_header_in_compact_mode() {
    let mut h = Harness::new(24, 80, true);
    h.app.replay(&recorded_transcript());
    h.feed(&[]);
    assert_eq!(
        h.count("✓ Read the config and searched for load · 2 tools"),
        1,
        "{:#?}",
        h.history
    );
    assert_eq!(h.count("●"), 0, "{:#?}", h.history);
    assert_eq!(h.count("Read src/config.rs"), 0, "{:#?}", h.history);
    assert!(h.position("I will look") < h.position("2 tools"));
    assert!(h.position("2 tools") < h.position("The config is loaded"));
    assert!(h.app.chat.group.is_none() && !h.app.animating());
}

#[test]
fn a_replay_asks_nothing_and_leaves_nothing_running_even_when_cut_short() {
    let mut h = Harness::new(24, 80, false);
    h.app.replay(&[
        task_started("edit it"),
        permission(
            "e",
            "edit",
            "Edit src/lib.rs",
            corvid_protocol::ApprovalPreview::Diff(sample_diff()),
        ),
        started("e", "edit", "Edit src/lib.rs"),
        ok("e", "edit", "edited"),
        batch(&["e"]),
        text("Edited."),
    ]);
    h.feed(&[]);
    assert_eq!(h.app.chat.approval, None);
    assert!(!h.app.chat.is_running() && !h.app.animating());
    assert_eq!(h.count("✓ Edit src/lib.rs"), 1, "{:#?}", h.history);
    assert_eq!(h.count("Edited."), 1, "{:#?}", h.history);
}
