//! A running call's live output as `ToolOutputDelta` events, at most one every
//! [`INTERVAL`]: a command that prints megabytes must not flood the front ends with events,
//! and what a burst leaves over still arrives shortly after, not at the next burst.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use corvid_protocol::CoreEvent;
use corvid_tools::LiveOutput;
use tokio::time::Instant;

use super::session::Emitter;

/// The shortest time between two deltas of one call.
const INTERVAL: Duration = Duration::from_millis(80);
/// The most output waiting for the next delta; only the end is kept (front ends show the
/// tail, and the finished card has the whole result).
const MAX_PENDING: usize = 16 * 1024;

/// The feed of one call. Closing it (before the call's `ToolFinished`) drops what is still
/// waiting, so no delta ever follows the finished card.
#[derive(Clone)]
pub(super) struct LiveFeed {
    state: Arc<Mutex<FeedState>>,
}

struct FeedState {
    events: Emitter,
    call_id: String,
    pending: String,
    last_sent: Option<Instant>,
    flush_scheduled: bool,
    closed: bool,
}

impl LiveFeed {
    pub(super) fn new(events: Emitter, call_id: &str) -> Self {
        Self {
            state: Arc::new(Mutex::new(FeedState {
                events,
                call_id: call_id.to_owned(),
                pending: String::new(),
                last_sent: None,
                flush_scheduled: false,
                closed: false,
            })),
        }
    }

    /// The sink the tool writes to.
    pub(super) fn sink(&self) -> LiveOutput {
        let feed = self.clone();
        LiveOutput::new(move |text| feed.push(text))
    }

    /// Ends the feed: nothing more is sent.
    pub(super) fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        state.pending = String::new();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FeedState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, text: &str) {
        let mut state = self.lock();
        if state.closed {
            return;
        }
        state.pending.push_str(text);
        keep_tail(&mut state.pending, MAX_PENDING);
        let now = Instant::now();
        let wait = state
            .last_sent
            .map_or(Duration::ZERO, |at| INTERVAL.saturating_sub(now - at));
        if wait.is_zero() {
            state.send(now);
        } else if !state.flush_scheduled {
            state.flush_scheduled = true;
            let feed = self.clone();
            tokio::spawn(async move {
                tokio::time::sleep(wait).await;
                let mut state = feed.lock();
                state.flush_scheduled = false;
                if !state.closed {
                    state.send(Instant::now());
                }
            });
        }
    }
}

impl FeedState {
    /// Sends what is waiting (sent under the lock, so deltas keep their order).
    fn send(&mut self, now: Instant) {
        if self.pending.is_empty() {
            return;
        }
        self.last_sent = Some(now);
        let text = std::mem::take(&mut self.pending);
        self.events.emit(CoreEvent::ToolOutputDelta {
            call_id: self.call_id.clone(),
            text,
        });
    }
}

/// Cuts `text` to at most `max` bytes, keeping the end and whole characters.
fn keep_tail(text: &mut String, max: usize) {
    if text.len() <= max {
        return;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text.drain(..start);
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::mpsc;

    fn feed() -> (LiveFeed, mpsc::UnboundedReceiver<CoreEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            LiveFeed::new(Emitter::new(tx, None, Default::default()), "call-1"),
            rx,
        )
    }

    fn deltas(rx: &mut mpsc::UnboundedReceiver<CoreEvent>) -> Vec<String> {
        std::iter::from_fn(|| rx.try_recv().ok())
            .map(|ev| match ev {
                CoreEvent::ToolOutputDelta { call_id, text } => {
                    assert_eq!(call_id, "call-1");
                    text
                }
                other => panic!("unexpected event {other:?}"),
            })
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_becomes_one_delta_now_and_one_for_the_rest_shortly_after() {
        let (feed, mut rx) = feed();
        let sink = feed.sink();
        for i in 0..1000 {
            sink.send(&format!("{i}\n"));
        }
        assert_eq!(deltas(&mut rx), vec!["0\n".to_owned()]);
        tokio::time::sleep(INTERVAL + Duration::from_millis(1)).await;
        let rest = deltas(&mut rx);
        assert_eq!(rest.len(), 1);
        assert!(rest[0].starts_with("1\n2\n") && rest[0].ends_with("998\n999\n"));
    }

    #[tokio::test(start_paused = true)]
    async fn what_waits_is_kept_to_its_end_within_the_bound() {
        let (feed, mut rx) = feed();
        let sink = feed.sink();
        sink.send("first");
        sink.send(&"y".repeat(3 * MAX_PENDING));
        sink.send("last");
        tokio::time::sleep(INTERVAL + Duration::from_millis(1)).await;
        let sent = deltas(&mut rx);
        assert_eq!(sent.len(), 2);
        assert_eq!(sent[1].len(), MAX_PENDING);
        assert!(sent[1].ends_with("ylast"));
    }

    #[tokio::test(start_paused = true)]
    async fn nothing_is_sent_after_the_feed_closes() {
        let (feed, mut rx) = feed();
        let sink = feed.sink();
        sink.send("a");
        sink.send("b");
        feed.close();
        sink.send("c");
        tokio::time::sleep(INTERVAL * 2).await;
        assert_eq!(deltas(&mut rx), vec!["a".to_owned()]);
    }

    #[test]
    fn keep_tail_keeps_whole_characters_from_the_end() {
        let mut text = "aé✓b".to_owned();
        keep_tail(&mut text, 4);
        assert_eq!(text, "✓b");
        let mut short = "abc".to_owned();
        keep_tail(&mut short, 4);
        assert_eq!(short, "abc");
    }
}
