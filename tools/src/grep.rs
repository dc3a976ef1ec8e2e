//! `grep_search`: lines matching a regular expression, with ripgrep's own crates.

use std::path::{Path, PathBuf};

use corvid_protocol::{ToolDisplay, ToolKind, ToolOutput};
use futures::FutureExt;
use futures::future::BoxFuture;
use grep_regex::RegexMatcher;
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use ignore::overrides::OverrideBuilder;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{
    no_approval, one_line, parse_args, plain_display, search_display, truncate_str,
};
use crate::paths::{relative, resolve};
use crate::regular_file::open_regular;
use crate::walk::walker;
use crate::{ApprovalNeed, Tool, ToolContext, ToolError};

/// The most matching lines one call returns.
const MAX_MATCHES: usize = 200;
/// Matching lines are shortened to this many bytes.
const MAX_LINE_BYTES: usize = 300;
/// The most memory the searcher's line buffer may take for one file.
const MAX_SEARCH_HEAP_BYTES: usize = 8 * 1024 * 1024;

/// Searches file contents with a regular expression.
#[derive(Debug, Clone, Copy, Default)]
pub struct GrepSearch;

#[derive(Deserialize)]
struct Args {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    glob: Option<String>,
}

impl Tool for GrepSearch {
    fn name(&self) -> &'static str {
        "grep_search"
    }

    fn display_name(&self) -> &'static str {
        "Grep"
    }

    fn description(&self) -> &'static str {
        "Searches file contents for a regular expression (Rust regex syntax) under `path` \
         (default: the working directory), optionally only in files matching `glob` (e.g. \
         `*.rs`). Returns `path:line:text` lines; ignored and binary files are skipped."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression to search for."},
                "path": {"type": "string", "description": "File or directory to search (default: the working directory)."},
                "glob": {"type": "string", "description": "Only search files matching this glob, e.g. `*.rs`."}
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
                let title = format!("Search \"{}\"", one_line(&args.pattern, 60));
                search_display(self.kind(), &ctx.cwd, title, args.path.as_deref())
            }
            Err(_) => plain_display(self.kind(), "Search"),
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
            let args: Args = parse_args("grep_search", &args)?;
            let root = resolve(&ctx.cwd, args.path.as_deref().unwrap_or("."))?;
            if tokio::fs::metadata(&root).await.is_err() {
                return Err(ToolError::new(format!(
                    "{} does not exist",
                    relative(&ctx.cwd, &root)
                )));
            }
            let matcher = RegexMatcher::new_line_matcher(&args.pattern).map_err(|e| {
                ToolError::new(format!(
                    "invalid regular expression `{}`: {e}",
                    args.pattern
                ))
            })?;
            let cwd = ctx.cwd.clone();
            let walk_root = root.clone();
            let glob = args.glob.clone();
            let found = tokio::task::spawn_blocking(move || {
                search(&cwd, &walk_root, glob.as_deref(), &matcher)
            })
            .await
            .map_err(|e| ToolError::new(format!("search failed: {e}")))??;
            Ok(render(&args.pattern, &root, found))
        }
        .boxed()
    }
}

struct Found {
    lines: Vec<String>,
    /// More matches existed than were collected.
    capped: bool,
}

fn search(
    cwd: &Path,
    root: &Path,
    glob: Option<&str>,
    matcher: &RegexMatcher,
) -> Result<Found, ToolError> {
    let mut walk = walker(root);
    if let Some(glob) = glob {
        let overrides = OverrideBuilder::new(root)
            .add(glob)
            .and_then(|b| b.build())
            .map_err(|e| ToolError::new(format!("invalid glob `{glob}`: {e}")))?;
        walk.overrides(overrides);
    }
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(b'\x00'))
        // A file with one endless line is given up on instead of buffered whole.
        .heap_limit(Some(MAX_SEARCH_HEAP_BYTES))
        .build();
    let mut lines = Vec::new();
    let mut capped = false;
    for entry in walk.build().flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        // Unreadable files are skipped like ripgrep does; the search goes on. Only regular
        // files are opened (a FIFO swapped in after the walk must not hang the search).
        let Ok((file, _)) = open_regular(entry.path()) else {
            continue;
        };
        let rel = relative(cwd, entry.path());
        let _ = searcher.search_file(
            matcher,
            &file,
            Lossy(|line_number, text| {
                if lines.len() >= MAX_MATCHES {
                    capped = true;
                    return Ok(false);
                }
                let text = text.trim_end_matches(['\n', '\r']);
                lines.push(format!(
                    "{rel}:{line_number}:{}",
                    truncate_str(text, MAX_LINE_BYTES)
                ));
                Ok(true)
            }),
        );
        if capped {
            break;
        }
    }
    Ok(Found { lines, capped })
}

fn render(pattern: &str, root: &PathBuf, found: Found) -> ToolOutput {
    let count = found.lines.len();
    let text = if count == 0 {
        format!("No matches for `{pattern}`.")
    } else {
        let mut text = found.lines.join("\n");
        if found.capped {
            text.push_str(&format!(
                "\n[Stopped after {MAX_MATCHES} matches; narrow the pattern, path or glob to see the rest.]"
            ));
        }
        text
    };
    ToolOutput::new(
        text,
        json!({"root": root, "matches": count, "capped": found.capped}),
    )
}
