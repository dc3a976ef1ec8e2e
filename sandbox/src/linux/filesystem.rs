//! The Landlock ruleset: read and execute everywhere, write only where the level allows.
//!
//! Landlock rules grant rights to a whole hierarchy and cannot take them back below it, so a
//! folder holding a protected path (an entry with a protected name at any depth, or
//! `$CORVID_HOME`) is granted entry by entry instead of as a whole, down to the protected path:
//! everything else stays writable, and each folder on the way cannot gain or lose entries.

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

use crate::{PRIVATE_TMP_PARENTS, PRIVATE_TMP_PREFIX, SandboxLevel, Unavailable};

/// The newest rights corvid asks for; older kernels enforce what they know (best effort).
const ABI_WANTED: ABI = ABI::V6;

/// Devices every command may write to, whatever the level. Not `/dev/tty`: commands have no
/// controlling terminal, and must not reach the user's.
const DEVICES: [&str; 7] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
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
/// `existing` are the protected entries found in the workspace, `keep_read_only` other folders
/// that must stay read-only wherever they are (`$CORVID_HOME`).
pub(super) fn grants(
    level: SandboxLevel,
    workspace: &Path,
    existing: &[PathBuf],
    keep_read_only: &[PathBuf],
) -> Grants {
    let mut writable: Vec<PathBuf> = DEVICES.iter().map(PathBuf::from).collect();
    if level != SandboxLevel::WorkspaceWrite {
        return Grants {
            writable,
            private_tmp: None,
        };
    }
    let workspace = canonical(workspace);
    let kept: Vec<PathBuf> = keep_read_only.iter().map(|p| canonical(p)).collect();
    let (temps, private_tmp) = temp_grants(&workspace, &kept);
    writable.extend(temps);
    let protected: Vec<PathBuf> = existing.iter().cloned().chain(kept).collect();
    grant_around(&workspace, &protected, &mut writable);
    Grants {
        writable,
        private_tmp,
    }
}

/// `path` canonical; when it does not exist (yet), its parent's canonical form plus its name,
/// so a folder that may be created later is still recognised.
fn canonical(path: &Path) -> PathBuf {
    if let Ok(path) = path.canonicalize() {
        return path;
    }
    match (
        path.parent().and_then(|p| p.canonicalize().ok()),
        path.file_name(),
    ) {
        (Some(parent), Some(name)) => parent.join(name),
        _ => path.to_owned(),
    }
}

/// The temp dirs a command may write to. A temp dir that holds the workspace (a project in
/// `/tmp`) or a folder kept read-only is not granted whole, since that would make the
/// workspace's protected entries or that folder writable again (Landlock cannot take rights
/// back below a grant); the command gets a private temp folder instead, which its `TMPDIR`
/// names.
fn temp_grants(workspace: &Path, kept: &[PathBuf]) -> (Vec<PathBuf>, Option<PathBuf>) {
    let mut roots: Vec<PathBuf> = TEMP_DIRS.iter().map(PathBuf::from).collect();
    if let Some(tmp) = std::env::var_os("TMPDIR").map(PathBuf::from)
        && tmp.is_absolute()
    {
        roots.push(tmp);
    }
    let (holding, granted): (Vec<PathBuf>, Vec<PathBuf>) = roots.into_iter().partition(|root| {
        let root = root.canonicalize().unwrap_or(root.clone());
        std::iter::once(workspace)
            .chain(kept.iter().map(PathBuf::as_path))
            .any(|inside| inside.starts_with(&root))
    });
    let private_tmp = if holding.is_empty() {
        None
    } else {
        private_tmp(workspace, kept)
    };
    (
        granted.into_iter().chain(private_tmp.clone()).collect(),
        private_tmp,
    )
}

/// One private temp folder (0700) per corvid process, made on first need outside the
/// workspace and the folders kept read-only; `None` when none can be made (the command then
/// has no writable temp dir). The shell's watchdog removes it when corvid exits; the folders
/// of corvid processes that died without that are removed before this one is made.
fn private_tmp(workspace: &Path, kept: &[PathBuf]) -> Option<PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        crate::remove_stale_private_tmps();
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        PRIVATE_TMP_PARENTS
            .iter()
            .map(PathBuf::from)
            .find_map(|parent| {
                let inside = |dir: &Path| parent.starts_with(dir);
                if inside(workspace) || kept.iter().any(|k| inside(k)) {
                    return None;
                }
                let dir = parent.join(format!(
                    "{PRIVATE_TMP_PREFIX}{}-{nanos:08x}",
                    std::process::id()
                ));
                // `create` fails on anything already there, a planted symlink included.
                DirBuilder::new().mode(0o700).create(&dir).ok()?;
                Some(dir)
            })
    })
    .clone()
}

/// Grants `dir` whole when no protected path lies at or below it; otherwise each of its
/// entries the same way, so the protected paths and the folders leading to them are the only
/// parts left out. Symlinks inside a folder granted entry by entry are never granted: the rule
/// would follow them out of it.
fn grant_around(dir: &Path, protected: &[PathBuf], out: &mut Vec<PathBuf>) {
    if protected.iter().any(|p| p == dir) {
        return;
    }
    if !protected.iter().any(|p| p.starts_with(dir)) {
        out.push(dir.to_owned());
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        if entry.file_type().is_ok_and(|t| !t.is_symlink()) {
            grant_around(&entry.path(), protected, out);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_nested_protected_path_is_carved_out_down_to_its_folder() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        for d in ["a/b/home", "a/c", "d"] {
            std::fs::create_dir_all(ws.join(d)).unwrap();
        }
        std::fs::write(ws.join("a/b/file"), "").unwrap();

        let mut grants = Vec::new();
        grant_around(ws, &[ws.join("a/b/home")], &mut grants);
        grants.sort();

        assert_eq!(
            grants,
            vec![ws.join("a/b/file"), ws.join("a/c"), ws.join("d")]
        );
    }

    #[test]
    fn a_workspace_with_git_is_granted_entry_by_entry_without_git_corvid_or_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        for d in [".git", ".corvid", "src"] {
            std::fs::create_dir(ws.join(d)).unwrap();
        }
        std::fs::write(ws.join("Cargo.toml"), "").unwrap();
        std::os::unix::fs::symlink("/etc", ws.join("etc-link")).unwrap();

        let mut grants = Vec::new();
        grant_around(ws, &[ws.join(".git"), ws.join(".corvid")], &mut grants);
        grants.sort();

        assert_eq!(grants, vec![ws.join("Cargo.toml"), ws.join("src")]);
    }

    #[test]
    fn a_workspace_without_protected_entries_is_granted_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut grants = Vec::new();
        grant_around(dir.path(), &[], &mut grants);
        assert_eq!(grants, vec![dir.path().to_owned()]);
    }

    #[test]
    fn read_only_grants_only_devices() {
        let dir = tempfile::tempdir().unwrap();
        let grants = grants(SandboxLevel::ReadOnly, dir.path(), &[], &[]);
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

        let ws = dir.path().canonicalize().unwrap();
        let grants = grants(SandboxLevel::WorkspaceWrite, &ws, &[ws.join(".git")], &[]);

        assert!(!grants.writable.contains(&PathBuf::from("/tmp")));
        let private = grants.private_tmp.expect("a private temp folder");
        assert!(grants.writable.contains(&private));
        assert!(!private.starts_with(dir.path()));
    }
}
