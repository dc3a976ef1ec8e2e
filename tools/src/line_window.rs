//! A window of a text's lines read from a buffered reader, keeping only what is shown: a
//! file of any size (or a line of any length) is paged with bounded memory.

use std::io::{self, BufRead};

/// Longer lines are shortened (minified files would otherwise blow the budget).
pub const MAX_LINE_BYTES: usize = 2000;
/// The most text one window holds, whatever the limit.
pub const MAX_WINDOW_BYTES: usize = 100 * 1024;
/// Appended to a line that was cut at [`MAX_LINE_BYTES`].
const SHORTENED: &str = " … [line shortened]";

/// The lines `offset..offset + shown` of a text, as one string with `\n` line ends.
#[derive(Debug, PartialEq)]
pub struct Window {
    pub body: String,
    pub shown: usize,
    /// Some line was cut at [`MAX_LINE_BYTES`].
    pub shortened: bool,
    /// Text follows the window.
    pub more: bool,
}

/// Why no window could be read.
#[derive(Debug)]
pub enum WindowError {
    /// The text ends before `offset`; it has this many lines.
    PastEnd(usize),
    /// A NUL byte or invalid UTF-8 was met: the text is binary.
    Binary,
    Io(io::Error),
}

impl From<io::Error> for WindowError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

/// Skips `offset` lines and collects up to `limit` lines (and at most [`MAX_WINDOW_BYTES`]).
/// Lines end at `\n` or `\r\n`, as `str::lines` has them.
pub fn read_window(
    reader: &mut impl BufRead,
    offset: usize,
    limit: usize,
) -> Result<Window, WindowError> {
    let mut line = Vec::new();
    for seen in 0..offset {
        if next_line(reader, 0, &mut line)?.is_none() {
            return Err(WindowError::PastEnd(seen));
        }
    }
    let mut window = Window {
        body: String::new(),
        shown: 0,
        shortened: false,
        more: false,
    };
    while window.shown < limit {
        let Some(cut) = next_line(reader, MAX_LINE_BYTES, &mut line)? else {
            return Ok(window);
        };
        let text = utf8_prefix(&line, cut)?;
        let marker = if cut { SHORTENED } else { "" };
        if window.body.len() + text.len() + marker.len() + 1 > MAX_WINDOW_BYTES {
            window.more = true;
            return Ok(window);
        }
        window.shortened |= cut;
        window.body.push_str(text);
        window.body.push_str(marker);
        window.body.push('\n');
        window.shown += 1;
    }
    window.more = !reader.fill_buf()?.is_empty();
    Ok(window)
}

/// Reads one line into `kept`, keeping at most `keep` bytes of it; `None` at the end of the
/// text, else whether the line was cut. Every byte passed over is checked for NUL.
fn next_line(
    reader: &mut impl BufRead,
    keep: usize,
    kept: &mut Vec<u8>,
) -> Result<Option<bool>, WindowError> {
    kept.clear();
    let mut started = false;
    let mut cut = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(started.then_some(cut));
        }
        started = true;
        let newline = buf.iter().position(|&b| b == b'\n');
        let chunk = &buf[..newline.unwrap_or(buf.len())];
        if chunk.contains(&0) {
            return Err(WindowError::Binary);
        }
        let room = keep.saturating_sub(kept.len());
        cut |= chunk.len() > room;
        kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = newline.map_or(buf.len(), |at| at + 1);
        reader.consume(used);
        if newline.is_some() {
            if !cut && kept.last() == Some(&b'\r') {
                kept.pop();
            }
            return Ok(Some(cut));
        }
    }
}

/// The line as text; a line cut mid-character drops the partial character.
fn utf8_prefix(bytes: &[u8], cut: bool) -> Result<&str, WindowError> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(text),
        Err(e) if cut && e.error_len().is_none() => {
            Ok(std::str::from_utf8(&bytes[..e.valid_up_to()]).map_err(|_| WindowError::Binary)?)
        }
        Err(_) => Err(WindowError::Binary),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn window(text: &str, offset: usize, limit: usize) -> Window {
        read_window(&mut text.as_bytes(), offset, limit).unwrap()
    }

    #[test]
    fn lines_split_like_str_lines() {
        for text in ["", "a", "a\n", "a\r\nb", "a\n\nb\r", "\n"] {
            let all = window(text, 0, 10);
            let expected: String = text.lines().map(|l| format!("{l}\n")).collect();
            assert_eq!((all.body, all.shown), (expected, text.lines().count()));
        }
    }

    #[test]
    fn a_window_says_whether_text_follows() {
        assert_eq!(
            window("1\n2\n3\n", 1, 1),
            Window {
                body: "2\n".into(),
                shown: 1,
                shortened: false,
                more: true
            }
        );
        assert!(!window("1\n2\n3\n", 1, 2).more);
    }

    #[test]
    fn a_long_line_is_cut_on_a_character_boundary() {
        let text = format!("{}é\n", "a".repeat(MAX_LINE_BYTES - 1));
        let got = window(&text, 0, 1);
        assert_eq!(
            got.body,
            format!("{}{SHORTENED}\n", "a".repeat(MAX_LINE_BYTES - 1))
        );
        assert!(got.shortened);
    }

    #[test]
    fn nul_bytes_even_in_skipped_lines_mean_binary() {
        let err = read_window(&mut "a\0\nb\n".as_bytes(), 1, 1).unwrap_err();
        assert!(matches!(err, WindowError::Binary));
    }
}
