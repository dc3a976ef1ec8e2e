//! The UI's exact output bytes replayed into xterm.js (VS Code's terminal engine): history
//! must survive in its scrollback (stock partial-region scrolls lose it there, notes P1).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)] // test helpers outside #[test] fns

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use common::*;
use corvid_protocol::ApprovalMode;
use corvid_tui::app::{Action, App, TuiOptions};
use std::io::Write;

const ITEMS: usize = 30;

fn tests_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/tui")
}

#[test]
fn history_survives_in_xterm_js_scrollback_in_order() {
    replay_session(30, 100, false);
}

#[test]
fn history_survives_in_xterm_js_when_the_live_area_fills_a_short_terminal() {
    // 10 rows: the approval dialog makes the viewport the whole screen (notes P2).
    replay_session(10, 60, true);
}

fn replay_session(rows: u16, cols: u16, approvals: bool) {
    let dir = tests_dir();
    // Never a silent pass: `bash tests/run.sh` (the README's test command) runs `npm ci` here.
    assert!(
        dir.join("node_modules/@xterm/headless").exists(),
        "xterm.js is not installed in tests/tui/node_modules: run the suite with \
         `bash tests/run.sh`, or `cd tests/tui && npm ci`"
    );

    let term = VtTerm::new(rows, cols);
    let mut screen = term.screen(false);
    let mut app = App::new(&TuiOptions {
        compact: false,
        model: "demo".into(),
        approval_mode: ApprovalMode::Yolo,
        no_color: false,
        transcript: Vec::new(),
        models: None,
        theme: corvid_core::settings::UiTheme::Dark,
        sessions: None,
    });
    for i in 0..ITEMS {
        let mut steps = vec![vec![task_started(&format!("prompt {i}."))]];
        steps.push(vec![preparing(&format!("c{i}"), "read_file", "ReadFile")]);
        steps.push(read_batch(&format!("c{i}"), &format!("file{i}.rs")));
        steps.push(vec![summary(
            &format!("Read file{i}.rs"),
            &[&format!("c{i}")],
        )]);
        if approvals {
            let e = format!("e{i}");
            let preview = corvid_protocol::ApprovalPreview::Diff(sample_diff());
            steps.push(vec![permission(&e, "edit", "Edit src/lib.rs", preview)]);
            steps.push(vec![corvid_protocol::CoreEvent::Warning {
                message: format!("warning {i}."),
            }]);
            steps.push(vec![
                corvid_protocol::CoreEvent::PermissionResolved {
                    call_id: e.clone(),
                    decision: corvid_protocol::ApprovalDecision::AllowOnce,
                },
                ok(&e, "edit", "edited"),
                batch(&[&e]),
            ]);
        }
        steps.push(vec![text(&format!("answer {i}.\n\nsecond paragraph {i}."))]);
        steps.push(vec![task_finished(0)]);
        for step in steps {
            for ev in &step {
                app.on_core_event(ev);
            }
            screen.frame(&app, Instant::now()).unwrap();
        }
    }

    let lines = xterm_lines(&term.bytes.borrow(), rows, cols);
    assert!(
        lines.len() > usize::from(rows) * 3,
        "xterm.js kept only {} rows: history was lost",
        lines.len()
    );
    for l in &lines {
        assert!(
            !l.contains("esc to cancel"),
            "a live row leaked into history: {lines:#?}"
        );
    }
    let mut last = 0;
    for i in 0..ITEMS {
        let mut needles = vec![
            format!("› prompt {i}."),
            format!("✓ Read file{i}.rs"),
            format!("● Read file{i}.rs"),
        ];
        if approvals {
            needles.push(format!("warning {i}."));
        }
        needles.push(format!("answer {i}."));
        needles.push(format!("second paragraph {i}."));
        for needle in needles {
            let hits: Vec<usize> = lines
                .iter()
                .enumerate()
                .filter(|(_, l)| l.contains(needle.as_str()))
                .map(|(n, _)| n)
                .collect();
            assert_eq!(hits.len(), 1, "{needle:?} once in xterm.js: {lines:#?}");
            assert!(hits[0] > last || last == 0, "{needle:?} out of order");
            last = hits[0];
        }
    }
}

/// Every row xterm.js holds (scrollback, then the screen) after it was fed `bytes`.
fn xterm_lines(bytes: &[u8], rows: u16, cols: u16) -> Vec<String> {
    let dir = tests_dir();
    assert!(
        dir.join("node_modules/@xterm/headless").exists(),
        "xterm.js is not installed in tests/tui/node_modules: run the suite with \
         `bash tests/run.sh`, or `cd tests/tui && npm ci`"
    );
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), bytes).unwrap();
    let out = Command::new("node")
        .arg(dir.join("xterm_replay.mjs"))
        .arg(file.path())
        .arg(cols.to_string())
        .arg(rows.to_string())
        .current_dir(&dir)
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "node failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn clear_keeps_the_shells_lines_and_the_transcript_in_xterm_js_scrollback() {
    let (rows, cols) = (20, 80);
    let term = VtTerm::new(rows, cols);
    // The user's shell printed these before corvid started.
    let mut shell = term.clone();
    for i in 1..=30 {
        write!(shell, "shell line {i}\r\n").unwrap();
    }
    let mut screen = term.screen(false);
    let mut app = App::new(&TuiOptions {
        compact: false,
        model: "demo".into(),
        approval_mode: ApprovalMode::Yolo,
        no_color: false,
        transcript: Vec::new(),
        models: None,
        theme: corvid_core::settings::UiTheme::Dark,
        sessions: None,
    });
    for i in 0..3 {
        for ev in [task_started(&format!("prompt {i}."))]
            .into_iter()
            .chain(read_batch(&format!("c{i}"), &format!("file{i}.rs")))
            .chain([text(&format!("answer {i}.")), task_finished(0)])
        {
            app.on_core_event(&ev);
            screen.frame(&app, Instant::now()).unwrap();
        }
    }
    assert!(app.command("/clear").contains(&Action::ClearScreen));
    screen.clear_screen().unwrap();
    screen.frame(&app, Instant::now()).unwrap();
    app.on_core_event(&task_started("after the clear."));
    screen.frame(&app, Instant::now()).unwrap();

    let lines = xterm_lines(&term.bytes.borrow(), rows, cols);
    let once = |needle: &str| {
        let n = lines.iter().filter(|l| l.trim_end() == needle).count();
        assert_eq!(n, 1, "{needle:?} once in xterm.js: {lines:#?}");
    };
    once("shell line 1");
    once("shell line 30");
    for i in 0..3 {
        once(&format!("› prompt {i}."));
        once(&format!("answer {i}."));
    }
    once("› after the clear.");
    // The screen was cleared: the first prompt is in scrollback, not on screen.
    let first = lines
        .iter()
        .position(|l| l.starts_with("› prompt 0."))
        .unwrap();
    assert!(first < lines.len() - usize::from(rows), "{lines:#?}");
}
