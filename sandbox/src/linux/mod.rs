//! Linux: Landlock confines the file system, a seccomp filter takes the network and terminal
//! injection away, the capabilities that read other processes' memory are dropped, `setsid`
//! takes the controlling terminal away, and `PR_SET_PDEATHSIG` ties the child's life to
//! corvid's.

mod child;
mod filesystem;
mod seccomp;

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use crate::{SandboxLevel, Unavailable};

/// The Landlock ruleset and seccomp program for one child, ready before the fork.
#[derive(Debug)]
pub(crate) struct Prepared {
    landlock: Option<OwnedFd>,
    seccomp: Option<seccompiler::BpfProgram>,
    /// The private temp folder the child's `TMPDIR` names, when its temp dirs hold the workspace.
    private_tmp: Option<PathBuf>,
}

impl Prepared {
    pub(crate) fn unconfined() -> Self {
        Self {
            landlock: None,
            seccomp: None,
            private_tmp: None,
        }
    }

    pub(crate) fn new(
        level: SandboxLevel,
        workspace: &Path,
        existing: &[PathBuf],
        keep_read_only: &[PathBuf],
    ) -> Result<Self, Unavailable> {
        check_workspace(workspace)?;
        let grants = filesystem::grants(level, workspace, existing, keep_read_only);
        Ok(Self {
            landlock: Some(filesystem::ruleset(&grants)?),
            seccomp: Some(seccomp::filter()?),
            private_tmp: grants.private_tmp,
        })
    }

    pub(crate) fn apply_to(self, command: &mut std::process::Command) {
        if let Some(dir) = &self.private_tmp {
            command.env("TMPDIR", dir);
        }
        child::install(child::ChildSetup::new(self.landlock, self.seccomp), command);
    }
}

/// Makes `command`'s child drop what would let it read corvid's memory or environment.
pub(crate) fn keep_key_out_of_reach(command: &mut std::process::Command) {
    child::install(child::ChildSetup::key_out_of_reach(), command);
}

pub(crate) fn supported() -> Result<(), Unavailable> {
    filesystem::supported()
}

/// What [`Prepared::new`] needs, without building anything for a command.
pub(crate) fn available(workspace: &Path) -> Result<(), Unavailable> {
    check_workspace(workspace)?;
    supported()?;
    seccomp::filter().map(drop)
}

/// Rules skip paths that cannot be opened, so a missing workspace must be caught first.
fn check_workspace(workspace: &Path) -> Result<(), Unavailable> {
    if !workspace.is_absolute() || !workspace.is_dir() {
        return Err(Unavailable(format!(
            "the workspace {} is not an existing absolute folder",
            workspace.display()
        )));
    }
    Ok(())
}
