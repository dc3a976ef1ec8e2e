//! Path globs from settings (`tools.protectedPaths`, the `write_file(src/**)` rules), read the
//! way `.gitignore` reads them: a pattern without a `/` matches at any depth (`.envrc`,
//! `*.pem`), one with a `/` is anchored at the workspace root (`src/**`), `/abs` and `~/x` are
//! absolute, and a pattern that matches a folder matches everything inside it.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// How letter case is compared. Protected paths and deny rules ignore it (a case-insensitive
/// file system opens `.GIT/config` as `.git/config`); allow rules do not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    Sensitive,
    Insensitive,
}

/// One compiled pattern.
#[derive(Debug, Clone)]
pub struct PathPattern {
    source: String,
    set: GlobSet,
}

/// A path a call touches, as the patterns see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TouchedPath {
    /// Absolute.
    pub abs: PathBuf,
    /// Relative to the workspace, when inside it.
    pub rel: Option<PathBuf>,
}

impl PathPattern {
    /// Compiles `source`; the error says what is wrong with it.
    pub fn parse(source: &str, case: Case) -> Result<Self, String> {
        let trimmed = source.trim();
        if trimmed.is_empty() {
            return Err("is an empty pattern".to_owned());
        }
        let base = trimmed.strip_prefix("./").unwrap_or(trimmed);
        let base = base.trim_end_matches('/');
        let glob = if let Some(rest) = base.strip_prefix("~/") {
            let home = dirs::home_dir()
                .ok_or_else(|| "starts with `~/` but there is no home directory".to_owned())?;
            format!("{}/{rest}", globset::escape(&home.to_string_lossy()))
        } else if base.starts_with('/') || base.contains('/') {
            base.to_owned()
        } else {
            format!("**/{base}")
        };
        Self::from_glob(source, &glob, case)
    }

    /// A pattern for one absolute folder or file and everything inside it.
    pub fn under(path: &Path, case: Case) -> Result<Self, String> {
        let glob = globset::escape(&path.to_string_lossy());
        Self::from_glob(&path.display().to_string(), &glob, case)
    }

    fn from_glob(source: &str, glob: &str, case: Case) -> Result<Self, String> {
        let mut set = GlobSetBuilder::new();
        for g in [glob.to_owned(), format!("{glob}/**")] {
            let compiled = GlobBuilder::new(&g)
                .literal_separator(true)
                .case_insensitive(case == Case::Insensitive)
                .build()
                .map_err(|e| format!("is not a valid glob: {e}"))?;
            set.add(compiled);
        }
        let set = set
            .build()
            .map_err(|e| format!("is not a valid glob: {e}"))?;
        Ok(Self {
            source: source.to_owned(),
            set,
        })
    }

    /// The pattern as the user wrote it.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether `path` (or a folder holding it) matches.
    pub fn matches(&self, path: &TouchedPath) -> bool {
        self.set.is_match(&path.abs) || path.rel.as_ref().is_some_and(|r| self.set.is_match(r))
    }
}

/// Every spelling of `paths` a pattern must see: each as written (lexically absolute) and with
/// symlinks resolved (a `docs -> .git` link must not hide `.git/config`), relative to the
/// workspace where inside it. (A few `stat`s, done inline like the tools' own path checks.)
pub fn touched(cwd: &Path, paths: &[PathBuf]) -> Vec<TouchedPath> {
    let cwd_real = std::fs::canonicalize(cwd).ok();
    let mut out: Vec<TouchedPath> = Vec::new();
    for path in paths {
        let mut spellings = vec![path.clone()];
        if let Some(real) = resolve_existing(path) {
            spellings.push(real);
        }
        for abs in spellings {
            let rel = [Some(cwd), cwd_real.as_deref()]
                .into_iter()
                .flatten()
                .find_map(|base| abs.strip_prefix(base).ok())
                .filter(|r| !r.as_os_str().is_empty())
                .map(Path::to_path_buf);
            let touched = TouchedPath { abs, rel };
            if !out.contains(&touched) {
                out.push(touched);
            }
        }
    }
    out
}

/// `path` with its deepest existing ancestor canonicalized (the rest does not exist yet).
fn resolve_existing(path: &Path) -> Option<PathBuf> {
    let mut missing: Vec<&std::ffi::OsStr> = Vec::new();
    let mut base = path;
    loop {
        if let Ok(real) = std::fs::canonicalize(base) {
            let mut out = real;
            out.extend(missing.iter().rev());
            return Some(out);
        }
        missing.push(base.file_name()?);
        base = base.parent()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(rel: &str) -> TouchedPath {
        TouchedPath {
            abs: Path::new("/ws").join(rel),
            rel: Some(PathBuf::from(rel)),
        }
    }

    #[test]
    fn a_pattern_without_a_slash_matches_at_any_depth() {
        let p = PathPattern::parse(".git/", Case::Insensitive).unwrap();
        assert!(p.matches(&at(".git/config")));
        assert!(p.matches(&at("sub/.git/hooks/pre-commit")));
        assert!(p.matches(&at(".GIT/config")));
        assert!(p.matches(&at(".git")));
        assert!(!p.matches(&at("src/git/config")));
        assert!(!p.matches(&at("x.git")));
    }

    #[test]
    fn a_pattern_with_a_slash_is_anchored_at_the_workspace() {
        let p = PathPattern::parse("src/**", Case::Sensitive).unwrap();
        assert!(p.matches(&at("src/main.rs")));
        assert!(p.matches(&at("src/a/b.rs")));
        assert!(!p.matches(&at("lib/src/main.rs")));
        let star = PathPattern::parse("src/*.rs", Case::Sensitive).unwrap();
        assert!(star.matches(&at("src/main.rs")));
        assert!(!star.matches(&at("src/a/b.rs")));
    }

    #[test]
    fn absolute_patterns_match_absolute_paths_only() {
        let p = PathPattern::under(Path::new("/home/u/.corvid"), Case::Insensitive).unwrap();
        let inside = TouchedPath {
            abs: PathBuf::from("/home/u/.corvid/settings.json"),
            rel: None,
        };
        assert!(p.matches(&inside));
        assert!(!p.matches(&at("home/u/.corvid/settings.json")));
    }

    #[test]
    fn a_bad_glob_is_an_error_naming_the_problem() {
        let err = PathPattern::parse("src/[", Case::Sensitive).unwrap_err();
        assert!(err.starts_with("is not a valid glob"), "{err}");
    }
}
