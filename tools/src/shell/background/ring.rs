//! The unread output of a background process, bounded: when more arrives than fits, the
//! oldest unread text is dropped and counted, so a chatty process costs a fixed amount of
//! memory however long it runs and however rarely it is read.

use std::collections::VecDeque;

/// The most unread output kept per background process.
pub const RING_BYTES: usize = 1024 * 1024;

/// Text not read yet, and how much older text was dropped since the last read.
#[derive(Debug)]
pub(super) struct Ring {
    text: VecDeque<u8>,
    capacity: usize,
    dropped: u64,
}

/// What one read returns.
#[derive(Debug, PartialEq)]
pub(super) struct Unread {
    pub text: String,
    /// Bytes dropped before `text` because the ring was full.
    pub dropped: u64,
}

impl Ring {
    pub(super) fn new(capacity: usize) -> Self {
        Self {
            text: VecDeque::new(),
            capacity,
            dropped: 0,
        }
    }

    /// Appends text, dropping the oldest unread text (whole characters) beyond the capacity.
    pub(super) fn push(&mut self, text: &str) {
        self.text.extend(text.as_bytes());
        let mut excess = self.text.len().saturating_sub(self.capacity);
        // Never leave half a character at the front.
        while self
            .text
            .get(excess)
            .is_some_and(|b| b & 0b1100_0000 == 0b1000_0000)
        {
            excess += 1;
        }
        if excess > 0 {
            self.text.drain(..excess);
            self.dropped += excess as u64;
        }
    }

    /// Everything unread, which is then forgotten.
    pub(super) fn take(&mut self) -> Unread {
        let bytes: Vec<u8> = self.text.drain(..).collect();
        Unread {
            // The ring only ever holds whole characters of valid text.
            text: String::from_utf8_lossy(&bytes).into_owned(),
            dropped: std::mem::take(&mut self.dropped),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_read_returns_what_arrived_since_the_last_read() {
        let mut ring = Ring::new(16);
        ring.push("one\n");
        assert_eq!(
            ring.take(),
            Unread {
                text: "one\n".into(),
                dropped: 0
            }
        );
        ring.push("two\n");
        assert_eq!(ring.take().text, "two\n");
        assert_eq!(ring.take().text, "");
    }

    #[test]
    fn overflow_drops_the_oldest_text_and_counts_it() {
        let mut ring = Ring::new(8);
        ring.push("abcdef");
        ring.push("ghijkl");
        assert_eq!(
            ring.take(),
            Unread {
                text: "efghijkl".into(),
                dropped: 4
            }
        );
    }

    #[test]
    fn overflow_never_splits_a_character() {
        let mut ring = Ring::new(4);
        ring.push("aéé");
        // "aéé" is 5 bytes; dropping "a" leaves 4, which fit.
        assert_eq!(ring.take().text, "éé");
        ring.push("éé");
        ring.push("x");
        // 5 bytes: dropping one byte would split "é", so both of its bytes go.
        assert_eq!(
            ring.take(),
            Unread {
                text: "éx".into(),
                dropped: 2
            }
        );
    }
}
