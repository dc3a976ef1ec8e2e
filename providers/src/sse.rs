//! A push-based, I/O-free Server-Sent Events decoder.
//!
//! Bytes may be split anywhere (inside a line, a `\r\n` pair or a multi-byte UTF-8 character):
//! lines are assembled as raw bytes and only decoded once a whole event is dispatched. Complete
//! lines inside one pushed chunk are read in place, so the common case copies each byte once.

use std::borrow::Cow;

/// One dispatched SSE event that carried at least one `data:` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// 0-based count of data-carrying events dispatched before this one (the `at` of SPEC §1.3).
    pub index: usize,
    /// The `event:` field, empty when absent.
    pub event: &'a str,
    /// The `data:` lines joined with `\n`.
    pub data: &'a str,
}

/// How the body ended, as seen by the framing layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyEnd {
    /// The body ended on an event boundary.
    Clean,
    /// The body ended inside an event that was never terminated by a blank line; that event
    /// was discarded.
    MidEvent,
}

/// Decodes an SSE byte stream into events, one pushed chunk at a time.
///
/// A line, or an event's joined data, longer than the cap is not buffered: the decoder stops
/// and reports [`SseDecoder::overflowed`], so memory stays bounded whatever the server sends.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// The unfinished line carried over from the previous chunk.
    partial: Vec<u8>,
    /// `data:` lines of the event being assembled.
    data: Vec<u8>,
    has_data: bool,
    event: Vec<u8>,
    /// The previous chunk ended with `\r`; a leading `\n` of the next one belongs to it.
    after_cr: bool,
    /// No line has been completed yet (a byte-order mark is only allowed there).
    at_start: bool,
    dispatched: usize,
    max_line: usize,
    overflowed: bool,
}

impl SseDecoder {
    /// A decoder at the start of a body, with the default line cap.
    pub fn new() -> Self {
        Self::with_max_line(crate::limits::MAX_LINE_BYTES)
    }

    /// A decoder that gives up on lines (and events) longer than `max_line` bytes.
    pub fn with_max_line(max_line: usize) -> Self {
        Self {
            at_start: true,
            max_line,
            ..Self::default()
        }
    }

    /// Whether a line or event went over the cap; nothing more is decoded after that.
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// How many data-carrying events were dispatched so far.
    pub fn data_events(&self) -> usize {
        self.dispatched
    }

    /// Feeds the next bytes of the body; `on_event` runs for every event completed by them.
    pub fn push(&mut self, mut bytes: &[u8], mut on_event: impl FnMut(SseEvent<'_>)) {
        if self.overflowed {
            return;
        }
        if self.after_cr {
            self.after_cr = false;
            if let [b'\n', rest @ ..] = bytes {
                bytes = rest;
            }
        }
        while let Some(pos) = find_line_end(bytes) {
            let (line, rest) = bytes.split_at(pos);
            if self.partial.len() + line.len() > self.max_line {
                return self.overflow();
            }
            let ending = rest[0];
            bytes = &rest[1..];
            if ending == b'\r' {
                match bytes {
                    [b'\n', tail @ ..] => bytes = tail,
                    [] => self.after_cr = true,
                    _ => {}
                }
            }
            if self.partial.is_empty() {
                self.line(line, &mut on_event);
            } else {
                let mut whole = std::mem::take(&mut self.partial);
                whole.extend_from_slice(line);
                self.line(&whole, &mut on_event);
                whole.clear();
                self.partial = whole;
            }
            if self.overflowed {
                return;
            }
        }
        if self.partial.len() + bytes.len() > self.max_line {
            return self.overflow();
        }
        self.partial.extend_from_slice(bytes);
    }

    fn overflow(&mut self) {
        self.overflowed = true;
        self.partial = Vec::new();
        self.data = Vec::new();
    }

    /// Ends the body. An event that was never terminated is dropped, not dispatched.
    pub fn finish(&mut self) -> BodyEnd {
        let mid_event = !self.partial.is_empty() || self.has_data || !self.event.is_empty();
        self.partial.clear();
        self.data.clear();
        self.event.clear();
        self.has_data = false;
        if mid_event {
            BodyEnd::MidEvent
        } else {
            BodyEnd::Clean
        }
    }

    fn line(&mut self, mut line: &[u8], on_event: &mut impl FnMut(SseEvent<'_>)) {
        if self.at_start {
            self.at_start = false;
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch(on_event);
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.data.len() + 1 + value.len() > self.max_line {
                    return self.overflow();
                }
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => {
                self.event.clear();
                self.event.extend_from_slice(value);
            }
            // `id` and `retry` only matter for reconnecting EventSources; a POST stream never does.
            _ => {}
        }
    }

    fn dispatch(&mut self, on_event: &mut impl FnMut(SseEvent<'_>)) {
        if self.has_data {
            let data = utf8(&self.data);
            let event = utf8(&self.event);
            on_event(SseEvent {
                index: self.dispatched,
                event: &event,
                data: &data,
            });
            self.dispatched += 1;
        }
        self.data.clear();
        self.event.clear();
        self.has_data = false;
    }
}

/// Invalid UTF-8 becomes U+FFFD rather than failing the whole stream.
fn utf8(bytes: &[u8]) -> Cow<'_, str> {
    // The strict check is much faster than the lossy one, and almost always succeeds.
    match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// The first `\n` or `\r`, eight bytes at a time: data lines are long, and a byte-by-byte
/// scan was the decoder's hottest loop.
fn find_line_end(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    const LF: u64 = ONES * b'\n' as u64;
    const CR: u64 = ONES * b'\r' as u64;
    let mut words = bytes.chunks_exact(8);
    let mut offset = 0;
    for word in &mut words {
        let mut le = [0u8; 8];
        le.copy_from_slice(word);
        let w = u64::from_le_bytes(le);
        let (lf, cr) = (w ^ LF, w ^ CR);
        // A byte of `x` is zero exactly where `w` matched; the lowest flagged byte is exact.
        let found = ((lf.wrapping_sub(ONES) & !lf) | (cr.wrapping_sub(ONES) & !cr)) & HIGHS;
        if found != 0 {
            return Some(offset + (found.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    let rest = words.remainder();
    rest.iter()
        .position(|&b| b == b'\n' || b == b'\r')
        .map(|p| offset + p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[derive(Debug, PartialEq)]
    struct Owned {
        index: usize,
        event: String,
        data: String,
    }

    fn decode(chunks: &[&[u8]]) -> (Vec<Owned>, BodyEnd) {
        let mut dec = SseDecoder::new();
        let mut out = Vec::new();
        for chunk in chunks {
            dec.push(chunk, |e| {
                out.push(Owned {
                    index: e.index,
                    event: e.event.to_owned(),
                    data: e.data.to_owned(),
                })
            });
        }
        let end = dec.finish();
        (out, end)
    }

    fn ev(index: usize, event: &str, data: &str) -> Owned {
        Owned {
            index,
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn crlf_lone_cr_and_lf_line_endings_all_frame_events() {
        let body = b"data: a\r\n\r\ndata: b\r\rdata: c\n\n";
        let expected = vec![ev(0, "", "a"), ev(1, "", "b"), ev(2, "", "c")];
        assert_eq!(decode(&[body]), (expected, BodyEnd::Clean));
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        let expected = vec![ev(0, "", "a"), ev(1, "", "b"), ev(2, "", "c")];
        assert_eq!(decode(&bytes), (expected, BodyEnd::Clean));
    }

    #[test]
    fn multi_line_data_is_joined_and_comments_are_not_counted() {
        let body = b": keep-alive\n\nevent: delta\ndata: one\ndata:two\nid: 7\n\n: x\n\ndata\n\n";
        let expected = vec![ev(0, "delta", "one\ntwo"), ev(1, "", "")];
        assert_eq!(decode(&[body]), (expected, BodyEnd::Clean));
    }

    #[test]
    fn an_event_without_data_is_not_dispatched_or_counted() {
        let body = b"event: ping\n\ndata: x\n\n";
        assert_eq!(decode(&[body]), (vec![ev(0, "", "x")], BodyEnd::Clean));
    }

    #[test]
    fn a_multi_byte_character_split_across_chunks_survives() {
        let body = "data: caffè ☕\n\n".as_bytes();
        let split = body.len() - 5; // inside the three-byte cup
        let (events, end) = decode(&[&body[..split], &body[split..]]);
        assert_eq!((events, end), (vec![ev(0, "", "caffè ☕")], BodyEnd::Clean));
    }

    #[test]
    fn invalid_utf8_becomes_replacement_characters_instead_of_failing() {
        let (events, end) = decode(&[b"data: a\xF0\x9F", b"\xFFb\n\n"]);
        assert_eq!(
            (events, end),
            (vec![ev(0, "", "a\u{FFFD}\u{FFFD}b")], BodyEnd::Clean)
        );
    }

    #[test]
    fn an_unterminated_last_event_is_dropped_and_reported() {
        assert_eq!(
            decode(&[b"data: a\n\ndata: b\n"]),
            (vec![ev(0, "", "a")], BodyEnd::MidEvent)
        );
        assert_eq!(
            decode(&[b"data: a\n\ndata: {\"half"]),
            (vec![ev(0, "", "a")], BodyEnd::MidEvent)
        );
    }

    #[test]
    fn the_word_at_a_time_line_search_agrees_with_a_plain_scan() {
        let mut bytes: Vec<u8> = (0u8..=255).cycle().take(600).collect();
        for start in 0..40 {
            for len in [0, 1, 7, 8, 9, 15, 16, 17, 100] {
                let slice = &bytes[start..(start + len).min(bytes.len())];
                let plain = slice.iter().position(|&b| b == b'\n' || b == b'\r');
                assert_eq!(find_line_end(slice), plain, "start {start} len {len}");
            }
        }
        bytes.retain(|&b| b != b'\n' && b != b'\r');
        assert_eq!(find_line_end(&bytes), None);
        bytes[77] = b'\r';
        bytes[78] = b'\n';
        assert_eq!(find_line_end(&bytes), Some(77));
    }

    #[test]
    fn a_line_over_the_cap_stops_the_decoder_without_buffering_it() {
        let mut dec = SseDecoder::with_max_line(16);
        let mut events = 0;
        dec.push(b"data: short\n\ndata: 0123456", |_| events += 1);
        assert!(!dec.overflowed());
        dec.push(b"789abcdef", |_| events += 1);
        assert!(dec.overflowed());
        dec.push(b"\n\ndata: more\n\n", |_| events += 1);
        assert_eq!((events, dec.partial.capacity()), (1, 0));
    }

    #[test]
    fn an_event_whose_data_lines_add_up_over_the_cap_overflows() {
        let mut dec = SseDecoder::with_max_line(16);
        let mut events = 0;
        dec.push(b"data: 01234\ndata: 56789\ndata: abcde\n", |_| events += 1);
        assert_eq!((events, dec.overflowed()), (0, true));
    }

    #[test]
    fn a_leading_byte_order_mark_is_ignored() {
        assert_eq!(
            decode(&[b"\xEF\xBB", b"\xBFdata: a\n\n"]),
            (vec![ev(0, "", "a")], BodyEnd::Clean)
        );
    }
}
