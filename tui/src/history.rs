//! Prompt history, kept per project across restarts: one JSON string per line in
//! `$CORVID_HOME/history/<project>.jsonl`, readable by the user only (prompts can hold secrets).

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Prompts kept (the oldest go first).
const MAX_ENTRIES: usize = 1000;

/// The prompts sent, oldest first, and where they are kept.
#[derive(Debug, Clone, Default)]
pub struct PromptHistory {
    entries: Vec<String>,
    path: Option<PathBuf>,
}

impl PromptHistory {
    /// The history of the project whose file is `path` (empty when it does not exist yet;
    /// lines that do not parse are skipped).
    pub fn load(path: PathBuf) -> Self {
        let entries: Vec<String> = fs::read_to_string(&path)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<String>(l).ok())
            .collect();
        let skip = entries.len().saturating_sub(MAX_ENTRIES);
        Self {
            entries: entries[skip..].to_vec(),
            path: Some(path),
        }
    }

    /// The file of the project in `cwd` under `corvid_home`.
    pub fn project_file(corvid_home: &Path, cwd: &Path) -> PathBuf {
        corvid_home.join("history").join(format!(
            "{}.jsonl",
            corvid_core::session::SessionStore::project_key(cwd)
        ))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn get(&self, i: usize) -> Option<&str> {
        self.entries.get(i).map(String::as_str)
    }

    /// The newest entry older than `before` (any when `None`) that contains `query`.
    pub fn find(&self, query: &str, before: Option<usize>) -> Option<usize> {
        if query.is_empty() {
            return None;
        }
        let end = before.unwrap_or(self.entries.len()).min(self.entries.len());
        self.entries[..end].iter().rposition(|e| e.contains(query))
    }

    /// Adds a sent prompt (not a blank one or a repeat of the last) and appends it to the file.
    pub fn push(&mut self, text: &str) {
        if text.trim().is_empty() || self.entries.last().is_some_and(|l| l == text) {
            return;
        }
        self.entries.push(text.to_owned());
        if self.entries.len() > MAX_ENTRIES {
            self.entries.remove(0);
        }
        if let Some(path) = &self.path
            && let Err(e) = append(path, &self.entries)
        {
            tracing::warn!(path = %path.display(), error = %e, "could not save the prompt history");
        }
    }
}

/// Appends the newest entry; rewrites the file with `entries` once it holds twice the limit.
fn append(path: &Path, entries: &[String]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let lines = fs::read_to_string(path).map_or(0, |s| s.lines().count());
    let rewrite = lines >= 2 * MAX_ENTRIES;
    let mut options = OpenOptions::new();
    options.create(true);
    if rewrite {
        options.write(true).truncate(true);
    } else {
        options.append(true);
    }
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    let to_write = if rewrite {
        entries
    } else {
        &entries[entries.len().saturating_sub(1)..]
    };
    let mut out = String::new();
    for e in to_write {
        out.push_str(&serde_json::Value::String(e.clone()).to_string());
        out.push('\n');
    }
    file.write_all(out.as_bytes())
}
