//! Systems without a sandbox implementation yet: every confined level is unavailable, so the
//! caller asks before running a command unconfined.

use std::path::{Path, PathBuf};

use crate::{SandboxLevel, Unavailable};

/// Nothing to apply.
#[derive(Debug)]
pub(crate) struct Prepared;

impl Prepared {
    pub(crate) fn unconfined() -> Self {
        Self
    }

    pub(crate) fn new(
        _level: SandboxLevel,
        _workspace: &Path,
        _existing: &[PathBuf],
        _keep_read_only: &[PathBuf],
    ) -> Result<Self, Unavailable> {
        Err(unavailable())
    }

    pub(crate) fn apply_to(self, _command: &mut std::process::Command) {}
}

/// Nothing to drop on systems without the Linux capability model here.
pub(crate) fn keep_key_out_of_reach(_command: &mut std::process::Command) {}

pub(crate) fn supported() -> Result<(), Unavailable> {
    Err(unavailable())
}

pub(crate) fn available(_workspace: &Path) -> Result<(), Unavailable> {
    Err(unavailable())
}

fn unavailable() -> Unavailable {
    Unavailable("corvid has no shell sandbox for this operating system yet".to_owned())
}
