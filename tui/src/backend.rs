//! A ratatui backend that keeps the terminal's scrollback intact (see the scrollback notes, P1/P2/P5).
//!
//! Stock `insert_before` scrolls a partial region with `CSI S`; xterm.js (VS Code) and Windows
//! Terminal delete rows scrolled out of a partial region, and a 1-row region is invalid. This
//! wrapper turns every top-anchored region scroll into full-screen line feeds, which every
//! terminal moves into its scrollback, and answers cursor queries from a cache because a real
//! query freezes while an input reader holds crossterm's input lock (see `crate::input`).

use std::io::{self, Write};
use std::ops::Range;

use ratatui::backend::{Backend, ClearType, CrosstermBackend, WindowSize};
use ratatui::buffer::Cell;
use ratatui::layout::{Position, Size};

/// How to learn the size and cursor of the terminal the UI writes to.
///
/// Production uses [`TtyProbe`]; tests use an in-memory terminal emulator.
pub trait Probe {
    /// The terminal's size in cells.
    fn size(&self) -> io::Result<Size>;
    /// Asks the terminal where its cursor is (a DSR round trip on a real tty).
    fn query_cursor(&mut self) -> io::Result<Position>;
}

/// The process's controlling terminal.
#[derive(Debug, Default, Clone, Copy)]
pub struct TtyProbe;

impl Probe for TtyProbe {
    fn size(&self) -> io::Result<Size> {
        let (width, height) = crossterm::terminal::size()?;
        Ok(Size { width, height })
    }
    fn query_cursor(&mut self) -> io::Result<Position> {
        let (x, y) = crossterm::cursor::position()?;
        Ok(Position { x, y })
    }
}

/// The scrollback-safe backend: crossterm output, with region scrolls and cursor queries fixed.
pub struct SafeScroll<W: Write, P: Probe> {
    inner: CrosstermBackend<W>,
    probe: P,
    cursor: Option<Position>,
}

impl<W: Write, P: Probe> SafeScroll<W, P> {
    /// Wraps `writer`. `cursor` seeds the cache (None: the first query asks the terminal).
    pub fn new(writer: W, probe: P, cursor: Option<Position>) -> Self {
        Self {
            inner: CrosstermBackend::new(writer),
            probe,
            cursor,
        }
    }

    /// The cached cursor position, for handing over to a replacement backend.
    pub fn cached_cursor(&self) -> Option<Position> {
        self.cursor
    }

    fn clamp(&self, p: Position) -> io::Result<Position> {
        let size = self.probe.size()?;
        Ok(Position {
            x: p.x.min(size.width.saturating_sub(1)),
            y: p.y.min(size.height.saturating_sub(1)),
        })
    }
}

impl<W: Write, P: Probe> Write for SafeScroll<W, P> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Write::flush(&mut self.inner)
    }
}

impl<W: Write, P: Probe> Backend for SafeScroll<W, P> {
    type Error = io::Error;

    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        self.inner.draw(content)
    }

    fn append_lines(&mut self, n: u16) -> io::Result<()> {
        self.inner.append_lines(n)?;
        if let Some(c) = self.cursor {
            let moved = Position {
                x: c.x,
                y: c.y.saturating_add(n),
            };
            self.cursor = Some(self.clamp(moved)?);
        }
        Ok(())
    }

    fn hide_cursor(&mut self) -> io::Result<()> {
        self.inner.hide_cursor()
    }

    fn show_cursor(&mut self) -> io::Result<()> {
        self.inner.show_cursor()
    }

    fn get_cursor_position(&mut self) -> io::Result<Position> {
        // Only a backend without a known position asks (at start, before input is read):
        // while an input reader runs, the answer would not come (see `crate::input`).
        if let Some(c) = self.cursor {
            return self.clamp(c);
        }
        // A terminal that does not answer must not end the session: use what we know.
        let c = match self.probe.query_cursor() {
            Ok(c) => c,
            Err(e) => {
                let rows = self.probe.size()?.height;
                let fallback = self
                    .cursor
                    .unwrap_or(Position::new(0, rows.saturating_sub(1)));
                tracing::warn!(error = %e, ?fallback, "cursor query failed; using the last known position");
                self.clamp(fallback)?
            }
        };
        self.cursor = Some(c);
        Ok(c)
    }

    fn set_cursor_position<Q: Into<Position>>(&mut self, position: Q) -> io::Result<()> {
        let p = position.into();
        self.cursor = Some(p);
        self.inner.set_cursor_position(p)
    }

    fn clear(&mut self) -> io::Result<()> {
        self.clear_region(ClearType::All)
    }

    fn clear_region(&mut self, clear_type: ClearType) -> io::Result<()> {
        // tmux moves the whole screen into its history on "erase below" issued from the
        // top-left corner: a stale copy of the live area in scrollback. Erase row by row
        // instead; erasing lines never touches history.
        let rows = self.probe.size()?.height;
        let c = match (clear_type, self.cursor) {
            (ClearType::AfterCursor, Some(c)) => c,
            // "Erase screen" (`CSI 2J`) pushes the screen into tmux's history: a stale copy of
            // the live area. Erase the visible rows one by one instead.
            (ClearType::All, _) => Position::ORIGIN,
            _ => return self.inner.clear_region(clear_type),
        };
        write!(self.inner, "\x1b[{};{}H", c.y + 1, c.x + 1)?;
        self.inner.write_all(b"\x1b[K")?;
        for y in c.y.saturating_add(1)..rows {
            write!(self.inner, "\x1b[{};1H\x1b[2K", y + 1)?;
        }
        write!(self.inner, "\x1b[{};{}H", c.y + 1, c.x + 1)?;
        self.cursor = Some(c);
        Backend::flush(&mut self.inner)
    }

    fn size(&self) -> io::Result<Size> {
        self.probe.size()
    }

    fn window_size(&mut self) -> io::Result<WindowSize> {
        let columns_rows = self.probe.size()?;
        Ok(WindowSize {
            columns_rows,
            pixels: Size::default(),
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        Backend::flush(&mut self.inner)
    }

    fn scroll_region_up(&mut self, region: Range<u16>, n: u16) -> io::Result<()> {
        if region.start != 0 || n == 0 {
            return self.inner.scroll_region_up(region, n);
        }
        let rows = self.probe.size()?.height;
        let k = region.end.min(rows);
        let n = n.min(k);
        // Full-screen margins, bottom row, then real line feeds: every terminal keeps those.
        write!(self.inner, "\x1b[r\x1b[{rows};1H")?;
        for _ in 0..n {
            self.inner.write_all(b"\n")?;
        }
        if k < rows {
            // The rows below the region (the live area) moved up too: scroll them back down.
            write!(self.inner, "\x1b[{};{}r\x1b[{}T\x1b[r", k - n + 1, rows, n)?;
        }
        Backend::flush(&mut self.inner)
    }

    fn scroll_region_down(&mut self, region: Range<u16>, n: u16) -> io::Result<()> {
        self.inner.scroll_region_down(region, n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    struct Fixed;

    impl Probe for Fixed {
        fn size(&self) -> io::Result<Size> {
            Ok(Size {
                width: 10,
                height: 4,
            })
        }
        fn query_cursor(&mut self) -> io::Result<Position> {
            Ok(Position::new(0, 3))
        }
    }

    #[derive(Clone, Default)]
    struct Shared(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn written(f: impl FnOnce(&mut SafeScroll<Shared, Fixed>)) -> String {
        let out = Shared::default();
        let mut b = SafeScroll::new(out.clone(), Fixed, Some(Position::ORIGIN));
        f(&mut b);
        String::from_utf8_lossy(&out.0.borrow()).into_owned()
    }

    #[test]
    fn erasing_below_the_top_left_corner_erases_lines_so_tmux_keeps_no_copy() {
        let out = written(|b| {
            b.set_cursor_position(Position::ORIGIN).unwrap();
            b.clear_region(ClearType::AfterCursor).unwrap();
        });
        assert!(!out.contains("\x1b[J"), "{out:?}");
        assert!(out.ends_with("\x1b[K\x1b[2;1H\x1b[2K\x1b[3;1H\x1b[2K\x1b[4;1H\x1b[2K\x1b[1;1H"));
    }

    #[test]
    fn a_top_anchored_region_scroll_becomes_full_screen_line_feeds() {
        let out = written(|b| b.scroll_region_up(0..2, 1).unwrap());
        assert_eq!(out, "\x1b[r\x1b[4;1H\n\x1b[2;4r\x1b[1T\x1b[r");
    }

    #[test]
    fn cursor_queries_are_answered_from_the_cache_once_a_position_is_known() {
        let mut b = SafeScroll::new(Shared::default(), Fixed, Some(Position::new(2, 1)));
        assert_eq!(b.get_cursor_position().unwrap(), Position::new(2, 1));
        b.append_lines(9).unwrap();
        assert_eq!(b.get_cursor_position().unwrap(), Position::new(2, 3));
        let mut fresh = SafeScroll::new(Shared::default(), Fixed, None);
        assert_eq!(fresh.get_cursor_position().unwrap(), Position::new(0, 3));
    }
}
