//! The terminal: committed cells go into scrollback once (`insert_before`), the live area is
//! an inline viewport sized to its content and redrawn each frame.

use std::io::{self, Write};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Instant;

use crossterm::queue;
use crossterm::terminal::{BeginSynchronizedUpdate, EndSynchronizedUpdate};
use ratatui::backend::Backend;
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Size};
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};
use ratatui::{Terminal, TerminalOptions, Viewport};

use crate::app::App;
use crate::backend::{Probe, SafeScroll};
use crate::cells::HistoryCell;
use crate::live::render_lines;
use crate::theme::{Palette, recolor};

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
    /// The palette drawn in (the UI draws dark colours; light ones are recoloured).
    palette: Palette,
    /// How many transcript cells are already in scrollback.
    inserted: usize,
    /// The terminal size the live area was last laid out for.
    size: Size,
    /// Columns used by each row of the last drawn live area (how a reflowing terminal splits
    /// them when it gets narrower).
    drawn_widths: Vec<u16>,
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
        let size = terminal.size()?;
        Ok(Self {
            terminal,
            make,
            height,
            no_color,
            palette: Palette::Dark,
            inserted: 0,
            size,
            drawn_widths: Vec::new(),
        })
    }

    /// Draws from now on in `palette` (`ui.theme`, or the terminal's background).
    pub fn set_palette(&mut self, palette: Palette) {
        self.palette = palette;
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
        let size = self.terminal.size()?;
        if size != self.size {
            // A resize the run loop has not reported yet: never let ratatui's own resize run
            // (it asks the terminal for the cursor and erases the screen on a narrower width).
            self.relayout(size, None)?;
        }
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
        let (no_color, palette) = (self.no_color, self.palette);
        let frame = self.terminal.draw(|f| {
            let area = f.area();
            let pos = render_lines(lines, cursor, area, f.buffer_mut());
            if no_color {
                strip_colors(f.buffer_mut());
            } else {
                recolor(f.buffer_mut(), palette);
            }
            f.set_cursor_position(pos);
        })?;
        VIEWPORT_TOP.store(frame.area.y, Ordering::Relaxed);
        self.drawn_widths = used_widths(frame.buffer);
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
        let (no_color, palette) = (self.no_color, self.palette);
        for chunk in lines.chunks(INSERT_CHUNK) {
            let n = u16::try_from(chunk.len()).unwrap_or(u16::MAX);
            let chunk = chunk.to_vec();
            self.terminal.insert_before(n, |buf| {
                let area = buf.area;
                Paragraph::new(chunk).render(area, buf);
                if no_color {
                    strip_colors(buf);
                } else {
                    recolor(buf, palette);
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

    /// The terminal was resized to `size`; `cursor` is where the terminal says its
    /// cursor is now, when the run loop could ask safely (see [`Screen::relayout`]).
    pub fn on_resize(&mut self, size: Size, cursor: Option<Position>) -> io::Result<()> {
        self.relayout(size, cursor)
    }

    /// Re-anchors the live area after a resize without touching a row of history: the
    /// terminal reflows what is in scrollback itself, and ratatui's own resize (which erases
    /// the screen on a narrower width) never runs.
    ///
    /// The terminal keeps the cursor (on the composer) on its line; a narrower width splits
    /// the live rows above it, so the old live area starts that many rows above the cursor.
    /// Without `cursor` (the terminal's answer), a live area that touched the bottom row is
    /// assumed to still do so.
    fn relayout(&mut self, size: Size, cursor: Option<Position>) -> io::Result<()> {
        let old = self.size;
        let area = self.terminal.get_frame().area();
        let backend = self.terminal.backend_mut();
        let last = backend
            .cached_cursor()
            .unwrap_or(Position::new(0, area.bottom().saturating_sub(1)));
        let row = usize::from(last.y.saturating_sub(area.y)).min(self.drawn_widths.len());
        let split = |w: u16| -> u16 {
            if size.width >= old.width || size.width == 0 {
                1
            } else {
                w.div_ceil(size.width).max(1)
            }
        };
        let narrower = size.width < old.width && size.width > 0;
        let cursor_wraps = if narrower { last.x / size.width } else { 0 };
        let above: u16 = self.drawn_widths[..row]
            .iter()
            .map(|&w| split(w))
            .sum::<u16>()
            + cursor_wraps;
        let below: u16 = self
            .drawn_widths
            .iter()
            .skip(row)
            .map(|&w| split(w))
            .sum::<u16>()
            .saturating_sub(1 + cursor_wraps);
        let last_row = size.height.saturating_sub(1);
        let cursor_y = match cursor {
            Some(c) => c.y.min(last_row),
            // A guess: terminals scroll history up into scrollback when they get shorter.
            None if area.bottom() >= old.height => last_row.saturating_sub(below),
            None => last.y.min(last_row),
        };
        let top = cursor_y.saturating_sub(above);
        // Erase the old live area (and anything under it) row by row: never `CSI 2J`/`3J`.
        write!(backend, "\x1b[r")?;
        for y in top..size.height {
            write!(backend, "\x1b[{};1H\x1b[2K", y + 1)?;
        }
        let anchor = Position::new(0, top);
        backend.set_cursor_position(anchor)?;
        Backend::flush(backend)?;
        self.height = self.height.min(size.height.max(1));
        self.terminal = Terminal::with_options(
            (self.make)(Some(anchor)),
            TerminalOptions {
                viewport: Viewport::Inline(self.height),
            },
        )?;
        self.size = size;
        Ok(())
    }

    /// Starts a clean screen (`/clear`, Ctrl+L) without losing anything: the live area is
    /// erased and the history rows on screen are scrolled up into the terminal's scrollback,
    /// where everything corvid and the shell printed before stays.
    pub fn clear_screen(&mut self) -> io::Result<()> {
        let top = self.terminal.get_frame().area().y;
        let rows = self.terminal.size()?.height;
        let backend = self.terminal.backend_mut();
        write!(backend, "\x1b[r")?;
        for y in top..rows {
            write!(backend, "\x1b[{};1H\x1b[2K", y + 1)?;
        }
        // Full-screen line feeds from the bottom row: every terminal keeps what they scroll out.
        write!(backend, "\x1b[{rows};1H")?;
        for _ in 0..top {
            backend.write_all(b"\n")?;
        }
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

    /// Opens the live area again where [`Screen::restore`] left the cursor (after another
    /// program had the terminal: a full-screen editor puts the screen back as it was).
    pub fn reopen(&mut self) -> io::Result<()> {
        let cursor = self.terminal.backend_mut().cached_cursor();
        self.terminal = Terminal::with_options(
            (self.make)(cursor),
            TerminalOptions {
                viewport: Viewport::Inline(self.height),
            },
        )?;
        Ok(())
    }

    /// The live area's top row: every row above it is committed history.
    pub fn viewport_top(&mut self) -> u16 {
        self.terminal.get_frame().area().y
    }
}

/// Columns up to the last non-blank cell of each row of a drawn frame.
fn used_widths(buf: &Buffer) -> Vec<u16> {
    let area = buf.area;
    (area.top()..area.bottom())
        .map(|y| {
            (area.left()..area.right())
                .rev()
                .find(|&x| buf.cell((x, y)).is_some_and(|c| c.symbol() != " "))
                .map_or(0, |x| x - area.left() + 1)
        })
        .collect()
}

/// `NO_COLOR`: keep bold/dim/underline, drop every colour.
fn strip_colors(buf: &mut Buffer) {
    let area = buf.area;
    buf.set_style(area, Style::new().fg(Color::Reset).bg(Color::Reset));
}
