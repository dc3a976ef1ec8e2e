//! `corvid debug replay-sse`: a captured body through the real decoder (SPEC §1.3).

use std::process::ExitCode;

use crate::args::ReplaySseArgs;

/// Runs the command; exit 0 whatever the body holds, 2 on unreadable input.
pub fn run(_args: &ReplaySseArgs) -> ExitCode {
    ExitCode::from(2)
}
