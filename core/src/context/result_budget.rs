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
            // The cut took the wrapper's closing tag with the tail: close it again first, so
            // the page text still ends where corvid's own words begin.
            "web_fetch" => format!(
                "</untrusted-web-content>\n[{budget}: the rest of the page ({left_out} bytes) \
                 was left out. To read it, fetch a narrower URL (a subpage, a section, or the \
                 raw file of a repository).]"
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

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    const SMALL: ResultBudget = ResultBudget { max_tokens: 250 };

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("{i:05}\n")).collect()
    }

    #[test]
    fn a_cut_web_page_still_closes_its_untrusted_content_wrapper() {
        let text = format!(
            "<untrusted-web-content url=\"https://x.test/\">\n{}</untrusted-web-content>",
            numbered(1000)
        );
        let got = SMALL.fit("web_fetch", &json!({}), &Value::Null, text);
        assert!(got.len() <= SMALL.max_bytes(), "{} bytes", got.len());
        let close = got.find("</untrusted-web-content>").unwrap();
        assert!(
            got[close..].starts_with("</untrusted-web-content>\n[Cut to fit"),
            "{got}"
        );
        assert_eq!(got.matches("</untrusted-web-content>").count(), 1);
    }

    #[test]
    fn a_result_within_the_budget_is_kept_whole() {
        let text = numbered(100);
        assert_eq!(
            SMALL.fit("grep_search", &json!({}), &Value::Null, text.clone()),
            text
        );
    }

    #[test]
    fn a_long_command_output_keeps_its_headline_and_its_end() {
        let text = format!("Exit code: 1\n\nStdout:\n{}", numbered(1000));
        let got = SMALL.fit("run_shell_command", &json!({}), &Value::Null, text.clone());
        assert!(got.len() <= SMALL.max_bytes(), "{} bytes", got.len());
        let mut lines = got.lines();
        assert_eq!(lines.next(), Some("Exit code: 1"));
        let marker = lines.next().unwrap();
        let kept_tail: Vec<&str> = lines.collect();
        assert_eq!(kept_tail.last(), Some(&"01000"));
        let kept = kept_tail.join("\n") + "\n";
        assert!(text.ends_with(&kept));
        let left_out = text.len() - "Exit code: 1\n".len() - kept.len();
        assert_eq!(
            marker,
            format!(
                "[Cut to fit the tool result budget (250 tokens): {left_out} bytes of output were \
                 left out here; the end is kept. To see them, run the command again with its \
                 output filtered (`| head -n 200`, `| grep PATTERN`) or redirected to a file \
                 that you read in parts with read_file.]"
            )
        );
    }

    #[test]
    fn long_search_results_say_how_many_lines_were_left_out_and_how_to_narrow() {
        let text = numbered(1000);
        let got = SMALL.fit("grep_search", &json!({"pattern": "x"}), &Value::Null, text);
        let (kept, marker) = got.rsplit_once('\n').unwrap();
        // 6 bytes a line: 488 bytes beside the marker hold 81 lines.
        assert_eq!(kept, numbered(81).trim_end());
        assert_eq!(
            marker,
            format!(
                "[Cut to fit the tool result budget (250 tokens): 919 more lines of matches \
                 ({} bytes) were left out. Narrow the search to see them: a more specific \
                 pattern, a `path` to one folder or file, or a `glob` such as `*.rs`.]",
                919 * 6
            )
        );
    }

    #[test]
    fn a_single_huge_line_is_cut_on_a_character_boundary() {
        let text = "é".repeat(2000);
        let got = SMALL.fit("list_directory", &json!({}), &Value::Null, text.clone());
        let (kept, marker) = got.rsplit_once('\n').unwrap();
        assert_eq!(kept, "é".repeat(244));
        assert_eq!(
            marker,
            format!(
                "[Cut to fit the tool result budget (250 tokens): the last {} bytes were left out.]",
                text.len() - 488
            )
        );
        let tail = SMALL.fit("run_shell_command", &json!({}), &Value::Null, text);
        assert!(tail.ends_with('é') && tail.len() <= SMALL.max_bytes());
    }
}
