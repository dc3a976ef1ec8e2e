//! The one outgoing byte path of a connection: a bounded buffer of whole lines, written by a
//! dedicated thread in one `write` and one flush per wake-up.
//!
//! Before this, each frame cost three blocking-pool hops (tokio's stdout runs every `write` and
//! `flush` on another thread and the line, its newline and the flush were three of them), about
//! 45 µs a frame spent waking threads. Now a frame is serialized once into this buffer and the
//! writer takes whatever accumulated while it was writing the previous batch.
//!
//! Two kinds of lines arrive here: the crate's (responses, requests, which it hands to
//! [`LineSink`]) and the sessions' `session/update` frames, which skip the crate's three
//! actor hops and go straight in with [`Output::try_send`]. Session frames are bounded: when the
//! buffer holds [`MAX_LINES`] lines or [`MAX_BYTES`] bytes, `try_send` refuses and the session
//! waits for [`Output::room`], coalescing its text meanwhile (see [`crate::coalesce`]). The
//! crate's lines are never refused, so its ordering guarantees hold; they are few.

use std::io::Write;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll};

use serde::Serialize;
use tokio::sync::{Notify, oneshot};

use crate::direct_pipe::DirectPipe;

/// Session frames wait once this many lines are buffered and not yet written.
pub const MAX_LINES: usize = 256;
/// Session frames wait once this many bytes are buffered (a single larger frame still goes
/// out when the buffer is empty).
pub const MAX_BYTES: usize = 1 << 20;
/// A spare batch buffer larger than this is shrunk after its write, so one burst does not
/// keep its memory for the life of the connection.
const KEEP_CAPACITY: usize = 256 << 10;

/// A handle to the connection's output; cheap to clone.
#[derive(Clone)]
pub struct Output {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    /// The client's pipe, written straight when the writer is idle (see [`DirectPipe`]).
    direct: Option<DirectPipe>,
    /// Wakes the writer thread when lines arrive or the output closes.
    wake_writer: Condvar,
    /// Wakes sessions waiting for room after each written batch.
    room: Notify,
}

#[derive(Default)]
struct State {
    /// Whole lines, each ending in `\n`, not yet taken by the writer.
    bytes: Vec<u8>,
    /// Lines in `bytes` plus lines of the batch being written.
    lines: usize,
    /// Bytes in `bytes` plus bytes of the batch being written.
    queued_bytes: usize,
    /// No more lines will come; the writer exits once `bytes` is written.
    closed: bool,
    /// The writer failed (the client closed its end); every later send fails.
    failed: Option<std::io::ErrorKind>,
    /// The writer sleeps on the condvar: only then does a new line need a wake-up (a
    /// notification is a syscall, even with nobody waiting).
    writer_waiting: bool,
    /// Lines that went straight into the pipe, whole.
    #[cfg(test)]
    direct_lines: usize,
}

/// Why a frame was not buffered.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The buffer is at its bound; wait for [`Output::room`] and try again.
    #[error("the output buffer is full")]
    Full,
    /// The output is closed or its writer failed; nothing more can be sent.
    #[error("the output is closed: {0}")]
    Closed(std::io::Error),
}

impl Output {
    /// Starts the writer thread on `writer`; the [`LineSink`] is the crate's side of the same
    /// buffer, and closing it ends the thread once everything buffered is written.
    ///
    /// `direct` is the pipe behind `writer` opened again, to write lines straight into it
    /// while the writer thread is idle (`None`: every line goes through the thread).
    pub fn spawn(
        writer: Box<dyn Write + Send>,
        direct: Option<DirectPipe>,
    ) -> std::io::Result<(Self, LineSink)> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            direct,
            wake_writer: Condvar::new(),
            room: Notify::new(),
        });
        let (done_tx, done) = oneshot::channel();
        let thread_shared = shared.clone();
        std::thread::Builder::new()
            .name("corvid-acp-output".into())
            .spawn(move || {
                let result = write_batches(&thread_shared, writer);
                // Nobody waiting for the close is fine.
                let _ = done_tx.send(result);
            })?;
        let output = Self { shared };
        let sink = LineSink {
            output: output.clone(),
            done: Some(done),
        };
        Ok((output, sink))
    }

    /// Buffers one JSON-RPC notification, serialized once, if the buffer has room.
    pub fn try_send(&self, method: &str, params: &impl Serialize) -> Result<(), SendError> {
        let mut line = Vec::with_capacity(256);
        serde_json::to_writer(
            &mut line,
            &Notification {
                jsonrpc: "2.0",
                method,
                params,
            },
        )
        .map_err(|e| SendError::Closed(std::io::Error::other(e)))?;
        line.push(b'\n');
        let state = self.shared.lock();
        state.usable()?;
        let empty = state.lines == 0;
        if !empty && (state.lines >= MAX_LINES || state.queued_bytes >= MAX_BYTES) {
            return Err(SendError::Full);
        }
        self.shared.deliver(state, &[&line]);
        Ok(())
    }

    /// Buffers one notification, waiting for room first when the buffer is full.
    pub async fn send(&self, method: &str, params: &impl Serialize) -> Result<(), std::io::Error> {
        loop {
            match self.try_send(method, params) {
                Ok(()) => return Ok(()),
                Err(SendError::Full) => self.room().await,
                Err(SendError::Closed(e)) => return Err(e),
            }
        }
    }

    /// Waits until session frames may be buffered again (or the output failed, which the
    /// next send reports).
    pub async fn room(&self) {
        loop {
            let notified = self.shared.room.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.has_room() {
                return;
            }
            notified.await;
        }
    }

    /// Whether a session frame would be accepted now (or refused as closed).
    pub fn has_room(&self) -> bool {
        let state = self.shared.lock();
        state.failed.is_some()
            || state.closed
            || (state.lines < MAX_LINES && state.queued_bytes < MAX_BYTES)
    }

    /// Lines buffered or being written: the queue whose bound [`MAX_LINES`] is.
    #[cfg(test)]
    pub fn backlog(&self) -> usize {
        self.shared.lock().lines
    }

    /// Buffers a line of the crate's; never refused for room.
    fn push_line(&self, line: &str) -> std::io::Result<()> {
        let state = self.shared.lock();
        state.usable().map_err(|e| match e {
            SendError::Closed(e) => e,
            SendError::Full => std::io::ErrorKind::WouldBlock.into(),
        })?;
        self.shared.deliver(state, &[line.as_bytes(), b"\n"]);
        Ok(())
    }

    fn close(&self) {
        let mut state = self.shared.lock();
        state.closed = true;
        self.shared.wake_writer_if_waiting(state);
    }
}

#[derive(Serialize)]
struct Notification<'a, P> {
    jsonrpc: &'static str,
    method: &'a str,
    params: &'a P,
}

impl Shared {
    /// Sends one whole line given in parts: straight into the pipe if the writer is idle with
    /// nothing buffered (so nothing can overtake it) and the pipe takes it at once; otherwise,
    /// or for what the pipe did not take, through the buffer and the writer thread.
    fn deliver(&self, mut state: MutexGuard<'_, State>, parts: &[&[u8]]) {
        if let Some(pipe) = &self.direct
            && state.writer_waiting
            && state.bytes.is_empty()
        {
            // One write per line: a line in parts (the crate's, and its newline) is joined.
            let joined;
            let line: &[u8] = match parts {
                [whole] => whole,
                _ => {
                    joined = parts.concat();
                    &joined
                }
            };
            let written = pipe.write_now(line);
            if written == line.len() {
                #[cfg(test)]
                {
                    state.direct_lines += 1;
                }
                return;
            }
            state.append_line(&[&line[written..]]);
        } else {
            state.append_line(parts);
        }
        self.wake_writer_if_waiting(state);
    }

    fn wake_writer_if_waiting(&self, state: MutexGuard<'_, State>) {
        let waiting = state.writer_waiting;
        drop(state);
        if waiting {
            self.wake_writer.notify_one();
        }
    }

    /// Every critical section leaves the state consistent (appends and counters), so a
    /// poisoned lock is used as is.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl State {
    fn usable(&self) -> Result<(), SendError> {
        if let Some(kind) = self.failed {
            return Err(SendError::Closed(kind.into()));
        }
        if self.closed {
            return Err(SendError::Closed(std::io::ErrorKind::BrokenPipe.into()));
        }
        Ok(())
    }

    /// Appends one whole line given in parts, the last of which ends with `\n`.
    fn append_line(&mut self, parts: &[&[u8]]) {
        for part in parts {
            self.bytes.extend_from_slice(part);
            self.queued_bytes += part.len();
        }
        self.lines += 1;
    }
}

/// The writer thread: takes everything buffered, writes it with one `write_all` and one
/// flush, and repeats until the output is closed and drained or the write fails.
fn write_batches(shared: &Shared, mut writer: Box<dyn Write + Send>) -> std::io::Result<()> {
    let mut batch = Vec::new();
    loop {
        let (lines, bytes) = {
            let mut state = shared.lock();
            while state.bytes.is_empty() && !state.closed {
                state.writer_waiting = true;
                state = shared
                    .wake_writer
                    .wait(state)
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                state.writer_waiting = false;
            }
            if state.bytes.is_empty() {
                return Ok(());
            }
            std::mem::swap(&mut state.bytes, &mut batch);
            (state.lines, batch.len())
        };
        let written = writer.write_all(&batch).and_then(|()| writer.flush());
        batch.clear();
        if batch.capacity() > KEEP_CAPACITY {
            batch.shrink_to(KEEP_CAPACITY / 4);
        }
        let mut state = shared.lock();
        state.lines -= lines.min(state.lines);
        state.queued_bytes -= bytes.min(state.queued_bytes);
        // Lines appended while this batch was written stay counted; only this batch's go.
        if let Err(e) = &written {
            state.failed = Some(e.kind());
        }
        drop(state);
        shared.room.notify_waiters();
        written?;
    }
}

/// The crate's side of the output: a `Sink` of lines (without their newline). A line counts as
/// flushed once it is buffered, since the one writer keeps the order; closing waits until the
/// writer has written everything.
pub struct LineSink {
    output: Output,
    done: Option<oneshot::Receiver<std::io::Result<()>>>,
}

impl futures::Sink<String> for LineSink {
    type Error = std::io::Error;

    fn poll_ready(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn start_send(self: Pin<&mut Self>, line: String) -> Result<(), Self::Error> {
        self.output.push_line(&line)
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.output.close();
        let Some(done) = self.done.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        let result = match futures::ready!(Pin::new(done).poll(cx)) {
            Ok(result) => result,
            // The thread ended without reporting: it panicked.
            Err(_) => Err(std::io::Error::other("the output writer stopped")),
        };
        self.done = None;
        Poll::Ready(result)
    }
}

impl Drop for LineSink {
    fn drop(&mut self) {
        self.output.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use std::sync::mpsc;

    /// A writer whose every `write` waits for a permit, so the test decides when the client
    /// "reads".
    struct Gated {
        permits: mpsc::Receiver<()>,
        written: Arc<Mutex<Vec<u8>>>,
    }

    impl Write for Gated {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.permits
                .recv()
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
            self.written.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_reader_that_does_not_read_stops_session_frames_at_the_bound() {
        let (permit, permits) = mpsc::channel();
        let written = Arc::new(Mutex::new(Vec::new()));
        let (output, mut sink) = Output::spawn(
            Box::new(Gated {
                permits,
                written: written.clone(),
            }),
            None,
        )
        .unwrap();
        let mut accepted = 0;
        for i in 0..MAX_LINES * 4 {
            match output.try_send("session/update", &serde_json::json!({"n": i})) {
                Ok(()) => accepted += 1,
                Err(SendError::Full) => {}
                Err(e) => panic!("{e}"),
            }
            assert!(output.backlog() <= MAX_LINES, "{}", output.backlog());
        }
        assert_eq!(accepted, MAX_LINES);
        assert!(!output.has_room());
        // The reader reads: everything buffered is written in a batch or two and room returns.
        for _ in 0..4 {
            permit.send(()).unwrap();
        }
        futures::SinkExt::close(&mut sink).await.unwrap();
        let text = String::from_utf8(written.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), MAX_LINES);
        assert_eq!(
            text.lines().next().unwrap(),
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"n":0}}"#
        );
    }

    #[tokio::test]
    async fn the_crates_lines_and_session_frames_keep_their_order_and_close_drains() {
        use futures::SinkExt;
        let written = Arc::new(Mutex::new(Vec::new()));
        struct Shared(Arc<Mutex<Vec<u8>>>);
        impl Write for Shared {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let (output, mut sink) = Output::spawn(Box::new(Shared(written.clone())), None).unwrap();
        let mut expected = VecDeque::new();
        for i in 0..100 {
            output.room().await;
            output.try_send("n", &i).unwrap();
            expected.push_back(format!(r#"{{"jsonrpc":"2.0","method":"n","params":{i}}}"#));
            sink.send(format!("crate {i}")).await.unwrap();
            expected.push_back(format!("crate {i}"));
        }
        sink.close().await.unwrap();
        let text = String::from_utf8(written.lock().unwrap().clone()).unwrap();
        assert_eq!(
            text.lines().map(str::to_owned).collect::<VecDeque<_>>(),
            expected
        );
        assert!(matches!(
            output.try_send("n", &0),
            Err(SendError::Closed(_))
        ));
    }

    /// Lines go straight into an idle pipe and through the writer thread once the pipe is full
    /// or the writer busy, and the reader gets every line whole and in order either way.
    #[tokio::test]
    async fn lines_written_straight_into_the_pipe_and_by_the_writer_keep_their_order() {
        use std::io::{BufRead, BufReader};
        use std::os::fd::AsRawFd;

        let (reader, writer) = std::io::pipe().unwrap();
        let path = format!("/proc/self/fd/{}", writer.as_raw_fd());
        let direct = DirectPipe::reopen(std::path::Path::new(&path)).expect("a pipe");
        let (output, mut sink) = Output::spawn(Box::new(writer), Some(direct)).unwrap();
        let (lines_tx, lines) = mpsc::channel();
        let (go_on, go) = mpsc::channel();
        let read = std::thread::spawn(move || {
            for (n, line) in BufReader::new(reader).lines().enumerate() {
                // The reader pauses after the first 21 lines until told to go on.
                if n == 21 {
                    go.recv().unwrap();
                }
                lines_tx.send(line.unwrap()).unwrap();
            }
        });

        // One by one into an idle pipe, read at once: all straight, once the writer is idle.
        while !output.shared.lock().writer_waiting {
            tokio::task::yield_now().await;
        }
        for i in 0..20 {
            output.try_send("n", &i).unwrap();
            let line = lines.recv().unwrap();
            assert_eq!(
                line,
                format!(r#"{{"jsonrpc":"2.0","method":"n","params":{i}}}"#)
            );
        }
        // The crate's lines (given with their newline apart) go straight too.
        futures::SinkExt::send(&mut sink, "crate line".to_owned())
            .await
            .unwrap();
        assert_eq!(lines.recv().unwrap(), "crate line");
        assert_eq!(output.shared.lock().direct_lines, 21);
        // While the reader pauses, a burst larger than the pipe (64 KiB) and smaller than the
        // output's bound: what the pipe does not take waits for the writer thread.
        let big = "x".repeat(1000);
        for _ in 0..100 {
            output.try_send("big", &big).unwrap();
        }
        go_on.send(()).unwrap();
        futures::SinkExt::close(&mut sink).await.unwrap();
        let direct_lines = output.shared.lock().direct_lines;
        // The second open of the pipe closes with the output; then the reader sees the end.
        drop((output, sink));
        read.join().unwrap();
        let rest: Vec<String> = lines.try_iter().collect();
        let expected = format!(r#"{{"jsonrpc":"2.0","method":"big","params":"{big}"}}"#);
        assert_eq!(rest.len(), 100);
        assert!(rest.iter().all(|line| *line == expected));
        assert!(direct_lines < 21 + 70, "{direct_lines}");
    }
}
