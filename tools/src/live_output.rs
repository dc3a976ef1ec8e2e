//! Output a tool reports while it runs (a command's stdout and stderr as they appear), so a
//! front end can show a long command's progress on its card instead of a silent spinner.
//! The final result still carries the whole (capped) output; this is only a preview.

use std::fmt;
use std::sync::Arc;

/// Where a running tool sends output as it appears. Cheap to clone; sending never blocks.
#[derive(Clone)]
pub struct LiveOutput(Arc<dyn Fn(&str) + Send + Sync>);

impl LiveOutput {
    /// A sink that hands every piece of text to `send`.
    pub fn new(send: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Self(Arc::new(send))
    }

    /// Reports `text`, the next piece of the tool's output.
    pub fn send(&self, text: &str) {
        if !text.is_empty() {
            (self.0)(text);
        }
    }
}

impl fmt::Debug for LiveOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LiveOutput")
    }
}

/// Turns a byte stream read in arbitrary chunks into text without splitting a UTF-8
/// character: the incomplete end of a chunk waits for the next one. Invalid bytes become
/// U+FFFD, as in the final output.
#[derive(Debug, Default)]
pub struct Utf8Chunks {
    carry: Vec<u8>,
}

/// The longest a UTF-8 character can be; a longer unfinished tail is invalid, not incomplete.
const MAX_CHAR_LEN: usize = 4;

impl Utf8Chunks {
    /// The text of `bytes` (after what was carried over), up to the last complete character.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.carry.extend_from_slice(bytes);
        let complete = match std::str::from_utf8(&self.carry) {
            Ok(_) => self.carry.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            // An invalid sequence in the middle: everything up to the incomplete tail goes
            // out lossily.
            Err(_) => complete_prefix(&self.carry),
        };
        let rest = self.carry.split_off(complete);
        let text = String::from_utf8_lossy(&self.carry).into_owned();
        self.carry = rest;
        text
    }
}

/// How many leading bytes end on a character boundary (or an invalid byte), leaving out an
/// unfinished character at the end.
fn complete_prefix(bytes: &[u8]) -> usize {
    let tail_start = bytes.len().saturating_sub(MAX_CHAR_LEN - 1);
    (tail_start..bytes.len())
        .find(|&i| {
            bytes[i] >= 0xC0
                && std::str::from_utf8(&bytes[i..]).is_err_and(|e| e.error_len().is_none())
        })
        .unwrap_or(bytes.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_split_across_chunks_arrives_whole() {
        let bytes = "héllo ✓".as_bytes();
        let mut chunks = Utf8Chunks::default();
        let mut text = String::new();
        for b in bytes {
            text.push_str(&chunks.push(std::slice::from_ref(b)));
        }
        assert_eq!(text, "héllo ✓");
    }

    #[test]
    fn invalid_bytes_become_replacement_characters_without_losing_the_rest() {
        let mut chunks = Utf8Chunks::default();
        let mut text = chunks.push(b"a\xffb\xe2\x9c");
        text.push_str(&chunks.push(b"\x93"));
        assert_eq!(text, "a\u{fffd}b✓");
    }

    #[test]
    fn empty_text_is_not_sent() {
        let sent = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let log = sent.clone();
        let sink = LiveOutput::new(move |t| log.lock().unwrap().push(t.to_owned()));
        sink.send("");
        sink.send("x");
        assert_eq!(*sent.lock().unwrap(), vec!["x".to_owned()]);
    }
}
