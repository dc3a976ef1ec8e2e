//! `read_file`: a text file, paged by lines so long files stay within the model's budget;
//! a file too large to load is paged from disk without loading it.

use std::io::BufReader;
use std::path::Path;

use corvid_protocol::{ToolDisplay, ToolKind, ToolOutput};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{count_of, io_error, no_approval, parse_args, path_display, plain_display};
use crate::line_window::{MAX_LINE_BYTES, Window, WindowError, read_window};
use crate::paths::{relative, resolve};
use crate::regular_file::{
    MAX_WHOLE_FILE_BYTES, ensure_regular, human_size, open_regular, read_whole_text,
};
use crate::{ApprovalNeed, Tool, ToolContext, ToolError};

/// Lines returned when the model gives no `limit`.
const DEFAULT_LIMIT: usize = 2000;
/// The read buffer when paging a file too large to load.
const READ_BUFFER_BYTES: usize = 64 * 1024;
/// Files on local disk up to this size are read on the async worker itself: from the page
/// cache that takes tens of microseconds, less than the trip to the blocking pool.
const INLINE_READ_BYTES: u64 = 128 * 1024;

/// Reads a text file, optionally a window of its lines.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadFile;

#[derive(Deserialize)]
struct Args {
    file_path: String,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
}

impl Tool for ReadFile {
    fn name(&self) -> &'static str {
        "read_file"
    }

    fn display_name(&self) -> &'static str {
        "ReadFile"
    }

    fn description(&self) -> &'static str {
        "Reads a UTF-8 text file inside the working directory. Long files are returned in pages \
         of lines: pass `offset` (0-based line number to start at) and `limit` (number of lines) \
         to read a specific part. Binary files are refused."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Path of the file, relative to the working directory or absolute inside it."},
                "offset": {"type": "integer", "minimum": 0, "description": "0-based line to start reading at."},
                "limit": {"type": "integer", "minimum": 1, "description": "How many lines to read (default 2000)."}
            },
            "required": ["file_path"]
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn mutates(&self) -> bool {
        false
    }

    fn display(&self, args: &Value, ctx: &ToolContext) -> ToolDisplay {
        match parse_args::<Args>(self.name(), args) {
            Ok(args) => {
                let line = args.offset.and_then(|o| u32::try_from(o + 1).ok());
                path_display(self.kind(), "Read", &ctx.cwd, &args.file_path, line)
            }
            Err(_) => plain_display(self.kind(), "Read file"),
        }
    }

    fn approval(&self, _args: &Value, _ctx: &ToolContext) -> BoxFuture<'static, ApprovalNeed> {
        no_approval()
    }

    fn execute(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        async move {
            let args: Args = parse_args("read_file", &args)?;
            let path = resolve(&ctx.cwd, &args.file_path)?;
            let rel = relative(&ctx.cwd, &path);
            let offset = args.offset.unwrap_or(0);
            let limit = args.limit.unwrap_or(DEFAULT_LIMIT);
            if limit == 0 {
                return Err(ToolError::new("limit must be at least 1"));
            }
            // On local disk a small file is read right here, and any other in one trip to the
            // blocking pool: with many sessions at once, each trip is a thread wake-up and back,
            // and a burst of them starts new threads (issue 16). Reading a few KB costs about
            // what the path checks before it already did on this thread.
            if ctx.fs.on_local_disk() {
                if std::fs::metadata(&path)
                    .is_ok_and(|m| m.is_file() && m.len() <= INLINE_READ_BYTES)
                {
                    return read_local(&path, &rel, offset, limit);
                }
                let shown = rel.clone();
                return tokio::task::spawn_blocking(move || read_local(&path, &rel, offset, limit))
                    .await
                    .map_err(|e| ToolError::new(format!("reading {shown} failed: {e}")))?;
            }
            // The type and size decide before anything is read: a FIFO or device is never
            // opened, and a huge file is paged from disk instead of loaded.
            if let Ok(meta) = tokio::fs::metadata(&path).await {
                if let Some(refused) = refusal(&meta, &rel) {
                    return Err(refused);
                }
                if meta.len() > MAX_WHOLE_FILE_BYTES {
                    let (size, shown) = (meta.len(), rel.clone());
                    return tokio::task::spawn_blocking(move || {
                        page_from_disk(&path, &rel, size, offset, limit)
                    })
                    .await
                    .map_err(|e| ToolError::new(format!("reading {shown} failed: {e}")))?;
                }
            }
            let content = ctx
                .fs
                .read_text(path.clone())
                .await
                .map_err(|e| io_error("read", &rel, &e))?;
            page_loaded(&rel, &path, &content, offset, limit)
        }
        .boxed()
    }
}

/// The whole read on local disk, in the blocking pool: the same checks in the same order as
/// for an editor's buffers.
fn read_local(
    path: &Path,
    rel: &str,
    offset: usize,
    limit: usize,
) -> Result<ToolOutput, ToolError> {
    if let Ok(meta) = std::fs::metadata(path) {
        if let Some(refused) = refusal(&meta, rel) {
            return Err(refused);
        }
        if meta.len() > MAX_WHOLE_FILE_BYTES {
            return page_from_disk(path, rel, meta.len(), offset, limit);
        }
    }
    let content = read_whole_text(path).map_err(|e| io_error("read", rel, &e))?;
    page_loaded(rel, path, &content, offset, limit)
}

/// Why a path that exists cannot be read as a text file: a directory, a FIFO or a device.
fn refusal(meta: &std::fs::Metadata, rel: &str) -> Option<ToolError> {
    if meta.is_dir() {
        return Some(ToolError::new(format!(
            "{rel} is a directory; use list_directory to see its entries"
        )));
    }
    ensure_regular(meta)
        .err()
        .map(|e| io_error("read", rel, &e))
}

/// A window of a file loaded whole, whose line count is known; refused when it holds NUL
/// bytes.
fn page_loaded(
    rel: &str,
    path: &Path,
    content: &str,
    offset: usize,
    limit: usize,
) -> Result<ToolOutput, ToolError> {
    if content.contains('\0') {
        return Err(ToolError::new(format!(
            "{rel} looks binary (it contains NUL bytes); refusing to read it"
        )));
    }
    let total = content.lines().count();
    if total == 0 {
        return Ok(ToolOutput::new(
            format!("{rel} is empty."),
            json!({"path": path, "start_line": 0, "end_line": 0, "total_lines": 0, "truncated": false}),
        ));
    }
    if offset >= total {
        return Err(past_end(rel, offset, total));
    }
    let window = read_window(&mut content.as_bytes(), offset, limit).map_err(|e| match e {
        WindowError::PastEnd(lines) => past_end(rel, offset, lines),
        WindowError::Binary => binary(rel, None),
        WindowError::Io(e) => io_error("read", rel, &e),
    })?;
    Ok(render(rel, path, offset, window, Some(total), None))
}

/// A window of a file too large to load, read from disk keeping only the lines shown; its
/// line count is known only when the window reaches its end. Blocking: run it in the pool.
fn page_from_disk(
    path: &Path,
    rel: &str,
    size: u64,
    offset: usize,
    limit: usize,
) -> Result<ToolOutput, ToolError> {
    let read = open_regular(path)
        .map_err(WindowError::Io)
        .and_then(|(file, _)| {
            read_window(
                &mut BufReader::with_capacity(READ_BUFFER_BYTES, file),
                offset,
                limit,
            )
        });
    let window = match read {
        Ok(window) if window.shown == 0 && !window.more => {
            return Err(past_end(rel, offset, offset));
        }
        Ok(window) => window,
        Err(WindowError::PastEnd(lines)) => return Err(past_end(rel, offset, lines)),
        Err(WindowError::Binary) => return Err(binary(rel, Some(size))),
        Err(WindowError::Io(e)) => return Err(io_error("read", rel, &e)),
    };
    let total = (!window.more).then_some(offset + window.shown);
    Ok(render(rel, path, offset, window, total, Some(size)))
}

fn past_end(rel: &str, offset: usize, total: usize) -> ToolError {
    ToolError::new(format!(
        "offset {offset} is past the end of {rel}, which has {}",
        count_of(total, "line", "lines")
    ))
}

fn binary(rel: &str, size: Option<u64>) -> ToolError {
    let size = size.map_or(String::new(), |s| format!(" ({})", human_size(s)));
    ToolError::new(format!(
        "{rel}{size} looks binary (it contains NUL bytes or is not UTF-8 text); refusing to read it"
    ))
}

/// The window with a note on where it sits; `size` is given for a file too large to load.
fn render(
    rel: &str,
    path: &Path,
    offset: usize,
    window: Window,
    total: Option<usize>,
    size: Option<u64>,
) -> ToolOutput {
    let end = offset + window.shown;
    let truncated = offset > 0 || window.more;
    let mut notes = Vec::new();
    if truncated {
        let of = match (total, size) {
            (Some(total), _) => format!("of {total} of {rel}"),
            (None, Some(size)) => format!(
                "of {rel}, a {} file (too large to load whole or count its lines)",
                human_size(size)
            ),
            (None, None) => format!("of {rel}"),
        };
        let mut note = format!("Showing lines {}-{end} {of}.", offset + 1);
        if window.more {
            note.push_str(&format!(
                " To read more, call read_file again with offset {end}."
            ));
        }
        notes.push(note);
    }
    if window.shortened {
        notes.push(format!(
            "Lines longer than {MAX_LINE_BYTES} bytes were shortened."
        ));
    }
    let text = if notes.is_empty() {
        window.body
    } else {
        format!("[{}]\n\n{}", notes.join(" "), window.body)
    };
    ToolOutput::new(
        text,
        json!({
            "path": path,
            "start_line": offset + 1,
            "end_line": end,
            "total_lines": total,
            "truncated": truncated,
        }),
    )
}
