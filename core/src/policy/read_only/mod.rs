//! Shell commands that only read, which every mode but `plan` runs without asking: a parsed
//! allowlist in the spirit of codex-rs's `is_safe_command`, written for corvid's own lexer.
//!
//! A line qualifies only when everything in it is certain and harmless:
//! - the lexer models the whole line and every part is plain (no command or process
//!   substitution, backticks, subshell, here-document, file output redirection, leading
//!   variable assignment or keyword; see [`super::shell_words`]);
//! - every word is exact (no `$x`, globs, braces or `~`, which could expand into an option
//!   such as `--pre=sh` from a file name the repository chose);
//! - every part of every pipeline and list runs an allowlisted program with options that
//!   cannot write, run another program or wait forever ([`programs`]);
//! - every path it names (operands, `--opt=value` values, `<` inputs) stays inside the
//!   workspace, links resolved: the file tools cannot read outside it either, so neither may
//!   a command nobody was asked about.

mod programs;

use std::path::{Component, Path, PathBuf};

use super::shell_words::{CommandLine, Word};

/// Whether `line` only reads inside `cwd` (see the module doc); `false` for anything unsure.
pub fn reads_only(line: &CommandLine, cwd: &Path) -> bool {
    line.prefix_safe()
        && line.parts().iter().all(|part| {
            let words = part.words();
            words.iter().chain(part.reads()).all(Word::exact)
                && programs::reads_only(words)
                && part.reads().iter().all(|w| inside(cwd, w.text()))
                && words.iter().skip(1).all(|w| names_inside(cwd, w.text()))
        })
}

/// Whether the path a word may name stays in the workspace: an operand as written, or an
/// option's value after `=`. Words that cannot be paths (`-la`) pass.
fn names_inside(cwd: &Path, word: &str) -> bool {
    let candidate = match word.strip_prefix('-') {
        Some(option) => match option.split_once('=') {
            Some((_, value)) => value,
            // A short option with its value attached (`-f../x`, `-f/etc/x`) is not taken
            // apart: any path-like value is refused.
            None if !option.starts_with('-') => {
                return !option.contains('/') && !option.contains("..");
            }
            None => return true,
        },
        None => word,
    };
    candidate.is_empty() || inside(cwd, candidate)
}

/// Whether `text`, taken as a path relative to `cwd`, stays inside it lexically and, when it
/// exists, once links are resolved.
fn inside(cwd: &Path, text: &str) -> bool {
    let joined = cwd.join(text);
    let Some(lexical) = normalize(&joined) else {
        return false;
    };
    if !lexical.starts_with(cwd) {
        return false;
    }
    match (std::fs::canonicalize(&joined), std::fs::canonicalize(cwd)) {
        (Ok(real), Ok(root)) => real.starts_with(root),
        // A path that does not exist reads nothing; a workspace that cannot be resolved
        // vouches for nothing.
        (Err(_), Ok(_)) => true,
        (_, Err(_)) => false,
    }
}

/// `path` with `.` and `..` taken out lexically; `None` when `..` climbs above the root.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            other => out.push(other),
        }
    }
    Some(out)
}
