//! Names a sandboxed command may not create or write at any depth of the workspace: each
//! changes what runs later outside the sandbox (git hooks and config, corvid settings and MCP
//! servers, direnv, editor tasks). Landlock cannot say "no entry of this name anywhere", so
//! the entries that exist before a command are carved out of its grants (see `filesystem`),
//! and a walk after the command finds the ones it created and renames them out of the way.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// The protected names, matched exactly at every depth.
pub const PROTECTED_NAMES: [&str; 5] = [".git", ".corvid", ".envrc", ".vscode", ".idea"];

/// Entries a walk reads at most, so a huge tree costs a bounded time (twice per command);
/// past it the walk is incomplete, and nothing below the folders it did not list is renamed.
pub const WALK_LIMIT: usize = 200_000;

/// What a walk of the workspace found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Found {
    /// Every entry with a protected name, whatever its type; the walk does not descend into them.
    pub entries: BTreeSet<PathBuf>,
    /// Folders the walk could not list whole (unreadable, or left when the limit was reached):
    /// what lies below them is unknown.
    pub unlisted: Vec<PathBuf>,
}

impl Found {
    /// Whether the walk saw everything below `path` (so an entry there it did not report did
    /// not exist).
    fn saw(&self, path: &Path) -> bool {
        !self.unlisted.iter().any(|dir| path.starts_with(dir))
    }
}

/// Whether `name` is one of [`PROTECTED_NAMES`].
fn is_protected(name: &std::ffi::OsStr) -> bool {
    PROTECTED_NAMES.iter().any(|p| name == *p)
}

/// Every protected entry under `root`, never following symlinks and honouring no ignore file
/// (a command could write one to hide what it made).
pub(crate) fn find(root: &Path) -> Found {
    let mut found = Found::default();
    let mut seen = 0usize;
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            found.unlisted.push(dir);
            continue;
        };
        for entry in entries {
            let Ok(entry) = entry else {
                found.unlisted.push(dir.clone());
                break;
            };
            seen += 1;
            if seen > WALK_LIMIT {
                found.unlisted.push(dir);
                found.unlisted.append(&mut stack);
                return found;
            }
            if is_protected(&entry.file_name()) {
                found.entries.insert(entry.path());
            } else if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(entry.path());
            }
        }
    }
    found
}

/// The check to run once the command is over: it remembers what existed before.
#[derive(Debug)]
pub struct AfterCheck {
    workspace: PathBuf,
    before: Found,
}

/// What the check found: protected entries the command created, and what became of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Created entries renamed out of the way: (created path, new path).
    pub quarantined: Vec<(PathBuf, PathBuf)>,
    /// Created entries that could not be renamed, with the reason.
    pub failed: Vec<(PathBuf, String)>,
    /// The workspace was too large or partly unreadable, so entries may have been missed (or
    /// could not be told apart from ones that were there before, and were left alone).
    pub incomplete: bool,
}

impl CheckReport {
    /// Whether there is anything to tell the model and the user.
    pub fn is_empty(&self) -> bool {
        self.quarantined.is_empty() && self.failed.is_empty() && !self.incomplete
    }
}

impl AfterCheck {
    /// Walks `workspace` now, before the command runs.
    pub(crate) fn before(workspace: &Path) -> Self {
        Self {
            workspace: workspace.to_owned(),
            before: find(workspace),
        }
    }

    /// The protected entries found before the command (carved out of its grants).
    pub(crate) fn existing(&self) -> &BTreeSet<PathBuf> {
        &self.before.entries
    }

    /// Walks the workspace again and renames every protected entry that was not there before
    /// (`NAME.corvid-blocked-TIME`). An entry below a folder the first walk could not list is
    /// left alone: it may have been there, and be the user's.
    pub fn run(self) -> CheckReport {
        let after = find(&self.workspace);
        let mut report = CheckReport {
            incomplete: !self.before.unlisted.is_empty() || !after.unlisted.is_empty(),
            ..CheckReport::default()
        };
        let created = after
            .entries
            .difference(&self.before.entries)
            .filter(|entry| self.before.saw(entry));
        for created in created {
            match quarantine(&self.workspace, created) {
                Ok(moved) => report.quarantined.push((created.clone(), moved)),
                Err(e) => report.failed.push((created.clone(), e)),
            }
        }
        report
    }
}

/// Renames `entry` (inside `workspace`) to a name nothing reads, next to where it is. Every
/// folder on the way is opened without following symlinks and the rename is relative to the
/// opened parent, so a process swapping a folder for a link meanwhile cannot redirect it.
#[cfg(target_os = "linux")]
fn quarantine(workspace: &Path, entry: &Path) -> Result<PathBuf, String> {
    use nix::fcntl::{OFlag, RenameFlags, open, openat, renameat2};
    use nix::sys::stat::Mode;

    let relative = entry
        .strip_prefix(workspace)
        .map_err(|_| "it is not inside the workspace".to_owned())?;
    let Some(name) = relative.file_name() else {
        return Err("it has no name".to_owned());
    };
    let flags = OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_RDONLY;
    let mut dir = open(workspace, flags, Mode::empty()).map_err(|e| e.to_string())?;
    for part in relative.parent().into_iter().flat_map(Path::components) {
        let Component::Normal(part) = part else {
            return Err("its path is not plain".to_owned());
        };
        dir = openat(&dir, part, flags, Mode::empty()).map_err(|e| e.to_string())?;
    }
    let stamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut new_name = name.to_owned();
    new_name.push(format!(".corvid-blocked-{stamp}"));
    renameat2(
        &dir,
        name,
        &dir,
        new_name.as_os_str(),
        RenameFlags::RENAME_NOREPLACE,
    )
    .map_err(|e| e.to_string())?;
    Ok(entry.with_file_name(new_name))
}

#[cfg(not(target_os = "linux"))]
fn quarantine(_workspace: &Path, _entry: &Path) -> Result<PathBuf, String> {
    Err("this system cannot rename it safely".to_owned())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_walk_finds_protected_names_at_any_depth_without_entering_them() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        for d in [".git/hooks", "a/b/.corvid", "a/.vscode", "c"] {
            std::fs::create_dir_all(ws.join(d)).unwrap();
        }
        std::fs::write(ws.join("c/.envrc"), "").unwrap();
        std::os::unix::fs::symlink("/", ws.join("a/.idea")).unwrap();
        std::os::unix::fs::symlink("/etc", ws.join("c/etc")).unwrap();

        let found = find(ws);

        let expected: BTreeSet<PathBuf> =
            [".git", "a/b/.corvid", "a/.vscode", "c/.envrc", "a/.idea"]
                .iter()
                .map(|p| ws.join(p))
                .collect();
        assert_eq!(found.entries, expected);
        assert!(found.unlisted.is_empty());
    }

    #[test]
    fn only_entries_created_after_the_first_walk_are_renamed() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::create_dir_all(ws.join("old/.git")).unwrap();
        let check = AfterCheck::before(ws);
        std::fs::create_dir_all(ws.join("new/deep/.corvid")).unwrap();
        std::fs::write(ws.join("new/deep/.corvid/settings.json"), "{}").unwrap();

        let report = check.run();

        assert!(ws.join("old/.git").is_dir());
        assert!(!ws.join("new/deep/.corvid").exists());
        assert_eq!(report.quarantined.len(), 1, "{report:?}");
        let (created, moved) = &report.quarantined[0];
        assert_eq!(created, &ws.join("new/deep/.corvid"));
        assert!(moved.join("settings.json").is_file());
        assert!(report.failed.is_empty() && !report.incomplete);
    }

    #[test]
    fn entries_below_a_folder_the_first_walk_could_not_list_are_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::create_dir_all(ws.join("seen")).unwrap();
        let mut check = AfterCheck::before(ws);
        check.before.unlisted.push(ws.join("hidden"));
        std::fs::create_dir_all(ws.join("hidden/.git")).unwrap();
        std::fs::create_dir_all(ws.join("seen/.git")).unwrap();

        let report = check.run();

        assert!(ws.join("hidden/.git").is_dir());
        assert!(!ws.join("seen/.git").exists());
        assert_eq!(report.quarantined.len(), 1);
        assert!(report.incomplete);
    }
}
