//! A byte buffer that keeps the start and the end of a long output and counts the rest.

use std::collections::VecDeque;

/// Bytes kept from the start of a stream.
const HEAD_BYTES: usize = 16 * 1024;
/// Bytes kept from the end of a stream (errors and summaries tend to be at the end).
const TAIL_BYTES: usize = 16 * 1024;

/// Output captured within a fixed budget.
#[derive(Debug, Default)]
pub struct CappedBuffer {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    omitted: usize,
}

impl CappedBuffer {
    /// Appends bytes, dropping the middle once the budget is full.
    pub fn push(&mut self, mut bytes: &[u8]) {
        let room = HEAD_BYTES.saturating_sub(self.head.len());
        let into_head = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..into_head]);
        bytes = &bytes[into_head..];
        self.tail.extend(bytes);
        let excess = self.tail.len().saturating_sub(TAIL_BYTES);
        if excess > 0 {
            self.tail.drain(..excess);
            self.omitted += excess;
        }
    }

    /// Whether bytes were dropped.
    pub fn truncated(&self) -> bool {
        self.omitted > 0
    }

    /// The kept text, with a note where bytes were dropped.
    pub fn render(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if self.omitted > 0 {
            text.push_str(&format!(
                "\n[... {} of output omitted ...]\n",
                crate::common::count_of(self.omitted, "byte", "bytes")
            ));
        }
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        text.push_str(&String::from_utf8_lossy(&tail));
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn short_output_is_kept_whole() {
        let mut buffer = CappedBuffer::default();
        buffer.push(b"hello ");
        buffer.push(b"world");
        assert_eq!(buffer.render(), "hello world");
        assert!(!buffer.truncated());
    }

    #[test]
    fn long_output_keeps_head_and_tail_and_counts_the_middle() {
        let mut buffer = CappedBuffer::default();
        buffer.push(&vec![b'a'; HEAD_BYTES]);
        buffer.push(&vec![b'b'; 1000]);
        buffer.push(&vec![b'c'; TAIL_BYTES]);
        assert_eq!(
            buffer.render(),
            format!(
                "{}\n[... 1000 bytes of output omitted ...]\n{}",
                "a".repeat(HEAD_BYTES),
                "c".repeat(TAIL_BYTES)
            )
        );
        assert!(buffer.truncated());
    }
}
