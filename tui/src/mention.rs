//! `@path` in a prompt: the file's contents go to the model with the prompt (capped, see
//! `corvid_core::attach`), a folder's entries likewise, and the popup completes the path
//! being typed by fuzzy match over the workspace's files and folders (folders end in `/`; the
//! walk respects `.gitignore` and is done once per session). A path that leaves the
//! workspace (`..`, absolute, a symlink out) is refused with a notice.

use std::path::PathBuf;

/// Files listed at most, so a huge tree cannot stall the first completion.
const MAX_FILES: usize = 20_000;
/// Entries of a mentioned folder sent to the model at most.
const MAX_FOLDER_ENTRIES: usize = 200;

/// The workspace's files for completion and the resolution of `@path` mentions.
#[derive(Debug)]
pub struct Mentions {
    root: PathBuf,
    /// Relative paths, built on the first completion.
    files: Option<Vec<String>>,
}

/// A prompt's `@path` mentions resolved: the contexts to attach and the notices to show.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Attachments {
    pub context: Vec<String>,
    pub notices: Vec<String>,
}

impl Mentions {
    /// Mentions resolved inside `root` (the session's working directory).
    pub fn new(root: PathBuf) -> Self {
        Self { root, files: None }
    }

    /// The contents of every `@path` of `prompt` that names a file in the workspace; a path
    /// outside it, or a file that is missing, gets a notice instead.
    pub fn attach(&self, prompt: &str) -> Attachments {
        let mut out = Attachments::default();
        let mut seen = Vec::new();
        for raw in mentioned(prompt) {
            if seen.contains(&raw) {
                continue;
            }
            seen.push(raw);
            match corvid_tools::paths::resolve(&self.root, raw) {
                Ok(path) if path.is_file() => {
                    out.context
                        .push(corvid_core::attach::file_context(&path, raw));
                }
                Ok(path) if path.is_dir() => out.context.push(folder_context(&path, raw)),
                Ok(_) => out.notices.push(format!(
                    "@{raw}: no such file in the workspace; not attached"
                )),
                Err(e) => out.notices.push(format!("@{raw}: {e}; not attached")),
            }
        }
        out
    }

    /// Completes the `@path` word ending at the end of `text`: the text with that word
    /// replaced by the best match, or `None` when there is no `@` word or no match.
    pub fn complete(&mut self, text: &str) -> Option<String> {
        let start = text.rfind(|c: char| c.is_whitespace()).map_or(0, |i| i + 1);
        let query = text[start..].strip_prefix('@')?;
        let best = rank(self.files(), query).into_iter().next()?;
        Some(format!("{}@{best}", &text[..start]))
    }

    /// The best `n` files for `query` (what follows an `@`), for the completion popup.
    pub fn candidates(&mut self, query: &str, n: usize) -> Vec<String> {
        // A folder just chosen opens onto what is inside it, not onto itself again.
        rank(self.files(), query)
            .into_iter()
            .filter(|f| !(f.ends_with('/') && f == query))
            .take(n)
            .collect()
    }

    fn files(&mut self) -> &[String] {
        let root = self.root.clone();
        self.files.get_or_insert_with(|| list_files(&root))
    }
}

/// The `@path` words of a prompt: `@` at the start or after whitespace, up to whitespace.
fn mentioned(prompt: &str) -> Vec<&str> {
    prompt
        .split_whitespace()
        .filter_map(|word| word.strip_prefix('@'))
        .map(|p| p.trim_end_matches([',', '.', ';', ':', '!', '?', ')']))
        .filter(|p| !p.is_empty())
        .collect()
}

/// The workspace's files and folders (a folder ends in `/`), relative to `root`.
fn list_files(root: &std::path::Path) -> Vec<String> {
    ignore::WalkBuilder::new(root)
        .build()
        .filter_map(Result::ok)
        .filter_map(|e| {
            let is_dir = e.file_type()?.is_dir();
            let rel = e.path().strip_prefix(root).ok()?.display().to_string();
            match (rel.is_empty(), is_dir) {
                (true, _) => None,
                (false, true) => Some(format!("{rel}/")),
                (false, false) => Some(rel),
            }
        })
        .take(MAX_FILES)
        .collect()
}

/// What a mentioned folder tells the model: its entries (folders end in `/`, ignored files
/// left out), capped.
fn folder_context(path: &std::path::Path, raw: &str) -> String {
    let mut entries: Vec<String> = ignore::WalkBuilder::new(path)
        .max_depth(Some(1))
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.depth() == 1)
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            match e.file_type().is_some_and(|t| t.is_dir()) {
                true => format!("{name}/"),
                false => name,
            }
        })
        .collect();
    entries.sort();
    let total = entries.len();
    entries.truncate(MAX_FOLDER_ENTRIES);
    if total > MAX_FOLDER_ENTRIES {
        entries.push(format!("… {} more entries", total - MAX_FOLDER_ENTRIES));
    }
    format!(
        "<context ref=\"{raw}\" kind=\"folder\">\n{}\n</context>",
        entries.join("\n")
    )
}

/// The files matching `query` as a subsequence (case-insensitive), best first: a match in the
/// file name beats one spread over directories, contiguous letters beat scattered ones, and
/// shorter paths win ties.
pub fn rank(files: &[String], query: &str) -> Vec<String> {
    let query = query.to_lowercase();
    let mut scored: Vec<(i64, &String)> = files
        .iter()
        .filter_map(|f| score(f, &query).map(|s| (s, f)))
        .collect();
    scored.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(a.1.len().cmp(&b.1.len()))
            .then(a.1.cmp(b.1))
    });
    scored.into_iter().map(|(_, f)| f.clone()).collect()
}

fn score(path: &str, query: &str) -> Option<i64> {
    let lower = path.to_lowercase();
    // A folder's name is its last component, before the closing `/`.
    let name_start = lower.trim_end_matches('/').rfind('/').map_or(0, |i| i + 1);
    let mut score = 0i64;
    let mut last: Option<usize> = None;
    let mut from = 0;
    for q in query.chars() {
        let found = from + lower[from..].find(q)?;
        score += 1;
        if last.is_some_and(|l| l + 1 == found) {
            score += 5;
        }
        if found >= name_start {
            score += 3;
        }
        if found == name_start || lower[..found].ends_with(['/', '_', '-', '.']) {
            score += 4;
        }
        last = Some(found);
        from = found + q.len_utf8();
    }
    if lower[name_start..].starts_with(query) {
        score += 20;
    }
    Some(score)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn files(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_file_name_match_ranks_above_letters_spread_over_directories() {
        let list = files(&[
            "src/agent/main_loop.rs",
            "src/main.rs",
            "docs/maintenance/index.md",
            "README.md",
        ]);
        assert_eq!(
            rank(&list, "main"),
            files(&[
                "src/main.rs",
                "src/agent/main_loop.rs",
                "docs/maintenance/index.md",
            ])
        );
    }

    #[test]
    fn a_query_matches_as_a_case_insensitive_subsequence() {
        let list = files(&["tui/src/Composer.rs", "core/src/settings/mod.rs", "x.txt"]);
        assert_eq!(rank(&list, "tcomp"), files(&["tui/src/Composer.rs"]));
        assert_eq!(rank(&list, "zzz"), Vec::<String>::new());
    }

    #[test]
    fn tab_completes_the_at_word_with_the_best_match_and_respects_gitignore() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::create_dir_all(dir.path().join("target")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "fn main() {}").unwrap();
        std::fs::write(dir.path().join("target/main.o"), "bin").unwrap();
        std::fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
        // `ignore` honours .gitignore inside a git repository only.
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let mut mentions = Mentions::new(dir.path().to_owned());
        assert_eq!(
            mentions.complete("explain @mai"),
            Some("explain @src/main.rs".into())
        );
        assert_eq!(mentions.complete("no at word"), None);
        assert_eq!(mentions.complete("@nothing-like-it"), None);
        assert!(!mentions.files().iter().any(|f| f.starts_with("target")));
    }

    #[test]
    fn a_mentioned_file_is_attached_and_an_escaping_or_missing_path_gets_a_notice() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
        let mentions = Mentions::new(dir.path().to_owned());
        let got = mentions.attach("look at @a.txt, @../secret and @missing.rs and mail@x.org");
        assert_eq!(
            got.context,
            vec!["<context ref=\"a.txt\">\nhello\n\n</context>".to_owned()]
        );
        assert_eq!(got.notices.len(), 2, "{:?}", got.notices);
        assert!(
            got.notices[0].starts_with("@../secret: `../secret` is outside the working directory"),
            "{:?}",
            got.notices
        );
        assert_eq!(
            got.notices[1],
            "@missing.rs: no such file in the workspace; not attached"
        );
    }
}
