//! Tool results that would flood the context are cut before they enter the history, with a
//! marker saying what was left out and how the model can get it (SPEC: `tools.maxResultTokens`).

use serde_json::Value;

/// `tools.maxResultTokens` when settings give none.
pub const DEFAULT_MAX_RESULT_TOKENS: u32 = 8000;
/// The estimate of a token's size: cheap, and close enough for English text and code.
const BYTES_PER_TOKEN: usize = 4;

/// How many tokens one tool result may take in the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResultBudget {
    pub max_tokens: u32,
}

impl Default for ResultBudget {
    fn default() -> Self {
        Self {
            max_tokens: DEFAULT_MAX_RESULT_TOKENS,
        }
    }
}

/// Which end of a long result is worth keeping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// File contents and search matches are read from the top.
    Head,
    /// A command's errors and summary come last; its headline (the exit code) stays too.
    HeadlineAndTail,
}

impl ResultBudget {
    /// The most bytes a result may have, marker included.
    pub fn max_bytes(self) -> usize {
        usize::try_from(self.max_tokens)
            .unwrap_or(usize::MAX)
            .saturating_mul(BYTES_PER_TOKEN)
    }

    /// `text`, the result of a `tool` call with these `args` and `raw` output, cut to the
    /// budget with a marker telling the model what was left out and how to get it.
    pub fn fit(self, tool: &str, args: &Value, raw: &Value, text: String) -> String {
        let max = self.max_bytes();
        if text.len() <= max {
            return text;
        }
        // The marker is short; the room kept for it makes the whole fit the budget.
        let room = max.saturating_sub(MARKER_ROOM);
        match keep_for(tool) {
            Keep::Head => {
                let kept = whole_lines_from_start(&text, room);
                let marker = self.head_marker(tool, args, raw, &text, kept);
                format!("{}\n{marker}", text[..kept].trim_end_matches('\n'))
            }
            Keep::HeadlineAndTail => {
                let headline = text.find('\n').map_or(0, |i| i + 1).min(room / 2);
                let headline = floor_char_boundary(&text, headline);
                let start = whole_lines_from_end(&text, headline, room - headline);
                let marker = format!(
                    "[Cut to fit the tool result budget ({} tokens): {} bytes of output were \
                     left out here; the end is kept. To see them, run the command again with \
                     its output filtered (`| head -n 200`, `| grep PATTERN`) or redirected to a \
                     file that you read in parts with read_file.]",
                    self.max_tokens,
                    start - headline
                );
                format!(
                    "{}\n{marker}\n{}",
                    text[..headline].trim_end_matches('\n'),
                    &text[start..]
                )
            }
        }
    }

    /// What a head-kept result left out, in the terms of the tool that made it.
    fn head_marker(self, tool: &str, args: &Value, raw: &Value, text: &str, kept: usize) -> String {
        let budget = format!(
            "Cut to fit the tool result budget ({} tokens)",
            self.max_tokens
        );
        let left_out = text.len() - kept;
        match tool {
            "read_file" => match read_lines(raw, text, kept) {
                Some(lines) => format!(
                    "[{budget}: lines {}-{} are shown; lines {}-{} ({left_out} bytes) were left \
                     out. To read them, call read_file again with file_path {}, offset {} and \
                     limit {}.]",
                    lines.first,
                    lines.last_shown,
                    lines.last_shown + 1,
                    lines.last,
                    args.get("file_path").unwrap_or(&Value::Null),
                    lines.last_shown,
                    lines.page(),
                ),
                None => format!("[{budget}: the last {left_out} bytes were left out.]"),
            },
            "grep_search" => format!(
                "[{budget}: {} more lines of matches ({left_out} bytes) were left out. Narrow \
                 the search to see them: a more specific pattern, a `path` to one folder or \
                 file, or a `glob` such as `*.rs`.]",
                text[kept..].lines().count()
            ),
            _ => format!("[{budget}: the last {left_out} bytes were left out.]"),
        }
    }
}

/// Room for a marker (the longest is well under this).
const MARKER_ROOM: usize = 512;

fn keep_for(tool: &str) -> Keep {
    match tool {
        "run_shell_command" => Keep::HeadlineAndTail,
        _ => Keep::Head,
    }
}

/// The 1-based line numbers of a `read_file` window that was cut at byte `kept`.
struct ReadLines {
    first: u64,
    last_shown: u64,
    last: u64,
}

impl ReadLines {
    /// A page size that fits: as many lines as were shown.
    fn page(&self) -> u64 {
        (self.last_shown + 1).saturating_sub(self.first).max(1)
    }
}

/// The window's line numbers from `read_file`'s raw output (`start_line`, `end_line`); the
/// text holds those lines, after a one-line note and a blank line when the tool added a note.
fn read_lines(raw: &Value, text: &str, kept: usize) -> Option<ReadLines> {
    let first = raw.get("start_line")?.as_u64()?;
    let last = raw.get("end_line")?.as_u64()?;
    let body_lines = (last + 1).checked_sub(first)?;
    let text_lines = text.lines().count() as u64;
    let note_lines = text_lines.checked_sub(body_lines)?;
    let kept_lines = text[..kept].lines().count() as u64;
    let shown = kept_lines.saturating_sub(note_lines);
    let last_shown = (first + shown).checked_sub(1)?;
    (shown > 0).then_some(ReadLines {
        first,
        last_shown,
        last,
    })
}

/// The length of the longest prefix of whole lines within `max` bytes (a first line longer
/// than that is cut at a character boundary).
fn whole_lines_from_start(text: &str, max: usize) -> usize {
    let cut = floor_char_boundary(text, max);
    match text[..cut].rfind('\n') {
        Some(i) => i + 1,
        None => cut,
    }
}

/// Where the longest suffix of whole lines within `max` bytes starts, never before `from`
/// (a last line longer than that is cut at a character boundary).
fn whole_lines_from_end(text: &str, from: usize, max: usize) -> usize {
    let start = ceil_char_boundary(text, text.len().saturating_sub(max).max(from));
    if start == from || text.as_bytes()[start - 1] == b'\n' {
        return start;
    }
    match text[start..].find('\n') {
        Some(i) if start + i + 1 < text.len() => start + i + 1,
        _ => start,
    }
}

fn floor_char_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_char_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}
