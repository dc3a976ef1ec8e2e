//! `write_file`: creates or replaces a whole file, showing the change as a diff.

use corvid_protocol::{ToolDisplay, ToolKind, ToolOutput};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{
    FileChange, change_approval, count_of, ensure_changeable, io_error, parse_args, path_display,
    plain_display,
};
use crate::paths::{relative, resolve};
use crate::{ApprovalNeed, Tool, ToolContext, ToolError};

/// Writes a file's whole content.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteFile;

#[derive(Deserialize)]
struct Args {
    file_path: String,
    content: String,
}

async fn plan(args: &Value, ctx: &ToolContext) -> Result<FileChange, ToolError> {
    let args: Args = parse_args("write_file", args)?;
    let path = resolve(&ctx.cwd, &args.file_path)?;
    let rel = relative(&ctx.cwd, &path);
    ensure_changeable(&path, &rel, "write").await?;
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
    Ok(FileChange {
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
        match args.get("file_path").and_then(Value::as_str) {
            Some(raw) => path_display(self.kind(), "Write", &ctx.cwd, raw, None),
            None => plain_display(self.kind(), "Write file"),
        }
    }

    fn approval(&self, args: &Value, ctx: &ToolContext) -> BoxFuture<'static, ApprovalNeed> {
        let (args, ctx) = (args.clone(), ctx.clone());
        async move { change_approval(plan(&args, &ctx).await) }.boxed()
    }

    fn execute(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        async move {
            let change = plan(&args, &ctx).await?;
            let lines = change.new.lines().count();
            if change.old.as_deref() == Some(change.new.as_str()) {
                return Ok(ToolOutput::new(format!("No change: {} already has this content.", change.rel), json!({"path": change.path, "created": false, "changed": false, "lines": lines})));
            }
            let diff = change.write(ctx.fs.as_ref(), &ctx.cwd).await?;
            let created = change.old.is_none();
            let verb = if created { "Created" } else { "Wrote" };
            Ok(ToolOutput {
                text: format!(
                    "{verb} {} ({}).\n\n{diff}",
                    change.rel,
                    count_of(lines, "line", "lines")
                ),
                raw: json!({"path": change.path, "created": created, "changed": true, "lines": lines}),
                diffs: vec![change.into_diff()],
             ..Default::default()})
        }
        .boxed()
    }
}
