//! `edit`: replaces an exact piece of text in a file, refusing ambiguous or missing matches.

use corvid_protocol::{ToolDisplay, ToolKind, ToolOutput};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{
    FileChange, change_approval, ensure_changeable, io_error, parse_args, path_display,
    plain_display,
};
use crate::paths::{relative, resolve};
use crate::{ApprovalNeed, Tool, ToolContext, ToolError};

/// Exact-match search and replace in one file.
#[derive(Debug, Clone, Copy, Default)]
pub struct Edit;

#[derive(Deserialize)]
struct Args {
    file_path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

/// The proposed change (whose `old` is `None` when an empty `old_string` creates the file),
/// with what the model is told about it.
struct Planned {
    change: FileChange,
    replacements: usize,
    /// 1-based line of the first replacement.
    first_line: usize,
}

async fn plan(args: &Value, ctx: &ToolContext) -> Result<Planned, ToolError> {
    let args: Args = parse_args("edit", args)?;
    let path = resolve(&ctx.cwd, &args.file_path)?;
    let rel = relative(&ctx.cwd, &path);
    ensure_changeable(&path, &rel, "edit").await?;
    if args.old_string == args.new_string {
        return Err(ToolError::new(
            "old_string and new_string are identical; there is nothing to change",
        ));
    }
    let content = match ctx.fs.read_text(path.clone()).await {
        Ok(content) => content,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && args.old_string.is_empty() => {
            return Ok(Planned {
                change: FileChange {
                    path,
                    rel,
                    old: None,
                    new: args.new_string,
                },
                replacements: 1,
                first_line: 1,
            });
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ToolError::new(format!(
                "{rel} does not exist; use write_file to create a new file"
            )));
        }
        Err(e) => return Err(io_error("edit", &rel, &e)),
    };
    if args.old_string.is_empty() {
        return Err(ToolError::new(format!(
            "old_string is empty but {rel} already exists; give the exact text to replace"
        )));
    }
    let (old_string, new_string) = line_endings_of(&content, args.old_string, args.new_string);
    let count = content.matches(&old_string).count();
    if count == 0 {
        return Err(ToolError::new(format!(
            "old_string was not found in {rel}; it must match the file exactly, including \
             whitespace and indentation (read the file again to copy the current text)"
        )));
    }
    if count > 1 && !args.replace_all {
        return Err(ToolError::new(format!(
            "old_string matches {count} places in {rel}; include more surrounding lines to make \
             it unique, or set replace_all to true to replace every occurrence"
        )));
    }
    let first_line = content
        .find(&old_string)
        .map_or(1, |at| content[..at].matches('\n').count() + 1);
    let new = if args.replace_all {
        content.replace(&old_string, &new_string)
    } else {
        content.replacen(&old_string, &new_string, 1)
    };
    Ok(Planned {
        change: FileChange {
            path,
            rel,
            old: Some(content),
            new,
        },
        replacements: count,
        first_line,
    })
}

/// `read_file` shows CRLF files with plain `\n` line ends, so the model's strings are
/// converted to the file's line ends when the file uses CRLF and they do not.
fn line_endings_of(content: &str, old: String, new: String) -> (String, String) {
    if content.contains("\r\n") && old.contains('\n') && !old.contains("\r\n") {
        (old.replace('\n', "\r\n"), new.replace('\n', "\r\n"))
    } else {
        (old, new)
    }
}

impl Tool for Edit {
    fn name(&self) -> &'static str {
        "edit"
    }

    fn display_name(&self) -> &'static str {
        "Edit"
    }

    fn description(&self) -> &'static str {
        "Replaces `old_string` with `new_string` in a file. `old_string` must match the file \
         exactly (whitespace included) and, unless `replace_all` is true, exactly once: include \
         enough surrounding lines to make it unique. An empty `old_string` creates a new file."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Path of the file, relative to the working directory or absolute inside it."},
                "old_string": {"type": "string", "description": "The exact text to replace."},
                "new_string": {"type": "string", "description": "The text to put in its place."},
                "replace_all": {"type": "boolean", "description": "Replace every occurrence instead of exactly one (default false)."}
            },
            "required": ["file_path", "old_string", "new_string"]
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn mutates(&self) -> bool {
        true
    }

    fn display(&self, args: &Value, ctx: &ToolContext) -> ToolDisplay {
        match args.get("file_path").and_then(Value::as_str) {
            Some(raw) => path_display(self.kind(), "Edit", &ctx.cwd, raw, None),
            None => plain_display(self.kind(), "Edit file"),
        }
    }

    fn approval(&self, args: &Value, ctx: &ToolContext) -> BoxFuture<'static, ApprovalNeed> {
        let (args, ctx) = (args.clone(), ctx.clone());
        async move { change_approval(plan(&args, &ctx).await.map(|planned| planned.change)) }
            .boxed()
    }

    fn execute(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        async move {
            let Planned {
                change,
                replacements,
                first_line,
            } = plan(&args, &ctx).await?;
            let diff = change.write(ctx.fs.as_ref(), &ctx.cwd).await?;
            let what = match (change.old.is_none(), replacements) {
                (true, _) => "created the file".to_owned(),
                (false, 1) => "replaced 1 occurrence".to_owned(),
                (false, n) => format!("replaced {n} occurrences"),
            };
            Ok(ToolOutput {
                text: format!("Edited {}: {what}.\n\n{diff}", change.rel),
                raw: json!({
                    "path": change.path,
                    "replacements": replacements,
                    "first_line": first_line,
                }),
                diffs: vec![change.into_diff()],
                ..Default::default()
            })
        }
        .boxed()
    }
}
