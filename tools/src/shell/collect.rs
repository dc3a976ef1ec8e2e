//! Reading a command's stdout and stderr: into a bounded buffer while it runs in the
//! foreground (shown live as it is read), or into a background process's ring once it moved
//! there.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};

use super::background::Entry;
use crate::capped::CappedBuffer;
use crate::live_output::{LiveOutput, Utf8Chunks};

/// How long output is still collected after the shell exits, for background processes
/// that keep the pipes open.
pub(super) const DRAIN: Duration = Duration::from_millis(300);

/// Where a pipe's output goes: the foreground buffer, or a background process's ring.
#[derive(Default)]
struct Sink {
    buffer: CappedBuffer,
    background: Option<Arc<Entry>>,
}

/// A pipe being read in the background.
pub(super) struct Collector {
    sink: Arc<Mutex<Sink>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

/// Starts reading `pipe`: into the foreground buffer (and `live`) until
/// [`Collector::move_to`] sends the rest to a background process.
pub(super) fn collect(
    pipe: Option<impl AsyncRead + Unpin + Send + 'static>,
    live: Option<LiveOutput>,
) -> Collector {
    let sink = Arc::new(Mutex::new(Sink::default()));
    let task = pipe.map(|mut pipe| {
        let sink = sink.clone();
        tokio::spawn(async move {
            let mut chunk = vec![0u8; 8192];
            let mut text = Utf8Chunks::default();
            while let Ok(n) = pipe.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                let piece = text.push(&chunk[..n]);
                let mut sink = sink.lock().unwrap_or_else(PoisonError::into_inner);
                match &sink.background {
                    Some(entry) => entry.push(&piece),
                    None => {
                        sink.buffer.push(&chunk[..n]);
                        if let Some(live) = &live {
                            live.send(&piece);
                        }
                    }
                }
            }
        })
    });
    Collector { sink, task }
}

impl Collector {
    /// What was read, waiting briefly for the pipe to close.
    pub(super) async fn finish(self) -> Captured {
        if let Some(mut task) = self.task
            && tokio::time::timeout(DRAIN, &mut task).await.is_err()
        {
            task.abort();
        }
        let sink = self.sink.lock().unwrap_or_else(PoisonError::into_inner);
        Captured {
            text: sink.buffer.render(),
            truncated: sink.buffer.truncated(),
        }
    }

    /// Sends all later output to `entry` and returns what was read so far, and the reading
    /// task (it reads until the pipe closes).
    pub(super) fn move_to(
        self,
        entry: Arc<Entry>,
    ) -> (Captured, Option<tokio::task::JoinHandle<()>>) {
        let mut sink = self.sink.lock().unwrap_or_else(PoisonError::into_inner);
        sink.background = Some(entry);
        let so_far = Captured {
            text: sink.buffer.render(),
            truncated: sink.buffer.truncated(),
        };
        (so_far, self.task)
    }
}

/// A foreground command's output of one stream.
pub(super) struct Captured {
    pub text: String,
    pub truncated: bool,
}
