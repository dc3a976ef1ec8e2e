//! Small helpers every tool shares: argument parsing, cards, approvals, bounded text, and
//! the planned file change behind `write_file` and `edit`.

use std::path::{Path, PathBuf};

use corvid_protocol::{ApprovalPreview, FileDiff, Location, ToolDisplay, ToolKind};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::paths::{lexical, relative};
use crate::regular_file::{MAX_WHOLE_FILE_BYTES, ensure_regular, human_size};
use crate::{ApprovalNeed, FileSystem, ToolError};

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

/// A JSON value's type as an error message names it ("an array"), never the value itself
/// (it may be a secret).
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A card with a fixed title and no location, for calls whose arguments name no path.
pub fn plain_display(kind: ToolKind, title: impl Into<String>) -> ToolDisplay {
    ToolDisplay {
        title: title.into(),
        kind,
        locations: vec![],
    }
}

/// A card for a call on one path: `{verb} {path relative to cwd}`, located at the absolute
/// path. Spelled lexically, because cards are drawn before the call and must not do I/O.
pub fn path_display(
    kind: ToolKind,
    verb: &str,
    cwd: &Path,
    raw: &str,
    line: Option<u32>,
) -> ToolDisplay {
    let path = lexical(cwd, raw);
    ToolDisplay {
        title: format!("{verb} {}", relative(cwd, &path)),
        kind,
        locations: vec![Location { path, line }],
    }
}

/// A card for a search under `path` (default: the working directory): `title`, plus
/// ` in {dir}` when the search is narrower than the working directory.
pub fn search_display(
    kind: ToolKind,
    cwd: &Path,
    mut title: String,
    path: Option<&str>,
) -> ToolDisplay {
    let root = lexical(cwd, path.unwrap_or("."));
    if root != cwd {
        title.push_str(&format!(" in {}", relative(cwd, &root)));
    }
    ToolDisplay {
        title,
        kind,
        locations: vec![Location {
            path: root,
            line: None,
        }],
    }
}

/// The approval of tools that only read (and of the todo list): never asked for.
pub fn no_approval() -> BoxFuture<'static, ApprovalNeed> {
    futures::future::ready(ApprovalNeed::None).boxed()
}

/// A file as it is and as `write_file` or `edit` will leave it, computed the same way for
/// the approval preview and the real change.
pub struct FileChange {
    pub path: PathBuf,
    pub rel: String,
    /// `None` when the file does not exist yet (or, for `write_file`, is not text).
    pub old: Option<String>,
    pub new: String,
}

impl FileChange {
    /// Writes the new content inside the working directory `root`; returns the diff,
    /// bounded for the model's context.
    pub async fn write(&self, fs: &dyn FileSystem, root: &Path) -> Result<String, ToolError> {
        fs.write_text(root.to_owned(), self.path.clone(), self.new.clone())
            .await
            .map_err(|e| io_error("write", &self.rel, &e))?;
        let diff = unified_diff(&self.rel, self.old.as_deref(), &self.new);
        Ok(bounded_diff(&diff))
    }

    /// The change as front ends render it.
    pub fn into_diff(self) -> FileDiff {
        FileDiff {
            path: self.path,
            old_text: self.old,
            new_text: self.new,
        }
    }
}

/// Asks to approve a planned file change by its diff.
pub fn change_approval(planned: Result<FileChange, ToolError>) -> ApprovalNeed {
    match planned {
        Ok(change) => ApprovalNeed::Edit(ApprovalPreview::Diff(change.into_diff())),
        // Never "nothing to approve": a plan that failed here (even transiently) must not let
        // a later, successful plan in `execute` write without the user's say.
        Err(err) => ApprovalNeed::Refuse(err),
    }
}

/// `n` and the noun in the right number: `1 entry`, `2 entries`.
pub fn count_of(n: usize, singular: &str, plural: &str) -> String {
    format!("{n} {}", if n == 1 { singular } else { plural })
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
        std::io::ErrorKind::StorageFull => ToolError::new(format!(
            "cannot {verb} {rel}: the disk is full; nothing was changed: free some space and \
             try again"
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

/// Refuses, before anything reads it (the editor included), a file `write_file` or `edit`
/// cannot change as text: a directory, a FIFO or device, or one too large to load whole.
/// A missing file passes (it is created).
pub async fn ensure_changeable(path: &Path, rel: &str, verb: &str) -> Result<(), ToolError> {
    let Ok(meta) = tokio::fs::metadata(path).await else {
        return Ok(());
    };
    if meta.is_dir() {
        return Err(ToolError::new(format!("{rel} is a directory, not a file")));
    }
    ensure_regular(&meta).map_err(|e| io_error(verb, rel, &e))?;
    if meta.len() > MAX_WHOLE_FILE_BYTES {
        return Err(ToolError::new(format!(
            "cannot {verb} {rel}: it is {}, more than the {} corvid loads whole; change it \
             with a shell command instead",
            human_size(meta.len()),
            human_size(MAX_WHOLE_FILE_BYTES)
        )));
    }
    Ok(())
}
