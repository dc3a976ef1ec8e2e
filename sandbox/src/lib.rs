//! OS confinement for corvid's shell commands. The confinement is prepared in corvid (rules
//! built, paths opened, filters compiled) and applied in the child between fork and exec, so
//! only the command is confined and nothing allocates after the fork.
//!
//! Linux uses Landlock (file system) and seccomp (network). Other systems have no
//! implementation yet (macOS Seatbelt would be a `platform` module of its own) and report the
//! sandbox as unavailable, so the caller asks before running unconfined.

use std::path::Path;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as platform;

#[cfg(not(target_os = "linux"))]
mod unsupported;
#[cfg(not(target_os = "linux"))]
use unsupported as platform;

/// Entries at the workspace root that stay read-only in `workspace-write`: writing them lets a
/// command change what runs later outside the sandbox (git hooks and config, corvid settings).
pub const PROTECTED_ENTRIES: [&str; 2] = [".git", ".corvid"];

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
}

impl Confinement {
    /// No sandbox; the child still dies with corvid where the system allows it.
    pub fn unconfined() -> Self {
        Self {
            level: SandboxLevel::Off,
            prepared: platform::Prepared::unconfined(),
        }
    }

    /// Prepares `level` for a command whose workspace is `workspace` (an absolute path).
    pub fn prepare(level: SandboxLevel, workspace: &Path) -> Result<Self, Unavailable> {
        if level == SandboxLevel::Off {
            return Ok(Self::unconfined());
        }
        Ok(Self {
            level,
            prepared: platform::Prepared::new(level, workspace)?,
        })
    }

    /// The level this confinement enforces.
    pub fn level(&self) -> SandboxLevel {
        self.level
    }

    /// Makes `command`'s child apply this confinement right before it executes.
    pub fn apply_to(self, command: &mut std::process::Command) {
        self.prepared.apply_to(command);
    }
}

/// Whether this system can confine commands at all (tests and CI ask this).
pub fn supported() -> Result<(), Unavailable> {
    platform::supported()
}
