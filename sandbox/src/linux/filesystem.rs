//! The Landlock ruleset: read and execute everywhere, write only where the level allows.
//!
//! Landlock rules grant rights to a whole hierarchy and cannot take them back below it, so a
//! workspace holding `.git` or `.corvid` is granted entry by entry instead of as a whole:
//! everything but those stays writable, and the root itself cannot gain or lose entries.

use std::fs::DirBuilder;
use std::os::fd::OwnedFd;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

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

/// Where a command may write, and the private temp folder its `TMPDIR` must name when a temp
/// dir could not be granted whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Grants {
    pub writable: Vec<PathBuf>,
    pub private_tmp: Option<PathBuf>,
}

/// A created ruleset for `grants`, as the file descriptor the child hands to
/// `landlock_restrict_self`.
pub(super) fn ruleset(grants: &Grants) -> Result<OwnedFd, Unavailable> {
    let all = AccessFs::from_all(ABI_WANTED);
    let created = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .and_then(|r| r.scope(Scope::AbstractUnixSocket | Scope::Signal))
        .and_then(Ruleset::create)
        .and_then(|r| r.add_rules(path_beneath_rules(["/"], AccessFs::from_read(ABI_WANTED))))
        .and_then(|r| r.add_rules(path_beneath_rules(&grants.writable, all)))
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
pub(super) fn grants(level: SandboxLevel, workspace: &Path) -> Grants {
    let mut writable: Vec<PathBuf> = DEVICES.iter().map(PathBuf::from).collect();
    if level != SandboxLevel::WorkspaceWrite {
        return Grants {
            writable,
            private_tmp: None,
        };
    }
    let (temps, private_tmp) = temp_grants(workspace);
    writable.extend(temps);
    writable.extend(workspace_grants(workspace));
    Grants {
        writable,
        private_tmp,
    }
}

/// The temp dirs a command may write to. A temp dir that holds the workspace (a project in
/// `/tmp`) is not granted whole, since that would make the workspace's `.git` and `.corvid`
/// writable again (Landlock cannot take rights back below a grant); the command gets a
/// private temp folder instead, which its `TMPDIR` names.
fn temp_grants(workspace: &Path) -> (Vec<PathBuf>, Option<PathBuf>) {
    let mut roots: Vec<PathBuf> = TEMP_DIRS.iter().map(PathBuf::from).collect();
    if let Some(tmp) = std::env::var_os("TMPDIR").map(PathBuf::from)
        && tmp.is_absolute()
    {
        roots.push(tmp);
    }
    let workspace = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_owned());
    let (holding, granted): (Vec<PathBuf>, Vec<PathBuf>) = roots
        .into_iter()
        .partition(|root| workspace.starts_with(root.canonicalize().unwrap_or(root.clone())));
    let private_tmp = if holding.is_empty() {
        None
    } else {
        private_tmp(&workspace)
    };
    (
        granted.into_iter().chain(private_tmp.clone()).collect(),
        private_tmp,
    )
}

/// One private temp folder (0700) per corvid process, made on first need outside the
/// workspace; `None` when none can be made (the command then has no writable temp dir).
fn private_tmp(workspace: &Path) -> Option<PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let parents = ["/var/tmp", "/tmp", "/dev/shm"].map(PathBuf::from);
        parents.iter().find_map(|parent| {
            if parent.starts_with(workspace) {
                return None;
            }
            let dir = parent.join(format!(
                "corvid-sandbox-tmp-{}-{nanos:08x}",
                std::process::id()
            ));
            // `create` fails on anything already there, a planted symlink included.
            DirBuilder::new().mode(0o700).create(&dir).ok()?;
            Some(dir)
        })
    })
    .clone()
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
        let grants = grants(SandboxLevel::ReadOnly, dir.path());
        assert_eq!(
            grants,
            Grants {
                writable: DEVICES.iter().map(PathBuf::from).collect(),
                private_tmp: None,
            }
        );
    }

    #[test]
    fn a_temp_dir_holding_the_workspace_is_not_granted_whole() {
        let dir = tempfile::tempdir_in("/tmp").unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();

        let grants = grants(SandboxLevel::WorkspaceWrite, dir.path());

        assert!(!grants.writable.contains(&PathBuf::from("/tmp")));
        let private = grants.private_tmp.expect("a private temp folder");
        assert!(grants.writable.contains(&private));
        assert!(!private.starts_with(dir.path()));
    }
}
