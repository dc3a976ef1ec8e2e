//! The Landlock ruleset: read and execute everywhere, write only where the level allows.
//!
//! Landlock rules grant rights to a whole hierarchy and cannot take them back below it, so a
//! workspace holding `.git` or `.corvid` is granted entry by entry instead of as a whole:
//! everything but those stays writable, and the root itself cannot gain or lose entries.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
    Scope, path_beneath_rules,
};

use crate::{PROTECTED_ENTRIES, SandboxLevel, Unavailable};

/// The newest rights corvid asks for; older kernels enforce what they know (best effort).
const ABI_WANTED: ABI = ABI::V6;

/// Devices every command may write to, whatever the level.
const DEVICES: [&str; 8] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// Temp dirs `workspace-write` commands may write to (plus `$TMPDIR`).
const TEMP_DIRS: [&str; 3] = ["/tmp", "/var/tmp", "/dev/shm"];

/// A created ruleset for `level`, as the file descriptor the child hands to
/// `landlock_restrict_self`.
pub(super) fn ruleset(level: SandboxLevel, workspace: &Path) -> Result<OwnedFd, Unavailable> {
    let all = AccessFs::from_all(ABI_WANTED);
    let created = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .and_then(|r| r.scope(Scope::AbstractUnixSocket | Scope::Signal))
        .and_then(Ruleset::create)
        .and_then(|r| r.add_rules(path_beneath_rules(["/"], AccessFs::from_read(ABI_WANTED))))
        .and_then(|r| r.add_rules(path_beneath_rules(writable_paths(level, workspace), all)))
        .map_err(|e| Unavailable(format!("the Landlock ruleset could not be built: {e}")))?;
    Option::<OwnedFd>::from(created).ok_or_else(no_landlock)
}

/// Whether the kernel offers Landlock at all.
pub(super) fn supported() -> Result<(), Unavailable> {
    let created = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::Execute)
        .and_then(Ruleset::create)
        .map_err(|e| Unavailable(format!("Landlock could not be queried: {e}")))?;
    Option::<OwnedFd>::from(created)
        .map(drop)
        .ok_or_else(no_landlock)
}

fn no_landlock() -> Unavailable {
    Unavailable(
        "this kernel does not offer Landlock (Linux 5.13 or later with `landlock` in its LSM list \
         is needed)"
            .to_owned(),
    )
}

/// Where `level` lets a command write. Paths that do not exist are skipped by the rule builder.
pub(super) fn writable_paths(level: SandboxLevel, workspace: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = DEVICES.iter().map(PathBuf::from).collect();
    if level != SandboxLevel::WorkspaceWrite {
        return paths;
    }
    paths.extend(TEMP_DIRS.iter().map(PathBuf::from));
    if let Some(tmp) = std::env::var_os("TMPDIR").map(PathBuf::from)
        && tmp.is_absolute()
    {
        paths.push(tmp);
    }
    paths.extend(workspace_grants(workspace));
    paths
}

/// The workspace itself, or, when it holds a protected entry, each of its other entries.
/// Symlinks at the root are never granted: the rule would follow them out of the workspace.
fn workspace_grants(workspace: &Path) -> Vec<PathBuf> {
    let protected = PROTECTED_ENTRIES
        .iter()
        .any(|name| workspace.join(name).symlink_metadata().is_ok());
    if !protected {
        return vec![workspace.to_owned()];
    }
    let Ok(entries) = std::fs::read_dir(workspace) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|entry| {
            let name = entry.file_name();
            !PROTECTED_ENTRIES.iter().any(|p| name == *p)
                && entry.file_type().is_ok_and(|t| !t.is_symlink())
        })
        .map(|entry| entry.path())
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_workspace_with_git_is_granted_entry_by_entry_without_git_corvid_or_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        for d in [".git", ".corvid", "src"] {
            std::fs::create_dir(ws.join(d)).unwrap();
        }
        std::fs::write(ws.join("Cargo.toml"), "").unwrap();
        std::os::unix::fs::symlink("/etc", ws.join("etc-link")).unwrap();

        let mut grants = workspace_grants(ws);
        grants.sort();

        assert_eq!(grants, vec![ws.join("Cargo.toml"), ws.join("src")]);
    }

    #[test]
    fn a_workspace_without_protected_entries_is_granted_whole() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(workspace_grants(dir.path()), vec![dir.path().to_owned()]);
    }

    #[test]
    fn read_only_grants_only_devices() {
        let dir = tempfile::tempdir().unwrap();
        let paths = writable_paths(SandboxLevel::ReadOnly, dir.path());
        assert_eq!(paths, DEVICES.iter().map(PathBuf::from).collect::<Vec<_>>());
    }
}
