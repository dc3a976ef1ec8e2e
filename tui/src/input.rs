//! Terminal input on a thread of its own, which is also the only place the terminal is asked
//! where its cursor is.
//!
//! crossterm's `EventStream` holds the input lock while it waits for a key, so a cursor query
//! made beside it times out after 2 s ("The cursor position could not be read within a normal
//! duration", crossterm #963), and a query that gave up leaves its late answer queued for the
//! next one. Here one thread reads events and asks for the cursor in turn, so neither waits
//! on the other.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use crossterm::event::{self, Event};
use futures::Stream;
use ratatui::layout::{Position, Size};
use tokio::sync::{mpsc, oneshot};

/// How long the reader waits for input before it looks for a cursor query.
const POLL: Duration = Duration::from_millis(40);
/// How often a paused reader looks whether it may read again.
const PAUSED_CHECK: Duration = Duration::from_millis(20);
/// The pause between two cursor answers that must agree.
const CONFIRM: Duration = Duration::from_millis(30);

/// The terminal's size and cursor, as it answered together.
pub type CursorAnswer = Option<(Size, Position)>;

/// The events the reading thread sends; ends when the terminal's input does.
pub struct InputEvents(mpsc::UnboundedReceiver<io::Result<Event>>);

impl Stream for InputEvents {
    type Item = io::Result<Event>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx)
    }
}

/// Asks the reading thread for the terminal's cursor, or stops it reading for a while.
pub struct CursorQueries {
    queries: std_mpsc::Sender<oneshot::Sender<CursorAnswer>>,
    gate: Arc<Gate>,
}

/// Held by the reading thread while it reads; `paused` keeps it from taking it again.
#[derive(Default)]
struct Gate {
    reading: Mutex<()>,
    paused: AtomicBool,
}

/// While alive, the reading thread does not touch the terminal.
pub struct Paused<'a> {
    gate: &'a Gate,
    _reading: MutexGuard<'a, ()>,
}

impl Drop for Paused<'_> {
    fn drop(&mut self) {
        self.gate.paused.store(false, Ordering::SeqCst);
    }
}

impl CursorQueries {
    /// Where the terminal's cursor is now, with the size it answered for; `None` when the
    /// terminal does not answer (the screen then works the position out itself).
    pub async fn cursor(&self) -> CursorAnswer {
        let (tx, rx) = oneshot::channel();
        self.queries.send(tx).ok()?;
        rx.await.ok().flatten()
    }

    /// Stops reading the terminal until the guard is dropped (another program, such as the
    /// user's editor, reads it meanwhile). Waits for the read in progress (at most [`POLL`]).
    pub fn pause(&self) -> Paused<'_> {
        self.gate.paused.store(true, Ordering::SeqCst);
        let reading = self
            .gate
            .reading
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Paused {
            gate: &self.gate,
            _reading: reading,
        }
    }
}

/// Starts reading the terminal (after raw mode is on and the viewport is placed).
pub fn spawn() -> (InputEvents, CursorQueries) {
    let (events_tx, events) = mpsc::unbounded_channel();
    let (queries, queries_rx) = std_mpsc::channel::<oneshot::Sender<CursorAnswer>>();
    let gate = Arc::new(Gate::default());
    let reader_gate = gate.clone();
    std::thread::spawn(move || {
        loop {
            if reader_gate.paused.load(Ordering::SeqCst) {
                if events_tx.is_closed() {
                    break;
                }
                std::thread::sleep(PAUSED_CHECK);
                continue;
            }
            let _reading = reader_gate
                .reading
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            while let Ok(reply) = queries_rx.try_recv() {
                let _ = reply.send(ask_cursor());
            }
            let ev = match event::poll(POLL) {
                Ok(true) => event::read(),
                Ok(false) if events_tx.is_closed() => break,
                Ok(false) => continue,
                Err(e) => Err(e),
            };
            let failed = ev.is_err();
            if events_tx.send(ev).is_err() || failed {
                break;
            }
        }
    });
    (InputEvents(events), CursorQueries { queries, gate })
}

/// Asks the terminal for its cursor until two answers a moment apart agree, with the size
/// unchanged around each: tmux finishes a resize in steps, and an answer given halfway would
/// put the live area over rows of history.
fn ask_cursor() -> CursorAnswer {
    let mut last = None;
    for _ in 0..6 {
        let answer = ask_once()?;
        if last == Some(answer) {
            return last;
        }
        last = Some(answer);
        std::thread::sleep(CONFIRM);
    }
    last
}

/// One cursor answer with the size it was given for; `None` when the terminal does not answer.
fn ask_once() -> Option<(Size, Position)> {
    loop {
        let before = crossterm::terminal::size();
        let cursor = crossterm::cursor::position();
        let after = crossterm::terminal::size();
        match (before, cursor, after) {
            (Ok(before), Ok((x, y)), Ok(after)) if before == after => {
                return Some((Size::new(after.0, after.1), Position { x, y }));
            }
            (_, Err(e), _) => {
                tracing::warn!(error = %e, "the terminal did not say where its cursor is");
                return None;
            }
            (Err(_), _, _) | (_, _, Err(_)) => return None,
            // Resized while answering: ask again.
            _ => {}
        }
    }
}
