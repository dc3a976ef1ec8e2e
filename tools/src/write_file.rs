//! `write_file`: creates or replaces a whole file, showing the change as a diff.

use std::path::PathBuf;

use corvid_protocol::{ApprovalPreview, FileDiff, Location, ToolDisplay, ToolKind, ToolOutput};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{bounded_diff, ensure_not_dir, io_error, parse_args, unified_diff};
use crate::paths::{lexical, relative, resolve};
use crate::{ApprovalNeed, Tool, ToolContext, ToolError};

/// Writes a file's whole content.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteFile;

#[derive(Deserialize)]
struct Args {
    file_path: String,
    content: String,
}

/// The file as it is now and as it will be.
struct Planned {
    path: PathBuf,
    rel: String,
    old: Option<String>,
    new: String,
}

async fn plan(args: &Value, ctx: &ToolContext) -> Result<Planned, ToolError> {
    let args: Args = parse_args("write_file", args)?;
    let path = resolve(&ctx.cwd, &args.file_path)?;
    let rel = relative(&ctx.cwd, &path);
    ensure_not_dir(&path, &rel).await?;
    let old = match ctx.fs.read_text(path.clone()).await {
        Ok(text) => Some(text),
        // A missing file is created; a binary one is replaced without a textual "before".
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::InvalidData
            ) =>
        {
            None
        }
        Err(e) => return Err(io_error("read", &rel, &e)),
    };
    Ok(Planned {
        path,
        rel,
        old,
        new: args.content,
    })
}

impl Tool for WriteFile {
    fn name(&self) -> &'static str {
        "write_file"
    }

    fn display_name(&self) -> &'static str {
        "WriteFile"
    }

    fn description(&self) -> &'static str {
        "Creates a file, or replaces its whole content, inside the working directory. Missing \
         parent directories are created. Prefer `edit` for changing part of an existing file."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Path of the file, relative to the working directory or absolute inside it."},
                "content": {"type": "string", "description": "The complete new content of the file."}
            },
            "required": ["file_path", "content"]
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn mutates(&self) -> bool {
        true
    }

    fn display(&self, args: &Value, ctx: &ToolContext) -> ToolDisplay {
        let path = args
            .get("file_path")
            .and_then(Value::as_str)
            .map(|raw| lexical(&ctx.cwd, raw));
        ToolDisplay {
            title: match &path {
                Some(path) => format!("Write {}", relative(&ctx.cwd, path)),
                None => "Write file".to_owned(),
            },
            kind: ToolKind::Edit,
            locations: path
                .into_iter()
                .map(|path| Location { path, line: None })
                .collect(),
        }
    }

    fn approval(&self, args: &Value, ctx: &ToolContext) -> BoxFuture<'static, ApprovalNeed> {
        let (args, ctx) = (args.clone(), ctx.clone());
        async move {
            match plan(&args, &ctx).await {
                Ok(planned) => ApprovalNeed::Edit(ApprovalPreview::Diff(FileDiff {
                    path: planned.path,
                    old_text: planned.old,
                    new_text: planned.new,
                })),
                // `execute` fails the same way before touching anything, so there is
                // nothing to approve; the model gets the precise error instead.
                Err(_) => ApprovalNeed::None,
            }
        }
        .boxed()
    }

    fn execute(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        async move {
            let Planned {
                path,
                rel,
                old,
                new,
            } = plan(&args, &ctx).await?;
            let lines = new.lines().count();
            if old.as_deref() == Some(new.as_str()) {
                return Ok(ToolOutput {
                    text: format!("No change: {rel} already has this content."),
                    diffs: vec![],
                    raw: json!({"path": path, "created": false, "changed": false, "lines": lines}),
                });
            }
            ctx.fs
                .write_text(path.clone(), new.clone())
                .await
                .map_err(|e| io_error("write", &rel, &e))?;
            let diff = unified_diff(&rel, old.as_deref(), &new);
            let created = old.is_none();
            let verb = if created { "Created" } else { "Wrote" };
            Ok(ToolOutput {
                text: format!("{verb} {rel} ({lines} lines).\n\n{}", bounded_diff(&diff)),
                diffs: vec![FileDiff {
                    path: path.clone(),
                    old_text: old,
                    new_text: new,
                }],
                raw: json!({"path": path, "created": created, "changed": true, "lines": lines}),
            })
        }
        .boxed()
    }
}
