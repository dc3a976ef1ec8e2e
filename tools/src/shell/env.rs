//! Which environment variables a shell command inherits. Commands print their environment
//! readily (`env`, a crash dump, a test log) and the model stores what it reads, so corvid's
//! provider keys, anything named like a secret, the well-known credential variables and any
//! value holding a URL with credentials stay out by default (`tools.shellEnv`), and so do the
//! variables through which bash would run code of its own around the command.

use std::ffi::{OsStr, OsString};
use std::sync::Arc;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// Name patterns dropped unless `tools.shellEnv.include` keeps them (case-insensitive).
pub const SECRET_PATTERNS: [&str; 4] = ["*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*"];

/// Well-known credential variables whose names do not say so: personal access tokens
/// (`GH_PAT`, `GITHUB_PAT`), npm's `_auth` settings, Sentry-style DSNs (`SENTRY_DSN`: the key is
/// the DSN's user), every `AWS_*` variable (the credential chain reads many: `AWS_ACCESS_KEY_ID`,
/// `AWS_CONTAINER_CREDENTIALS_FULL_URI`, ...), passwords spelled short (`*_PASS`, `*_PWD`,
/// `*PASSWD*`, `*PASSPHRASE*`), credentials, `*_AUTH` values, connection strings, JWTs,
/// cookies, webhook URLs (the URL is the secret), Docker's auth config and the OTLP exporter's
/// headers (`OTEL_EXPORTER_OTLP_HEADERS` and its per-signal forms carry the telemetry
/// collector's key). Matched like
/// [`SECRET_PATTERNS`] (case-insensitive); `tools.shellEnv.include` keeps any of them.
pub const WELL_KNOWN_SECRETS: [&str; 16] = [
    "*_PAT",
    "NPM_CONFIG__AUTH*",
    "*_DSN",
    "AWS_*",
    "*_PASS",
    "*_PWD",
    "*PASSWD*",
    "*PASSPHRASE*",
    "*CREDENTIAL*",
    "*_AUTH",
    "*CONNECTION_STRING*",
    "*_JWT",
    "*_COOKIE",
    "*WEBHOOK*",
    "DOCKER_AUTH_CONFIG",
    "OTEL_EXPORTER_OTLP_*HEADERS",
];

/// Variables that make bash run code of their own before or around the command: `BASH_ENV`
/// (a file sourced by every non-interactive bash), `ENV` (the same for `sh`), exported
/// functions (`BASH_FUNC_git%%=() { ...; }` replaces `git` inside an allowed `git status`),
/// `SHELLOPTS`/`BASHOPTS` (switch on `xtrace`, `extdebug`, ...) and `PS4` (expanded, command
/// substitutions included, under `xtrace`). An allow rule judges the command line it sees, so
/// none of these may change what that line runs; `tools.shellEnv.include` keeps one.
pub const SHELL_START_UP_HOOKS: [&str; 6] = [
    "BASH_ENV",
    "ENV",
    "BASH_FUNC_*",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
];

/// The provider key variables corvid itself reads by default.
pub const PROVIDER_KEYS: [&str; 2] = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"];

/// Decides, by name and value, which variables a command sees. Cheap to clone: every tool call's
/// context carries one, and copying the compiled sets cost a tenth of a small call's CPU.
#[derive(Debug, Clone)]
pub struct EnvFilter {
    /// Always dropped unless included by name or glob: the provider keys, the secret patterns,
    /// the well-known secret names and `tools.shellEnv.exclude`.
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
    /// name for the model keys), the secret patterns, the well-known secret names and
    /// `exclude`, keeping `include`; values holding a URL with credentials are dropped too.
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
            .chain(WELL_KNOWN_SECRETS)
            .chain(SHELL_START_UP_HOOKS)
            .chain(key_vars.iter().map(String::as_str))
            .chain(exclude.iter().map(String::as_str));
        Ok(Self {
            dropped: Arc::new(glob_set(dropped)?),
            kept: Arc::new(glob_set(include.iter().map(String::as_str))?),
        })
    }

    /// Whether a variable named `name` reaches the command, judged by its name alone.
    pub fn keeps(&self, name: &OsStr) -> bool {
        let name = name.to_string_lossy();
        self.kept.is_match(name.as_ref()) || !self.dropped.is_match(name.as_ref())
    }

    /// Whether the variable `name=value` reaches the command: by name, then by value (a
    /// URL with credentials stays out whatever its name: `DATABASE_URL`, `OPENAI_BASE_URL`).
    /// `tools.shellEnv.include` keeps a variable either way.
    pub fn keeps_var(&self, name: &OsStr, value: &OsStr) -> bool {
        let name = name.to_string_lossy();
        self.kept.is_match(name.as_ref())
            || (!self.dropped.is_match(name.as_ref())
                && !has_url_credentials(&value.to_string_lossy()))
    }

    /// The variables of `env` that reach the command.
    pub fn apply(
        &self,
        env: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Vec<(OsString, OsString)> {
        env.into_iter()
            .filter(|(name, value)| self.keeps_var(name, value))
            .collect()
    }
}

/// Whether `value` holds a URL carrying credentials anywhere in it: a password in its user
/// info (`postgres://app:pw@db`, `redis://:pw@cache`), or any user info on `http(s)` (a token
/// riding as the user name: `https://ghp_…@github.com`, a Sentry DSN). A bare `ssh://git@host`
/// user is not a secret and stays.
fn has_url_credentials(value: &str) -> bool {
    let mut rest = value;
    while let Some(pos) = rest.find("://") {
        let scheme: String = rest[..pos]
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let tail = &rest[pos + 3..];
        let authority_len = tail
            .find(|c: char| c.is_whitespace() || matches!(c, '/' | '?' | '#' | '"' | '\''))
            .unwrap_or(tail.len());
        if let Some(at) = tail[..authority_len].rfind('@') {
            let user_info = &tail[..at];
            let web = scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https");
            if user_info.contains(':') || (web && !user_info.is_empty()) {
                return true;
            }
        }
        rest = &tail[authority_len..];
    }
    false
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
    fn secrets_not_named_like_secrets_are_dropped_by_their_well_known_names() {
        let filter = EnvFilter::default();
        let names = [
            "GH_PAT",
            "GITHUB_PAT",
            "NPM_CONFIG__AUTH",
            "npm_config__authToken",
            "NPM_TOKEN",
            "SENTRY_DSN",
            "AWS_ACCESS_KEY_ID",
            "AWS_PROFILE",
            "DB_PASS",
            "MYSQL_PWD",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "AZURE_STORAGE_CONNECTION_STRING",
            "SLACK_WEBHOOK_URL",
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
            "otel_exporter_otlp_metrics_headers",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "PATH",
            "PWD",
            "OLDPWD",
            "SSH_AUTH_SOCK",
            "GIT_ASKPASS",
            "DATABASE_URL",
        ];
        assert_eq!(
            kept(&filter, &names),
            vec![
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "PATH",
                "PWD",
                "OLDPWD",
                "SSH_AUTH_SOCK",
                "GIT_ASKPASS",
                "DATABASE_URL"
            ]
        );
    }

    fn applied(filter: &EnvFilter, vars: &[(&str, &str)]) -> Vec<String> {
        filter
            .apply(
                vars.iter()
                    .map(|(n, v)| (OsString::from(n), OsString::from(v))),
            )
            .into_iter()
            .map(|(n, _)| n.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn a_value_holding_a_url_with_credentials_is_dropped_whatever_its_name() {
        let filter = EnvFilter::default();
        let vars = [
            ("DATABASE_URL", "postgres://app:s3cret@db.internal:5432/app"),
            ("OPENAI_BASE_URL", "https://user:pw@proxy.corp/v1"),
            ("REDIS_URL", "redis://:pw@cache:6379"),
            ("GIT_REMOTE", "https://ghp_abcdef123456@github.com/o/r.git"),
            (
                "PIP_EXTRA_INDEX_URL",
                "https://pypi.org/simple https://u:p@corp/simple",
            ),
            ("PLAIN_DB_URL", "postgres://db.internal/app"),
            ("GIT_URL", "ssh://git@github.com/o/r.git"),
            ("HOMEPAGE", "https://example.com/a@b"),
            ("EMAIL", "me@example.com"),
        ];
        assert_eq!(
            applied(&filter, &vars),
            vec!["PLAIN_DB_URL", "GIT_URL", "HOMEPAGE", "EMAIL"]
        );
    }

    #[test]
    fn include_still_keeps_a_well_known_secret_and_a_url_with_credentials() {
        let filter =
            EnvFilter::new(&[], &["DATABASE_URL".to_owned(), "AWS_*".to_owned()], &[]).unwrap();
        let vars = [
            ("DATABASE_URL", "postgres://app:s3cret@db/app"),
            ("AWS_REGION", "eu-west-1"),
            ("OTHER_URL", "postgres://app:s3cret@db/app"),
        ];
        assert_eq!(applied(&filter, &vars), vec!["DATABASE_URL", "AWS_REGION"]);
    }

    #[test]
    fn a_bad_pattern_is_an_error_naming_it() {
        let err = EnvFilter::new(&[], &["[".to_owned()], &[]).unwrap_err();
        assert!(err.starts_with("`[` is not a valid name pattern"), "{err}");
    }
}
