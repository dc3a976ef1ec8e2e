//! The terminal: committed cells go into scrollback once (`insert_before`), the live area is
//! an inline viewport sized to its content and redrawn each frame.

use std::io::{self, Write};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Instant;

use crossterm::queue;
use crossterm::terminal::{BeginSynchronizedUpdate, EndSynchronizedUpdate};
use ratatui::backend::Backend;
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};
use ratatui::{Terminal, TerminalOptions, Viewport};

use crate::app::App;
use crate::backend::{Probe, SafeScroll};
use crate::cells::HistoryCell;
use crate::live::render_lines;

/// The viewport's top row, for the panic hook (which cannot reach the [`Screen`]).
pub static VIEWPORT_TOP: AtomicU16 = AtomicU16::new(0);

/// Rows inserted per `insert_before` call; keeps the temporary buffer small on a replay.
const INSERT_CHUNK: usize = 500;

/// Makes a backend for a (re)created terminal, seeded with the cached cursor position.
pub type BackendFactory<W, P> = Box<dyn FnMut(Option<Position>) -> SafeScroll<W, P>>;

/// The terminal half of the UI.
pub struct Screen<W: Write, P: Probe> {
    terminal: Terminal<SafeScroll<W, P>>,
    make: BackendFactory<W, P>,
    height: u16,
    no_color: bool,
    /// How many transcript cells are already in scrollback.
    inserted: usize,
}

impl<W: Write, P: Probe> Screen<W, P> {
    /// Opens the inline viewport at the cursor (the first backend may query the terminal).
    pub fn new(mut make: BackendFactory<W, P>, no_color: bool) -> io::Result<Self> {
        let height = 3;
        let terminal = Terminal::with_options(
            make(None),
            TerminalOptions {
                viewport: Viewport::Inline(height),
            },
        )?;
        Ok(Self {
            terminal,
            make,
            height,
            no_color,
            inserted: 0,
        })
    }

    /// Inserts newly committed cells and redraws the live area, as one synchronized update.
    pub fn frame(&mut self, app: &App, now: Instant) -> io::Result<()> {
        queue!(self.terminal.backend_mut(), BeginSynchronizedUpdate)?;
        let result = self.frame_inner(app, now);
        queue!(self.terminal.backend_mut(), EndSynchronizedUpdate)?;
        Backend::flush(self.terminal.backend_mut())?;
        result
    }

    fn frame_inner(&mut self, app: &App, now: Instant) -> io::Result<()> {
        self.terminal.autoresize()?;
        let size = self.terminal.size()?;
        self.insert_cells(
            &app.chat.transcript()[self.inserted.min(app.chat.transcript().len())..],
            size.width,
        )?;
        self.inserted = app.chat.transcript().len();

        // Rendered once per frame: the height decision and the drawing use the same rows.
        let (lines, cursor) = app.view(now).lines(size.width);
        let wanted = u16::try_from(lines.len())
            .unwrap_or(u16::MAX)
            .clamp(1, size.height.max(1));
        if wanted != self.height {
            self.set_height(wanted)?;
        }
        let no_color = self.no_color;
        let frame = self.terminal.draw(|f| {
            let area = f.area();
            let pos = render_lines(lines, cursor, area, f.buffer_mut());
            if no_color {
                strip_colors(f.buffer_mut());
            }
            f.set_cursor_position(pos);
        })?;
        VIEWPORT_TOP.store(frame.area.y, Ordering::Relaxed);
        Ok(())
    }

    /// Rows of scrollback `cells` take at `width`, rendered and inserted above the viewport.
    fn insert_cells(&mut self, cells: &[HistoryCell], width: u16) -> io::Result<()> {
        if cells.is_empty() {
            return Ok(());
        }
        let lines: Vec<Line<'static>> = cells
            .iter()
            .flat_map(|c| c.render_with_gap(width))
            .collect();
        let no_color = self.no_color;
        for chunk in lines.chunks(INSERT_CHUNK) {
            let n = u16::try_from(chunk.len()).unwrap_or(u16::MAX);
            let chunk = chunk.to_vec();
            self.terminal.insert_before(n, |buf| {
                let area = buf.area;
                Paragraph::new(chunk).render(area, buf);
                if no_color {
                    strip_colors(buf);
                }
            })?;
        }
        Ok(())
    }

    /// Replaces the terminal with one whose inline viewport is `height` rows, at the same top.
    fn set_height(&mut self, height: u16) -> io::Result<()> {
        let top = self.terminal.get_frame().area().y;
        let backend = self.terminal.backend_mut();
        backend.set_cursor_position(Position::new(0, top))?;
        backend.clear_region(ratatui::backend::ClearType::AfterCursor)?;
        let cursor = backend.cached_cursor();
        self.terminal = Terminal::with_options(
            (self.make)(cursor),
            TerminalOptions {
                viewport: Viewport::Inline(height),
            },
        )?;
        self.height = height;
        Ok(())
    }

    /// The terminal was resized: re-anchor the viewport. A real cursor query is allowed here
    /// (call it right after the input stream yielded the resize event).
    pub fn on_resize(&mut self, width: u16, height: u16) -> io::Result<()> {
        self.terminal.backend_mut().allow_cursor_query(true);
        let result = self.terminal.resize(Rect::new(0, 0, width, height));
        self.terminal.backend_mut().allow_cursor_query(false);
        result
    }

    /// Clears screen and scrollback; the next frame prints the whole transcript again (after
    /// a width change, so it is wrapped at the new width, and for `/clear`).
    pub fn reset(&mut self) -> io::Result<()> {
        let backend = self.terminal.backend_mut();
        backend.write_all(b"\x1b[r\x1b[H\x1b[2J\x1b[3J")?;
        backend.set_cursor_position(Position::ORIGIN)?;
        Backend::flush(backend)?;
        self.terminal = Terminal::with_options(
            (self.make)(Some(Position::ORIGIN)),
            TerminalOptions {
                viewport: Viewport::Inline(self.height),
            },
        )?;
        self.inserted = 0;
        Ok(())
    }

    /// Removes the live area and shows the cursor, leaving the transcript for the shell.
    pub fn restore(&mut self) -> io::Result<()> {
        let top = self.terminal.get_frame().area().y;
        let backend = self.terminal.backend_mut();
        backend.set_cursor_position(Position::new(0, top))?;
        backend.clear_region(ratatui::backend::ClearType::AfterCursor)?;
        backend.show_cursor()?;
        Backend::flush(backend)
    }

    /// The live area's top row: every row above it is committed history.
    pub fn viewport_top(&mut self) -> u16 {
        self.terminal.get_frame().area().y
    }
}

/// `NO_COLOR`: keep bold/dim/underline, drop every colour.
fn strip_colors(buf: &mut Buffer) {
    let area = buf.area;
    buf.set_style(area, Style::new().fg(Color::Reset).bg(Color::Reset));
}
