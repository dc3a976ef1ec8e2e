//! Live-area frame time with 10 and 10,000 committed transcript items (SPEC §11: flat).
//!
//! Each iteration advances the spinner and draws one frame (insert nothing, redraw the live
//! area) through the real backend into a byte sink of a 100x30 terminal.

use std::hint::black_box;
use std::io;
use std::time::Instant;

use corvid_protocol::{
    ApprovalMode, CoreEvent, Provenance, StopReason, ToolDisplay, ToolKind, ToolOutput, ToolStatus,
};
use corvid_tui::app::{App, TuiOptions};
use corvid_tui::backend::{Probe, SafeScroll};
use corvid_tui::screen::Screen;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use ratatui::layout::{Position, Size};

/// A 100x30 terminal that answers without a tty.
struct Fixed;

impl Probe for Fixed {
    fn size(&self) -> io::Result<Size> {
        Ok(Size {
            width: 100,
            height: 30,
        })
    }
    fn query_cursor(&mut self) -> io::Result<Position> {
        Ok(Position { x: 0, y: 29 })
    }
}

fn item(i: usize) -> Vec<CoreEvent> {
    let id = format!("c{i}");
    vec![
        CoreEvent::TaskStarted {
            task_id: format!("t{i}"),
            prompt: format!("prompt number {i}"),
        },
        CoreEvent::ToolStarted {
            call_id: id.clone(),
            tool_name: "read_file".into(),
            args: serde_json::json!({}),
            display: ToolDisplay {
                title: format!("Read src/file{i}.rs"),
                kind: ToolKind::Read,
                locations: vec![],
            },
            provenance: Provenance::Builtin,
            was_prepared: false,
        },
        CoreEvent::ToolFinished {
            call_id: id.clone(),
            tool_name: "read_file".into(),
            status: ToolStatus::Completed,
            output: ToolOutput::text("a\nb\nc"),
            provenance: Provenance::Builtin,
        },
        CoreEvent::BatchCompleted { call_ids: vec![id] },
        CoreEvent::TextDelta {
            text: format!("Answer {i} with `code` and **bold** text.\n\n"),
        },
        CoreEvent::TaskFinished {
            task_id: format!("t{i}"),
            stop_reason: StopReason::EndTurn,
            error: None,
            pending_summaries: 0,
        },
    ]
}

/// An app with `items` committed items (already in scrollback) and a running task whose
/// live area holds streaming text and a running tool group.
fn setup(items: usize) -> (App, Screen<io::Sink, Fixed>) {
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
    let mut screen = match Screen::new(Box::new(|c| SafeScroll::new(io::sink(), Fixed, c)), false) {
        Ok(s) => s,
        Err(e) => panic!("screen: {e}"),
    };
    // Each scripted task commits three cells: the prompt, its tool group and the answer.
    for i in 0..items.div_ceil(3) {
        for ev in item(i) {
            app.on_core_event(&ev);
        }
    }
    app.on_core_event(&CoreEvent::TaskStarted {
        task_id: "live".into(),
        prompt: "go".into(),
    });
    app.on_core_event(&CoreEvent::ToolPreparing {
        call_id: "p".into(),
        tool_name: "grep_search".into(),
        display_name: "Grep".into(),
        kind: ToolKind::Search,
        provenance: Provenance::Builtin,
    });
    if let Err(e) = screen.frame(&app, Instant::now()) {
        panic!("frame: {e}");
    }
    (app, screen)
}

fn frame_time(c: &mut Criterion) {
    let mut group = c.benchmark_group("live_area_frame");
    for items in [10usize, 10_000] {
        let (mut app, mut screen) = setup(items);
        let committed = app.chat.transcript().len();
        group.bench_with_input(
            BenchmarkId::from_parameter(committed),
            &committed,
            |b, _| {
                b.iter(|| {
                    let now = Instant::now();
                    app.tick(now);
                    black_box(screen.frame(&app, now)).ok();
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, frame_time);
criterion_main!(benches);
