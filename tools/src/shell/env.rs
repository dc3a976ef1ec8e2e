//! Which environment variables a shell command inherits. Commands print their environment
//! readily (`env`, a crash dump, a test log) and the model stores what it reads, so corvid's
//! provider keys and anything named like a secret stay out by default (`tools.shellEnv`).

use std::ffi::{OsStr, OsString};
use std::sync::Arc;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// Name patterns dropped unless `tools.shellEnv.include` keeps them (case-insensitive).
pub const SECRET_PATTERNS: [&str; 4] = ["*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*"];

/// The provider key variables corvid itself reads by default.
pub const PROVIDER_KEYS: [&str; 2] = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"];

/// Decides, by name, which variables a command sees. Cheap to clone: every tool call's
/// context carries one, and copying the compiled sets cost a tenth of a small call's CPU.
#[derive(Debug, Clone)]
pub struct EnvFilter {
    /// Always dropped unless included by name or glob: the provider keys, the secret patterns,
    /// and `tools.shellEnv.exclude`.
    dropped: Arc<GlobSet>,
    /// `tools.shellEnv.include`: kept even when `dropped` matches.
    kept: Arc<GlobSet>,
}

impl Default for EnvFilter {
    fn default() -> Self {
        // The built-in patterns always compile.
        Self::new(&[], &[], &[]).unwrap_or_else(|_| Self {
            dropped: Arc::new(GlobSet::empty()),
            kept: Arc::new(GlobSet::empty()),
        })
    }
}

impl EnvFilter {
    /// A filter dropping the default provider keys, `key_vars` (the variables the settings
    /// name for the model keys), the secret patterns and `exclude`, keeping `include`.
    /// Patterns are names or globs (`*`, `?`, `[...]`), matched case-insensitively.
    pub fn new(
        key_vars: &[String],
        include: &[String],
        exclude: &[String],
    ) -> Result<Self, String> {
        let dropped = PROVIDER_KEYS
            .iter()
            .copied()
            .chain(SECRET_PATTERNS)
            .chain(key_vars.iter().map(String::as_str))
            .chain(exclude.iter().map(String::as_str));
        Ok(Self {
            dropped: Arc::new(glob_set(dropped)?),
            kept: Arc::new(glob_set(include.iter().map(String::as_str))?),
        })
    }

    /// Whether a variable named `name` reaches the command.
    pub fn keeps(&self, name: &OsStr) -> bool {
        let name = name.to_string_lossy();
        self.kept.is_match(name.as_ref()) || !self.dropped.is_match(name.as_ref())
    }

    /// The variables of `env` that reach the command.
    pub fn apply(
        &self,
        env: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Vec<(OsString, OsString)> {
        env.into_iter()
            .filter(|(name, _)| self.keeps(name))
            .collect()
    }
}

fn glob_set<'a>(patterns: impl IntoIterator<Item = &'a str>) -> Result<GlobSet, String> {
    let mut set = GlobSetBuilder::new();
    for pattern in patterns {
        let glob = GlobBuilder::new(pattern)
            .case_insensitive(true)
            .literal_separator(false)
            .build()
            .map_err(|e| format!("`{pattern}` is not a valid name pattern: {e}"))?;
        set.add(glob);
    }
    set.build().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use pretty_assertions::assert_eq;

    fn kept(filter: &EnvFilter, names: &[&str]) -> Vec<String> {
        names
            .iter()
            .filter(|n| filter.keeps(OsStr::new(n)))
            .map(|n| (*n).to_owned())
            .collect()
    }

    #[test]
    fn secrets_and_provider_keys_are_dropped_by_name_in_any_case() {
        let filter = EnvFilter::new(&["MY_LLM".to_owned()], &[], &[]).unwrap();
        let names = [
            "PATH",
            "HOME",
            "OPENAI_API_KEY",
            "anthropic_api_key",
            "AWS_SECRET_ACCESS_KEY",
            "GITHUB_TOKEN",
            "db_password",
            "MY_LLM",
            "LANG",
        ];
        assert_eq!(kept(&filter, &names), vec!["PATH", "HOME", "LANG"]);
    }

    #[test]
    fn include_keeps_a_match_and_exclude_drops_more() {
        let filter = EnvFilter::new(
            &[],
            &["SSH_AUTH_SOCK".to_owned(), "KEYBOARD*".to_owned()],
            &["CORP_*".to_owned()],
        )
        .unwrap();
        let names = ["KEYBOARD_LAYOUT", "SSH_AUTH_SOCK", "CORP_PROXY", "API_KEY"];
        assert_eq!(
            kept(&filter, &names),
            vec!["KEYBOARD_LAYOUT", "SSH_AUTH_SOCK"]
        );
    }

    #[test]
    fn a_bad_pattern_is_an_error_naming_it() {
        let err = EnvFilter::new(&[], &["[".to_owned()], &[]).unwrap_err();
        assert!(err.starts_with("`[` is not a valid name pattern"), "{err}");
    }
}
