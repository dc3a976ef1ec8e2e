//! OS confinement for corvid's shell commands. The confinement is prepared in corvid (rules
//! built, paths opened, filters compiled) and applied in the child between fork and exec, so
//! only the command is confined and nothing allocates after the fork.
//!
//! Linux uses Landlock (file system), seccomp (network, terminal injection) and a capability
//! drop (other processes' memory), and runs every command in a session of its own, without a
//! controlling terminal. Other systems have no
//! implementation yet (macOS Seatbelt would be a `platform` module of its own) and report the
//! sandbox as unavailable, so the caller asks before running unconfined.

use std::path::{Path, PathBuf};

#[cfg(target_os = "linux")]
mod linux;
mod names;

#[cfg(target_os = "linux")]
use linux as platform;
pub use names::{AfterCheck, CheckReport, PROTECTED_NAMES, WALK_LIMIT};

#[cfg(not(target_os = "linux"))]
mod unsupported;
#[cfg(not(target_os = "linux"))]
use unsupported as platform;

/// How the private temp folders (see [`Confinement::prepare`]) are named: this prefix, then
/// the pid of the corvid process that made them, a dash and a stamp.
pub const PRIVATE_TMP_PREFIX: &str = "corvid-sandbox-tmp-";

/// Where private temp folders are made, first choice first.
pub const PRIVATE_TMP_PARENTS: [&str; 3] = ["/var/tmp", "/tmp", "/dev/shm"];

/// How far a shell command may reach (`tools.sandbox`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxLevel {
    /// No confinement: the command can do whatever the user can.
    Off,
    /// Reads anywhere; writes only in the workspace and temp dirs; no network.
    #[default]
    WorkspaceWrite,
    /// Reads anywhere; no writes (but `/dev/null` and the like); no network.
    ReadOnly,
}

impl SandboxLevel {
    /// The settings spelling (`off`, `workspace-write`, `read-only`).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "off" => Some(Self::Off),
            "workspace-write" => Some(Self::WorkspaceWrite),
            "read-only" => Some(Self::ReadOnly),
            _ => None,
        }
    }

    /// The settings spelling of this level.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::WorkspaceWrite => "workspace-write",
            Self::ReadOnly => "read-only",
        }
    }
}

/// Why the sandbox cannot be set up here; the command must not run silently unconfined.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unavailable(pub String);

/// What one child gets between fork and exec, built before the fork.
#[derive(Debug)]
pub struct Confinement {
    level: SandboxLevel,
    prepared: platform::Prepared,
    after: Option<AfterCheck>,
}

impl Confinement {
    /// No sandbox; the child still dies with corvid where the system allows it.
    pub fn unconfined() -> Self {
        Self {
            level: SandboxLevel::Off,
            prepared: platform::Prepared::unconfined(),
            after: None,
        }
    }

    /// Prepares `level` for a command whose workspace is `workspace` (an absolute path).
    /// `keep_read_only` names folders that stay read-only even inside the workspace or a temp
    /// dir (`$CORVID_HOME`: writing it would change the user's settings). In
    /// `workspace-write`, the workspace is walked for [`PROTECTED_NAMES`] at any depth: the
    /// existing ones stay read-only, and [`Confinement::apply_to`] returns the check that finds
    /// the ones the command creates.
    pub fn prepare(
        level: SandboxLevel,
        workspace: &Path,
        keep_read_only: &[PathBuf],
    ) -> Result<Self, Unavailable> {
        if level == SandboxLevel::Off {
            return Ok(Self::unconfined());
        }
        let after = (level == SandboxLevel::WorkspaceWrite).then(|| {
            let canonical = workspace
                .canonicalize()
                .unwrap_or_else(|_| workspace.to_owned());
            AfterCheck::before(&canonical)
        });
        let existing: Vec<PathBuf> = after
            .iter()
            .flat_map(|check| check.existing().iter().cloned())
            .collect();
        Ok(Self {
            level,
            prepared: platform::Prepared::new(level, workspace, &existing, keep_read_only)?,
            after,
        })
    }

    /// The level this confinement enforces.
    pub fn level(&self) -> SandboxLevel {
        self.level
    }

    /// Makes `command`'s child apply this confinement right before it executes; what it
    /// returns must run once the command is over (`workspace-write` only).
    #[must_use = "the check finds protected entries the command created"]
    pub fn apply_to(self, command: &mut std::process::Command) -> Option<AfterCheck> {
        self.prepared.apply_to(command);
        self.after
    }
}

/// Whether [`Confinement::prepare`] would succeed for `level` in `workspace`, without the
/// walk and the rules it builds (for asking before a command, on an async thread).
pub fn available(level: SandboxLevel, workspace: &Path) -> Result<(), Unavailable> {
    if level == SandboxLevel::Off {
        return Ok(());
    }
    platform::available(workspace)
}

/// Makes the child of `command`, a program corvid starts without confining it (an MCP
/// server), unable to read corvid's memory or environment even as root: it loses the
/// capabilities that would let it (`CAP_SYS_PTRACE`, `CAP_SYS_ADMIN`, ...). Commands get the
/// same through [`Confinement::apply_to`], confined or not.
pub fn keep_key_out_of_reach(command: &mut std::process::Command) {
    platform::keep_key_out_of_reach(command);
}

/// Whether this system can confine commands at all (tests and CI ask this).
pub fn supported() -> Result<(), Unavailable> {
    platform::supported()
}

/// Removes the private temp folders of corvid processes that are gone (killed before their
/// watchdog could clean up); only folders owned by this user, never through a link. Run
/// before this process makes its own.
pub fn remove_stale_private_tmps() {
    for parent in PRIVATE_TMP_PARENTS {
        let Ok(entries) = std::fs::read_dir(parent) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|n| n.strip_prefix(PRIVATE_TMP_PREFIX))
                .and_then(|rest| rest.split('-').next())
                .and_then(|pid| pid.parse::<u32>().ok())
            else {
                continue;
            };
            if pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() {
                continue;
            }
            let path = entry.path();
            let mine = std::fs::symlink_metadata(&path).is_ok_and(|meta| {
                use std::os::unix::fs::MetadataExt;
                meta.is_dir() && meta.uid() == nix::unistd::geteuid().as_raw()
            });
            if mine && let Err(e) = std::fs::remove_dir_all(&path) {
                tracing::debug!("could not remove {}: {e}", path.display());
            }
        }
    }
}
