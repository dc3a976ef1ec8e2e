//! Shared test helpers: core event builders and an in-memory terminal (vt100) for the screen.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::cell::RefCell;
use std::io::{self, Write};
use std::rc::Rc;

use corvid_protocol::{
    ApprovalPreview, CoreEvent, FileDiff, Provenance, StopReason, ToolDisplay, ToolKind,
    ToolOutput, ToolStatus,
};
use corvid_tui::backend::{Probe, SafeScroll};
use corvid_tui::screen::Screen;
use ratatui::layout::{Position, Size};

pub fn task_started(prompt: &str) -> CoreEvent {
    CoreEvent::TaskStarted {
        task_id: "t1".into(),
        prompt: prompt.into(),
    }
}

pub fn task_finished(pending: u32) -> CoreEvent {
    CoreEvent::TaskFinished {
        task_id: "t1".into(),
        stop_reason: StopReason::EndTurn,
        error: None,
        pending_summaries: pending,
    }
}

pub fn text(t: &str) -> CoreEvent {
    CoreEvent::TextDelta { text: t.into() }
}

pub fn kind_of(name: &str) -> ToolKind {
    match name {
        "read_file" => ToolKind::Read,
        "grep_search" | "glob" => ToolKind::Search,
        "edit" | "write_file" => ToolKind::Edit,
        "run_shell_command" => ToolKind::Execute,
        _ => ToolKind::Other,
    }
}

pub fn preparing(id: &str, name: &str, display: &str) -> CoreEvent {
    CoreEvent::ToolPreparing {
        call_id: id.into(),
        tool_name: name.into(),
        display_name: display.into(),
        kind: kind_of(name),
        provenance: Provenance::Builtin,
    }
}

pub fn display(name: &str, title: &str) -> ToolDisplay {
    ToolDisplay {
        title: title.into(),
        kind: kind_of(name),
        locations: vec![],
    }
}

pub fn started(id: &str, name: &str, title: &str) -> CoreEvent {
    CoreEvent::ToolStarted {
        call_id: id.into(),
        tool_name: name.into(),
        args: serde_json::json!({}),
        display: display(name, title),
        provenance: Provenance::Builtin,
        was_prepared: true,
    }
}

pub fn output(text: &str) -> ToolOutput {
    ToolOutput::text(text)
}

pub fn finished(id: &str, name: &str, status: ToolStatus, out: ToolOutput) -> CoreEvent {
    CoreEvent::ToolFinished {
        call_id: id.into(),
        tool_name: name.into(),
        status,
        output: out,
        provenance: Provenance::Builtin,
    }
}

pub fn ok(id: &str, name: &str, text: &str) -> CoreEvent {
    finished(id, name, ToolStatus::Completed, output(text))
}

pub fn batch(ids: &[&str]) -> CoreEvent {
    CoreEvent::BatchCompleted {
        call_ids: ids.iter().map(|s| s.to_string()).collect(),
    }
}

pub fn summary(label: &str, ids: &[&str]) -> CoreEvent {
    CoreEvent::ToolUseSummary {
        summary: label.into(),
        preceding_tool_use_ids: ids.iter().map(|s| s.to_string()).collect(),
    }
}

pub fn sample_diff() -> FileDiff {
    FileDiff {
        path: "src/lib.rs".into(),
        old_text: Some("fn a() {}\nfn b() {\n    old();\n}\n".into()),
        new_text: "fn a() {}\nfn b() {\n    new();\n    more();\n}\n".into(),
    }
}

pub fn permission(id: &str, name: &str, title: &str, preview: ApprovalPreview) -> CoreEvent {
    CoreEvent::PermissionRequested {
        call_id: id.into(),
        tool_name: name.into(),
        args: serde_json::json!({}),
        display: display(name, title),
        preview,
        reason: None,
        always_scope: None,
        server: None,
    }
}

/// One read call through its whole lifecycle, as one batch.
pub fn read_batch(id: &str, path: &str) -> Vec<CoreEvent> {
    vec![
        preparing(id, "read_file", "ReadFile"),
        started(id, "read_file", &format!("Read {path}")),
        ok(id, "read_file", "line one\nline two\nline three"),
        batch(&[id]),
    ]
}

/// An emulated terminal shared by the writer and the probe of a backend.
#[derive(Clone)]
pub struct VtTerm {
    pub parser: Rc<RefCell<vt100::Parser>>,
    /// Every byte written, for replaying into other terminal engines.
    pub bytes: Rc<RefCell<Vec<u8>>>,
    /// Makes the terminal stop answering cursor queries (as a busy input reader does).
    pub mute_cursor: Rc<std::cell::Cell<bool>>,
}

impl VtTerm {
    pub fn new(rows: u16, cols: u16) -> Self {
        let nz = |n: u16| std::num::NonZeroU16::new(n).expect("terminal sizes are not zero");
        let parser = vt100::Parser::new(nz(rows), nz(cols), 100_000);
        Self {
            parser: Rc::new(RefCell::new(parser)),
            bytes: Rc::default(),
            mute_cursor: Rc::default(),
        }
    }

    pub fn screen(&self, no_color: bool) -> Screen<VtTerm, VtTerm> {
        let term = self.clone();
        let factory = Box::new(move |cursor| SafeScroll::new(term.clone(), term.clone(), cursor));
        match Screen::new(factory, no_color) {
            Ok(s) => s,
            Err(e) => panic!("screen: {e}"),
        }
    }

    /// All rows: scrollback then the visible screen, right-trimmed.
    pub fn all_rows(&self) -> Vec<String> {
        let mut p = self.parser.borrow_mut();
        let screen = p.screen_mut();
        let (rows, cols) = screen.size();
        let (rows, cols) = (rows.get(), cols.get());
        screen.set_scrollback(usize::MAX);
        let total_back = screen.scrollback();
        let mut out = Vec::new();
        let mut offset = total_back;
        // Walk the scrollback a screen at a time, oldest first.
        loop {
            screen.set_scrollback(offset);
            let take = if offset == 0 {
                usize::from(rows)
            } else {
                offset.min(usize::from(rows))
            };
            let page: Vec<String> = screen.rows(0, cols).take(take).collect();
            out.extend(page);
            if offset == 0 {
                break;
            }
            offset = offset.saturating_sub(usize::from(rows));
        }
        screen.set_scrollback(0);
        out.into_iter().map(|r| r.trim_end().to_string()).collect()
    }

    /// Resizes the emulated terminal (vt100 does not reflow).
    pub fn resize(&self, rows: u16, cols: u16) {
        let nz = |n: u16| std::num::NonZeroU16::new(n).expect("terminal sizes are not zero");
        self.parser.borrow_mut().set_size(nz(rows), nz(cols));
    }

    /// The visible rows, right-trimmed.
    pub fn visible_rows(&self) -> Vec<String> {
        let p = self.parser.borrow();
        let cols = p.screen().size().1.get();
        p.screen()
            .rows(0, cols)
            .map(|r| r.trim_end().to_string())
            .collect()
    }

    pub fn screen_rows(&self) -> u16 {
        self.parser.borrow().screen().size().0.get()
    }
}

impl Write for VtTerm {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.parser.borrow_mut().process(buf);
        self.bytes.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Probe for VtTerm {
    fn size(&self) -> io::Result<Size> {
        let (rows, cols) = self.parser.borrow().screen().size();
        Ok(Size {
            width: cols.get(),
            height: rows.get(),
        })
    }
    fn query_cursor(&mut self) -> io::Result<Position> {
        if self.mute_cursor.get() {
            return Err(io::Error::other(
                "The cursor position could not be read within a normal duration",
            ));
        }
        let (row, col) = self.parser.borrow().screen().cursor_position();
        Ok(Position { x: col, y: row })
    }
}

/// Recorded sessions for `/resume` without a store: listing works, resuming is not exercised
/// here (it needs a real agent; the binary's launcher does it).
pub struct FakeSessions(pub Vec<corvid_core::session::SessionSummary>);

impl corvid_tui::SessionLauncher for FakeSessions {
    fn list(&self) -> Result<Vec<corvid_core::session::SessionSummary>, String> {
        Ok(self.0.clone())
    }

    fn resume(&self, id: &str) -> Result<corvid_core::session::Resumed, String> {
        Err(format!("the fake launcher does not start agents ({id})"))
    }

    fn fork(
        &self,
        parent: &str,
        _at: Option<corvid_tui::BranchAt>,
    ) -> Result<corvid_tui::Branched, String> {
        Err(format!(
            "the fake launcher does not start agents ({parent})"
        ))
    }

    fn fresh(&self) -> Result<corvid_core::session::Resumed, String> {
        Err("the fake launcher does not start agents".into())
    }
}

/// A listed session started `minutes` after 2026-11-30 09:00 UTC.
pub fn session(id: &str, minutes: u64, prompt: &str) -> corvid_core::session::SessionSummary {
    corvid_core::session::SessionSummary {
        id: id.into(),
        path: format!("/sessions/{id}.jsonl").into(),
        started_at_ms: 1_796_029_200_000 + minutes * 60_000,
        model: "demo".into(),
        first_prompt: prompt.into(),
        title: None,
        health: Default::default(),
        forked_from: None,
    }
}

/// Sessions of this project, newest first: `cur-…` is the one running now, `9d1c…` has no prompt.
pub fn listed_sessions() -> std::sync::Arc<FakeSessions> {
    std::sync::Arc::new(FakeSessions(vec![
        session("cur-0000-current", 50, "the session running now"),
        session(
            "5f3a9c21-aaaa",
            30,
            "Look around this project\nand tell me what it is",
        ),
        session("9d1c0000-empty", 20, ""),
        session("0b7e44d2-bbbb", 10, "Fix the failing parser test"),
    ]))
}

/// Does what the run loop does with `actions`' rewind work (here on this thread): each list of
/// turns and preview is computed and handed back to the app. The other actions are returned.
pub fn settle_previews(
    a: &mut corvid_tui::app::App,
    actions: Vec<corvid_tui::app::Action>,
) -> Vec<corvid_tui::app::Action> {
    let mut rest = Vec::new();
    for action in actions {
        match action {
            corvid_tui::app::Action::Preview(request) => {
                let checkpoints = a.checkpoints.clone().expect("a preview needs checkpoints");
                let answer = request.run(&checkpoints);
                a.previewed(&request, answer);
            }
            corvid_tui::app::Action::ListTurns(request) => {
                let checkpoints = a.checkpoints.clone().expect("a listing needs checkpoints");
                let answer = request.run(&checkpoints);
                a.listed(&request, answer);
            }
            other => rest.push(other),
        }
    }
    rest
}
