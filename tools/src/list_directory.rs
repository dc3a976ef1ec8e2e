//! `list_directory`: the entries of one directory, as `git status` would see them.

use std::path::{Path, PathBuf};

use corvid_protocol::{ToolDisplay, ToolKind, ToolOutput};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{count_of, no_approval, parse_args, path_display, plain_display};
use crate::paths::{relative, resolve};
use crate::walk::walker;
use crate::{ApprovalNeed, Tool, ToolContext, ToolError};

/// The most entries one call returns.
const MAX_ENTRIES: usize = 1000;

/// Lists a directory; subdirectories end with `/`, ignored files are left out.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListDirectory;

#[derive(Deserialize)]
struct Args {
    path: String,
}

impl Tool for ListDirectory {
    fn name(&self) -> &'static str {
        "list_directory"
    }

    fn display_name(&self) -> &'static str {
        "ListDirectory"
    }

    fn description(&self) -> &'static str {
        "Lists the entries of a directory inside the working directory, sorted by name. \
         Subdirectories end with `/`. Files ignored by .gitignore are not shown."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The directory, relative to the working directory (use \".\" for the working directory itself)."}
            },
            "required": ["path"]
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
            Ok(args) => path_display(self.kind(), "List", &ctx.cwd, &args.path, None),
            Err(_) => plain_display(self.kind(), "List directory"),
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
            let args: Args = parse_args("list_directory", &args)?;
            let path = resolve(&ctx.cwd, &args.path)?;
            let rel = relative(&ctx.cwd, &path);
            match tokio::fs::metadata(&path).await {
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => {
                    return Err(ToolError::new(format!(
                        "{rel} is a file, not a directory; use read_file to read it"
                    )));
                }
                Err(_) => return Err(ToolError::new(format!("{rel} does not exist"))),
            }
            let walk_root = path.clone();
            let entries = tokio::task::spawn_blocking(move || list(&walk_root))
                .await
                .map_err(|e| ToolError::new(format!("listing {rel} failed: {e}")))?;
            Ok(render(&rel, &path, entries))
        }
        .boxed()
    }
}

fn list(dir: &Path) -> Vec<String> {
    let mut entries: Vec<String> = walker(dir)
        .max_depth(Some(1))
        .build()
        .flatten()
        .filter(|entry| entry.depth() == 1)
        .map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().is_some_and(|t| t.is_dir()) {
                format!("{name}/")
            } else {
                name
            }
        })
        .collect();
    entries.sort();
    entries
}

fn render(rel: &str, path: &PathBuf, entries: Vec<String>) -> ToolOutput {
    let total = entries.len();
    let shown: Vec<String> = entries.into_iter().take(MAX_ENTRIES).collect();
    let text = if total == 0 {
        format!("Directory {rel} is empty (or everything in it is ignored).")
    } else {
        let count = count_of(total, "entry", "entries");
        let mut text = format!("Directory {rel} ({count}):\n{}", shown.join("\n"));
        if total > MAX_ENTRIES {
            text.push_str(&format!(
                "\n[{} not shown; use glob to narrow down.]",
                count_of(total - MAX_ENTRIES, "more entry", "more entries")
            ));
        }
        text
    };
    ToolOutput::new(
        text,
        json!({"path": path, "entries": shown, "total": total}),
    )
}
