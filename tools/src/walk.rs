//! The one directory walk every search tool uses, so they agree on what is ignored.

use std::path::Path;

use ignore::WalkBuilder;

/// A walk of `root` honouring `.gitignore` (also outside git repositories) and `.ignore`,
/// showing hidden files but never descending into `.git`.
pub fn walker(root: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .require_git(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .sort_by_file_name(|a, b| a.cmp(b));
    builder
}
