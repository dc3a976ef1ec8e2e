//! Small helpers every tool shares: argument parsing, bounded text and diffs.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::ToolError;

/// Parses a call's arguments into the tool's own struct, naming the problem for the model.
pub fn parse_args<T: DeserializeOwned>(tool: &str, args: &Value) -> Result<T, ToolError> {
    if !args.is_object() {
        return Err(ToolError::new(format!(
            "invalid arguments for {tool}: expected a JSON object, got {}",
            type_name(args)
        )));
    }
    T::deserialize(args).map_err(|e| ToolError::new(format!("invalid arguments for {tool}: {e}")))
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The first line of `text`, shortened to `max` characters, for one-line titles.
pub fn one_line(text: &str, max: usize) -> String {
    let first = text.lines().next().unwrap_or("").trim_end();
    let multi_line = text.trim_end().lines().count() > 1;
    if first.chars().count() > max {
        let cut: String = first.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else if multi_line {
        format!("{first} …")
    } else {
        first.to_owned()
    }
}

/// `text` cut to at most `max` bytes on a character boundary.
pub fn truncate_str(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A unified diff of a file change, with `a/` and `b/` headers like git's.
pub fn unified_diff(rel: &str, old: Option<&str>, new: &str) -> String {
    let old_text = old.unwrap_or("");
    let old_header = if old.is_some() {
        format!("a/{rel}")
    } else {
        "/dev/null".to_owned()
    };
    similar::TextDiff::from_lines(old_text, new)
        .unified_diff()
        .context_radius(3)
        .header(&old_header, &format!("b/{rel}"))
        .to_string()
}

/// How a file-system error reads to the model; `verb` is what the tool tried (`read`).
pub fn io_error(verb: &str, rel: &str, e: &std::io::Error) -> ToolError {
    match e.kind() {
        std::io::ErrorKind::NotFound => ToolError::new(format!("{rel} does not exist")),
        std::io::ErrorKind::InvalidData => ToolError::new(format!(
            "{rel} looks binary (it is not UTF-8 text); refusing to {verb} it"
        )),
        _ => ToolError::new(format!("cannot {verb} {rel}: {e}")),
    }
}

/// Diffs shown to the model are cut here; the full change is in `ToolOutput::diffs`.
const MAX_DIFF_BYTES: usize = 20 * 1024;

/// A diff bounded for the model's context.
pub fn bounded_diff(diff: &str) -> String {
    if diff.len() <= MAX_DIFF_BYTES {
        return diff.to_owned();
    }
    format!(
        "{}\n[diff truncated after {MAX_DIFF_BYTES} bytes]",
        truncate_str(diff, MAX_DIFF_BYTES)
    )
}

/// Refuses to treat a directory as a file, before reading or writing it.
pub async fn ensure_not_dir(path: &std::path::Path, rel: &str) -> Result<(), ToolError> {
    if tokio::fs::metadata(path).await.is_ok_and(|m| m.is_dir()) {
        return Err(ToolError::new(format!("{rel} is a directory, not a file")));
    }
    Ok(())
}
