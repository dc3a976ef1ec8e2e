//! `read_file`: a text file, paged by lines so long files stay within the model's budget.

use corvid_protocol::{ToolDisplay, ToolKind, ToolOutput};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{io_error, no_approval, parse_args, path_display, plain_display, truncate_str};
use crate::paths::{relative, resolve};
use crate::{ApprovalNeed, Tool, ToolContext, ToolError};

/// Lines returned when the model gives no `limit`.
const DEFAULT_LIMIT: usize = 2000;
/// Longer lines are shortened (minified files would otherwise blow the budget).
const MAX_LINE_BYTES: usize = 2000;
/// Appended to a line that was cut at [`MAX_LINE_BYTES`].
const SHORTENED: &str = " … [line shortened]";
/// The most text one call returns, whatever the limit.
const MAX_OUTPUT_BYTES: usize = 100 * 1024;

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
            if tokio::fs::metadata(&path).await.is_ok_and(|m| m.is_dir()) {
                return Err(ToolError::new(format!(
                    "{rel} is a directory; use list_directory to see its entries"
                )));
            }
            let content = ctx
                .fs
                .read_text(path.clone())
                .await
                .map_err(|e| io_error("read", &rel, &e))?;
            if content.contains('\0') {
                return Err(ToolError::new(format!(
                    "{rel} looks binary (it contains NUL bytes); refusing to read it"
                )));
            }
            page(&rel, &path, &content, args.offset.unwrap_or(0), args.limit)
        }
        .boxed()
    }
}

fn page(
    rel: &str,
    path: &std::path::Path,
    content: &str,
    offset: usize,
    limit: Option<usize>,
) -> Result<ToolOutput, ToolError> {
    let limit = limit.unwrap_or(DEFAULT_LIMIT);
    if limit == 0 {
        return Err(ToolError::new("limit must be at least 1"));
    }
    let total = content.lines().count();
    if total == 0 {
        return Ok(ToolOutput {
            text: format!("{rel} is empty."),
            diffs: vec![],
            raw: json!({"path": path, "start_line": 0, "end_line": 0, "total_lines": 0, "truncated": false}),
        });
    }
    if offset >= total {
        return Err(ToolError::new(format!(
            "offset {offset} is past the end of {rel}, which has {total} lines"
        )));
    }
    let mut body = String::new();
    let mut shown = 0;
    let mut shortened = false;
    for line in content.lines().skip(offset).take(limit) {
        let cut = truncate_str(line, MAX_LINE_BYTES);
        let marker = if cut.len() < line.len() {
            SHORTENED
        } else {
            ""
        };
        if body.len() + cut.len() + marker.len() + 1 > MAX_OUTPUT_BYTES {
            break;
        }
        shortened |= !marker.is_empty();
        body.push_str(cut);
        body.push_str(marker);
        body.push('\n');
        shown += 1;
    }
    let end = offset + shown;
    let truncated = offset > 0 || end < total;
    let mut notes = Vec::new();
    if truncated {
        let mut note = format!("Showing lines {}-{end} of {total} of {rel}.", offset + 1);
        if end < total {
            note.push_str(&format!(
                " To read more, call read_file again with offset {end}."
            ));
        }
        notes.push(note);
    }
    if shortened {
        notes.push(format!(
            "Lines longer than {MAX_LINE_BYTES} bytes were shortened."
        ));
    }
    let text = if notes.is_empty() {
        body
    } else {
        format!("[{}]\n\n{body}", notes.join(" "))
    };
    Ok(ToolOutput {
        text,
        diffs: vec![],
        raw: json!({
            "path": path,
            "start_line": offset + 1,
            "end_line": end,
            "total_lines": total,
            "truncated": truncated,
        }),
    })
}
