//! Protected paths: files whose change can make something run later (git hooks and config,
//! corvid's own settings, direnv, editor tasks, npm's config) or that hold credentials. A call
//! that would change one is asked in every approval mode but `yolo`, with the reason on the
//! request, and no allow rule covers it.
//!
//! Most names are protected at any depth of the workspace. The user's start-up and
//! credential files (shell rc files, `~/.ssh/`, `~/.gitconfig`, `~/.aws/`...) are protected
//! in the home directory only, where they take effect: a repository's own `.bashrc` or
//! `.ssh/` is just a file, and asking about it would only teach users to say yes. `.npmrc`
//! is the exception: npm also reads a project's own, so it is protected everywhere.
//!
//! `tools.protectedPaths` adds patterns (see [`super::path_pattern`]); a pattern starting
//! with `!` unprotects what it matches, and the last pattern that matches a path decides
//! (as in `.gitignore`), so `!.idea/` removes that default.

use std::path::{Path, PathBuf};

use super::path_pattern::{Case, PathPattern, TouchedPath};

/// The built-in patterns and why each is protected.
const DEFAULTS: &[(&str, &str)] = &[
    (
        ".git/",
        "changes there can run commands (git hooks, `core.fsmonitor` and other config)",
    ),
    (
        ".corvid/",
        "corvid's project settings live there and decide what runs without asking",
    ),
    (
        ".envrc",
        "direnv runs it as a shell script when you enter the folder",
    ),
    (
        ".vscode/",
        "the editor runs tasks and launch commands from it",
    ),
    (".idea/", "the IDE runs run configurations from it"),
    (
        ".npmrc",
        "npm reads it here and in your home folder; it can set the shell and options npm \
         scripts run with, and holds registry tokens",
    ),
    (
        "/var/spool/cron/",
        "cron runs the commands of the crontabs kept there",
    ),
    ("/etc/crontab", "cron runs the commands listed in it"),
    ("/etc/cron.d/", "cron runs the commands listed there"),
];

/// Why each start-up and credential file of the user's home folder is protected.
const SHELL_STARTUP: &str = "your shell runs it when it starts";
const HOME_DEFAULTS: &[(&str, &str)] = &[
    (".profile", SHELL_STARTUP),
    (".bashrc", SHELL_STARTUP),
    (".bash_profile", SHELL_STARTUP),
    (".bash_login", SHELL_STARTUP),
    (".bash_logout", SHELL_STARTUP),
    (".zshrc", SHELL_STARTUP),
    (".zshenv", SHELL_STARTUP),
    (".zprofile", SHELL_STARTUP),
    (".zlogin", SHELL_STARTUP),
    (".zlogout", SHELL_STARTUP),
    (".config/fish/", SHELL_STARTUP),
    (".inputrc", "every readline program reads it when it starts"),
    (
        ".ssh/",
        "it holds your SSH keys, the keys allowed to log in as you, and a client config \
         that can run commands (`ProxyCommand`)",
    ),
    (
        ".gnupg/",
        "it holds your GnuPG keys and agent configuration",
    ),
    (
        ".gitconfig",
        "git runs commands from your global config (`core.fsmonitor`, aliases, hooks)",
    ),
    (
        ".config/git/",
        "git runs commands from your global config (`core.fsmonitor`, aliases, hooks)",
    ),
    (".pypirc", "it holds your Python package index credentials"),
    (".netrc", "it holds passwords that curl, git and ftp send"),
    (".docker/", "it holds your container registry credentials"),
    (".kube/", "it holds your Kubernetes cluster credentials"),
    (".aws/", "it holds your AWS credentials"),
    (
        ".config/systemd/user/",
        "systemd runs your user units from it at login",
    ),
    (
        ".config/autostart/",
        "your desktop runs its entries at login",
    ),
];

/// The protected patterns of a session.
#[derive(Debug, Clone)]
pub struct ProtectedPaths {
    rules: Vec<Entry>,
}

#[derive(Debug, Clone)]
struct Entry {
    pattern: PathPattern,
    /// False for a `!pattern`, which unprotects.
    protects: bool,
    why: String,
}

impl ProtectedPaths {
    /// The defaults, the start-up and credential files of `user_home`, `corvid_home` (the
    /// user's settings and sessions) and the `extra` patterns of `tools.protectedPaths`, in
    /// that order. The error names the bad pattern.
    pub fn new(
        extra: &[String],
        corvid_home: Option<&Path>,
        user_home: Option<&Path>,
    ) -> Result<Self, String> {
        let mut rules = Vec::new();
        for (pattern, why) in DEFAULTS {
            rules.push(Entry {
                pattern: PathPattern::parse(pattern, Case::Insensitive)?,
                protects: true,
                why: (*why).to_owned(),
            });
        }
        for home in user_home.map(spellings).unwrap_or_default() {
            for (rel, why) in HOME_DEFAULTS {
                let rel = rel.trim_end_matches('/');
                rules.push(Entry {
                    pattern: PathPattern::under(&home.join(rel), Case::Insensitive)?,
                    protects: true,
                    why: format!("{why} (`~/{rel}`)"),
                });
            }
        }
        if let Some(home) = corvid_home {
            for home in spellings(home) {
                rules.push(Entry {
                    pattern: PathPattern::under(&home, Case::Insensitive)?,
                    protects: true,
                    why: "your corvid settings and sessions live there ($CORVID_HOME)".to_owned(),
                });
            }
        }
        for source in extra {
            let (protects, body) = match source.strip_prefix('!') {
                Some(rest) => (false, rest),
                None => (true, source.as_str()),
            };
            let pattern = PathPattern::parse(body, Case::Insensitive)
                .map_err(|e| format!("entry `{source}` {e}"))?;
            rules.push(Entry {
                pattern,
                protects,
                why: format!("it matches `{source}` in `tools.protectedPaths`"),
            });
        }
        Ok(Self { rules })
    }

    /// Why a call touching `paths` must be asked, naming the first protected one; `None` when
    /// none is protected.
    pub fn reason(&self, paths: &[TouchedPath]) -> Option<String> {
        paths.iter().find_map(|path| {
            let last = self.rules.iter().rev().find(|r| r.pattern.matches(path))?;
            last.protects.then(|| {
                let shown: PathBuf = path.rel.clone().unwrap_or_else(|| path.abs.clone());
                format!("`{}` is a protected path: {}", shown.display(), last.why)
            })
        })
    }
}

/// `path` as given and with links resolved, when that differs.
fn spellings(path: &Path) -> Vec<PathBuf> {
    let mut out = vec![path.to_path_buf()];
    if let Ok(real) = std::fs::canonicalize(path)
        && real != path
    {
        out.push(real);
    }
    out
}

impl Default for ProtectedPaths {
    /// The defaults with the process's home folder and `$CORVID_HOME` (or `~/.corvid`).
    fn default() -> Self {
        let env = crate::settings::process_env;
        let home = crate::settings::corvid_home(env);
        let user_home = crate::settings::user_home(env);
        // The built-in patterns always compile; an unusable home only loses its own entries.
        Self::new(&[], home.as_deref(), user_home.as_deref())
            .or_else(|_| Self::new(&[], None, None))
            .unwrap_or(Self { rules: Vec::new() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn at(rel: &str) -> Vec<TouchedPath> {
        vec![TouchedPath {
            abs: Path::new("/ws").join(rel),
            rel: Some(PathBuf::from(rel)),
        }]
    }

    #[test]
    fn the_defaults_protect_git_corvid_envrc_and_editor_folders() {
        let p = ProtectedPaths::new(&[], None, None).unwrap();
        for rel in [
            ".git/config",
            "sub/.git/hooks/x",
            ".corvid/settings.json",
            ".envrc",
            "a/.envrc",
            ".vscode/tasks.json",
            ".idea/workspace.xml",
        ] {
            assert!(p.reason(&at(rel)).is_some(), "{rel}");
        }
        assert_eq!(p.reason(&at("src/main.rs")), None);
        assert_eq!(
            p.reason(&at(".git/config")).unwrap(),
            "`.git/config` is a protected path: changes there can run commands (git hooks, \
             `core.fsmonitor` and other config)"
        );
    }

    #[test]
    fn a_negated_entry_removes_a_default() {
        let p = ProtectedPaths::new(&["!.idea/".to_owned()], None, None).unwrap();
        assert_eq!(p.reason(&at(".idea/workspace.xml")), None);
        assert!(p.reason(&at(".vscode/tasks.json")).is_some());
    }

    #[test]
    fn the_corvid_home_is_protected() {
        let p = ProtectedPaths::new(&[], Some(Path::new("/home/u/.corvid")), None).unwrap();
        let inside = vec![TouchedPath {
            abs: PathBuf::from("/home/u/.corvid/settings.json"),
            rel: None,
        }];
        assert!(
            p.reason(&inside)
                .unwrap()
                .contains("your corvid settings and sessions")
        );
    }

    #[test]
    fn a_bad_entry_is_named() {
        let err = ProtectedPaths::new(&["keys/[".to_owned()], None, None).unwrap_err();
        assert!(
            err.starts_with("entry `keys/[` is not a valid glob"),
            "{err}"
        );
    }
}
