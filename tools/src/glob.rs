//! `glob`: files whose path matches a glob pattern, honouring `.gitignore`.

use std::path::{Path, PathBuf};

use corvid_protocol::{ToolDisplay, ToolKind, ToolOutput};
use futures::FutureExt;
use futures::future::BoxFuture;
use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{count_of, no_approval, parse_args, plain_display, search_display};
use crate::paths::{relative, resolve};
use crate::walk::walker;
use crate::{ApprovalNeed, Tool, ToolContext, ToolError};

/// The most paths one call returns.
const MAX_RESULTS: usize = 500;

/// Finds files by glob pattern (`src/**/*.rs`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Glob;

#[derive(Deserialize)]
struct Args {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
}

impl Tool for Glob {
    fn name(&self) -> &'static str {
        "glob"
    }

    fn display_name(&self) -> &'static str {
        "Glob"
    }

    fn description(&self) -> &'static str {
        "Finds files whose path (relative to `path`, default the working directory) matches a \
         glob pattern such as `**/*.rs` or `src/*.ts`. `*` does not cross `/`; `**` does. \
         Returns sorted paths relative to the working directory; ignored files are skipped."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob pattern, e.g. `**/*.rs`."},
                "path": {"type": "string", "description": "Directory to search in (default: the working directory)."}
            },
            "required": ["pattern"]
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }

    fn mutates(&self) -> bool {
        false
    }

    fn display(&self, args: &Value, ctx: &ToolContext) -> ToolDisplay {
        match parse_args::<Args>(self.name(), args) {
            Ok(args) => {
                let title = format!("Find {}", args.pattern);
                search_display(self.kind(), &ctx.cwd, title, args.path.as_deref())
            }
            Err(_) => plain_display(self.kind(), "Find files"),
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
            let args: Args = parse_args("glob", &args)?;
            let root = resolve(&ctx.cwd, args.path.as_deref().unwrap_or("."))?;
            if !tokio::fs::metadata(&root).await.is_ok_and(|m| m.is_dir()) {
                return Err(ToolError::new(format!(
                    "{} is not a directory",
                    relative(&ctx.cwd, &root)
                )));
            }
            // Patterns are matched against paths relative to the root; models sometimes
            // spell them absolute or with a leading `./`.
            let root_prefix = format!("{}/", root.display());
            let pattern = args
                .pattern
                .strip_prefix(&root_prefix)
                .unwrap_or(&args.pattern)
                .trim_start_matches("./")
                .to_owned();
            let matcher = GlobBuilder::new(&pattern)
                .literal_separator(true)
                .build()
                .map_err(|e| ToolError::new(format!("invalid glob pattern `{pattern}`: {e}")))?
                .compile_matcher();
            let cwd = ctx.cwd.clone();
            let walk_root = root.clone();
            let found = tokio::task::spawn_blocking(move || find(&cwd, &walk_root, &matcher))
                .await
                .map_err(|e| ToolError::new(format!("glob failed: {e}")))?;
            Ok(render(&args.pattern, &root, found))
        }
        .boxed()
    }
}

fn find(cwd: &Path, root: &Path, matcher: &GlobMatcher) -> Vec<String> {
    let mut found: Vec<String> = walker(root)
        .build()
        .flatten()
        .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
        .filter(|entry| {
            entry
                .path()
                .strip_prefix(root)
                .is_ok_and(|rel| matcher.is_match(rel))
        })
        .map(|entry| relative(cwd, entry.path()))
        .collect();
    found.sort();
    found
}

fn render(pattern: &str, root: &PathBuf, found: Vec<String>) -> ToolOutput {
    let total = found.len();
    let shown: Vec<String> = found.into_iter().take(MAX_RESULTS).collect();
    let text = if total == 0 {
        format!("No files match `{pattern}`.")
    } else {
        let count = if total == 1 {
            "1 file matches".to_owned()
        } else {
            format!("{total} files match")
        };
        let mut text = format!("{count} `{pattern}`:\n{}", shown.join("\n"));
        if total > MAX_RESULTS {
            text.push_str(&format!(
                "\n[{} not shown; use a more specific pattern.]",
                count_of(total - MAX_RESULTS, "more file", "more files")
            ));
        }
        text
    };
    ToolOutput::new(text, json!({"root": root, "files": shown, "total": total}))
}
