//! Local labels for the commonest batch, one read-only call: no model call, no cost,
//! no latency (SPEC §7.2, beyond).

use std::path::{Component, Path};

use serde_json::Value;

use super::{BatchForSummary, LABEL_MAX_CHARS};

/// A relative path up to this long is shown whole; longer or absolute ones by file name.
const SHORT_PATH_CHARS: usize = 40;

/// The label for a batch of exactly one successful `read_file`, `list_directory`, `glob`
/// or `grep_search` call, or `None` when the batch needs the fast model.
pub fn local_label(batch: &BatchForSummary) -> Option<String> {
    let [call] = batch.calls.as_slice() else {
        return None;
    };
    if !call.succeeded {
        return None;
    }
    let arg = |key: &str| {
        call.args
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let label = match call.name.as_str() {
        "read_file" => format!("Read {}", short_path(arg("file_path")?)),
        "list_directory" => {
            let path = short_path(arg("path")?);
            let slash = if path.ends_with('/') { "" } else { "/" };
            format!("Listed {path}{slash}")
        }
        "glob" => format!("Found {}", arg("pattern")?),
        "grep_search" => format!("Searched for \"{}\"", arg("pattern")?),
        _ => return None,
    };
    Some(single_line_capped(&label))
}

/// A short relative path as written, otherwise the last component (`config.json`).
fn short_path(path: &str) -> String {
    let as_path = Path::new(path);
    if as_path.is_relative() && path.chars().count() <= SHORT_PATH_CHARS {
        return path.to_owned();
    }
    match as_path.components().next_back() {
        Some(Component::Normal(name)) => name.to_string_lossy().into_owned(),
        _ => path.to_owned(),
    }
}

/// Local labels skip the answer-cleaning steps (they would eat the closing quote of
/// `Searched for "x"`), but obey the same one-line, 100-character shape.
fn single_line_capped(label: &str) -> String {
    let line = label.lines().next().unwrap_or_default().trim_end();
    super::clean::cap_chars(line, LABEL_MAX_CHARS)
        .trim_end()
        .to_owned()
}
