//! Turning a fast model's answer into a label, or nothing (SPEC §7.3).

use unicode_segmentation::UnicodeSegmentation;

/// The longest label kept, in Unicode scalar values (room for CJK phrases).
pub const LABEL_MAX_CHARS: usize = 100;

/// How many surrounding quote characters are dropped from each end, at most. Bounded so
/// that a pathological answer cannot make cleaning expensive; no real label has more.
const MAX_QUOTE_RUN: usize = 10;
/// How many emphasis markers are dropped from each end, at most (`***bold italic***`).
const MAX_EMPHASIS_RUN: usize = 3;

const QUOTES: &[char] = &['"', '\'', '`', '‘', '’', '“', '”', '「', '」', '『', '』'];
const EMPHASIS: &[char] = &['*', '_'];
const PREFIXES: &[&str] = &["label", "summary", "result", "output"];

/// Openings that mean the model answered with an error or a refusal instead of a label.
/// The ASCII ones are matched ignoring case.
const REFUSALS: &[&str] = &[
    "API error",
    "Error:",
    "I cannot",
    "I can't",
    "I can\u{2019}t",
    "Unable to",
    "Failed to",
    "Sorry,",
    "Request failed",
    "我无法",
    "我不能",
    "抱歉",
    "无法",
];

/// Cleans a fast model's raw answer into a label, or `None` when nothing usable is left.
/// The steps run in SPEC order, trimming after each.
pub fn clean_label(raw: &str) -> Option<String> {
    let text = first_line(raw);
    let text = drop_bullet(text).trim();
    let text = drop_runs(text, EMPHASIS, MAX_EMPHASIS_RUN);
    let text = drop_runs(text, QUOTES, MAX_QUOTE_RUN);
    let text = drop_prefix(text).trim();
    if text.is_empty() || is_refusal(text) {
        return None;
    }
    let capped = cap_chars(text, LABEL_MAX_CHARS).trim_end();
    (!capped.is_empty()).then(|| capped.to_owned())
}

/// The first non-blank line: models sometimes open with an empty line before the label.
fn first_line(raw: &str) -> &str {
    raw.trim().lines().next().unwrap_or_default().trim()
}

/// Drops one list bullet. `-` and `*` need a following space or nothing at all after them
/// (otherwise `*` is emphasis); `•` is never part of a label, so it goes either way.
fn drop_bullet(text: &str) -> &str {
    if let Some(rest) = text.strip_prefix('•') {
        return rest;
    }
    for bullet in ['-', '*'] {
        if let Some(rest) = text.strip_prefix(bullet)
            && (rest.is_empty() || rest.starts_with(char::is_whitespace))
        {
            return rest;
        }
    }
    text
}

/// Drops up to `max` characters of `set` from each end, then trims.
fn drop_runs<'a>(text: &'a str, set: &[char], max: usize) -> &'a str {
    let mut start = 0;
    for (taken, (index, c)) in text.char_indices().enumerate() {
        if taken == max || !set.contains(&c) {
            break;
        }
        start = index + c.len_utf8();
    }
    let rest = &text[start..];
    let mut end = rest.len();
    for (taken, (index, c)) in rest.char_indices().rev().enumerate() {
        if taken == max || !set.contains(&c) {
            break;
        }
        end = index;
    }
    rest[..end].trim()
}

/// Drops a `Label:`-style prefix: any case, ASCII or full-width colon, optional spaces.
fn drop_prefix(text: &str) -> &str {
    for prefix in PREFIXES {
        let Some(head) = text.get(..prefix.len()) else {
            continue;
        };
        if !head.eq_ignore_ascii_case(prefix) {
            continue;
        }
        let rest = text[prefix.len()..].trim_start();
        if let Some(after) = rest.strip_prefix([':', '：']) {
            return after;
        }
    }
    text
}

fn is_refusal(text: &str) -> bool {
    REFUSALS.iter().any(|refusal| {
        text.get(..refusal.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(refusal))
    })
}

/// The longest prefix of whole grapheme clusters holding at most `max` scalar values.
pub(super) fn cap_chars(text: &str, max: usize) -> &str {
    let mut used = 0;
    let mut end = 0;
    for (index, grapheme) in text.grapheme_indices(true) {
        let chars = grapheme.chars().count();
        if used + chars > max {
            break;
        }
        used += chars;
        end = index + grapheme.len();
    }
    &text[..end]
}
