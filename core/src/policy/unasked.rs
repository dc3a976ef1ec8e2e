//! What an approval mode alone lets run without asking, once deny rules, escalations and
//! protected paths have had their say (see `agent::approval`). Pure, so each mode's table is
//! tested without an agent.

use std::path::{Path, PathBuf};

use corvid_protocol::ApprovalMode;

use super::path_pattern::touched;
use super::protected::ProtectedPaths;
use super::shell_words::CommandLine;

/// Whether undo (checkpoints, issue 26) can take back what a call changes in the workspace.
/// `auto` rests on it: without undo it asks like `default`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Undo {
    /// Checkpoints are on: a turn's changes can be rewound.
    #[default]
    Available,
    /// Checkpoints are off (`checkpoints.enabled: false`).
    Unavailable,
}

impl Undo {
    /// `checkpoints.enabled` as an [`Undo`].
    pub fn from_enabled(enabled: bool) -> Self {
        if enabled {
            Self::Available
        } else {
            Self::Unavailable
        }
    }
}

/// Where a shell command runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confinement {
    /// In the OS sandbox: writes only in the workspace and temp dirs, no network.
    Sandboxed,
    /// Without a sandbox (the user turned it off).
    Unconfined,
}

/// What kind of call the mode decides on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// A file edit inside the workspace.
    Edit,
    /// A shell command; `reads_only` when [`super::read_only::reads_only`] vouches for it.
    Command {
        confinement: Confinement,
        reads_only: bool,
    },
    /// Anything else that asks (an MCP call, a fetch).
    Other,
}

/// Whether `mode` runs `call` without asking, given whether `undo` is available.
pub fn mode_allows(mode: ApprovalMode, call: Call, undo: Undo) -> bool {
    let undoable = undo == Undo::Available;
    match (mode, call) {
        (ApprovalMode::Yolo, _) => true,
        // Plan mode refuses what mutates before it gets here; nothing else runs unasked.
        (ApprovalMode::Plan, _) => false,
        (
            _,
            Call::Command {
                reads_only: true, ..
            },
        ) => true,
        (ApprovalMode::AutoEdit, Call::Edit) => true,
        (ApprovalMode::Auto, Call::Edit) => undoable,
        (
            ApprovalMode::Auto,
            Call::Command {
                confinement: Confinement::Sandboxed,
                ..
            },
        ) => undoable,
        (ApprovalMode::Default | ApprovalMode::Auto | ApprovalMode::AutoEdit, _) => false,
    }
}

/// Why a command that would run unasked must be asked after all: one of its words (loosely
/// split, so redirection targets and words inside substitutions count) names a protected
/// path in the workspace.
pub fn protected_in_command(
    protected: &ProtectedPaths,
    cwd: &Path,
    line: &CommandLine,
) -> Option<String> {
    let named: Vec<PathBuf> = line
        .loose_words()
        .iter()
        .filter_map(|w| match w.strip_prefix('-') {
            Some(option) => option.split_once('=').map(|(_, value)| value),
            None => Some(w.as_str()),
        })
        .map(|w| cwd.join(w))
        .collect();
    protected.reason(&touched(cwd, &named))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SANDBOXED: Call = Call::Command {
        confinement: Confinement::Sandboxed,
        reads_only: false,
    };
    const UNCONFINED: Call = Call::Command {
        confinement: Confinement::Unconfined,
        reads_only: false,
    };
    const READS: Call = Call::Command {
        confinement: Confinement::Unconfined,
        reads_only: true,
    };

    #[test]
    fn auto_runs_edits_and_sandboxed_commands_only_while_undo_is_available() {
        use ApprovalMode::Auto;
        assert!(mode_allows(Auto, Call::Edit, Undo::Available));
        assert!(mode_allows(Auto, SANDBOXED, Undo::Available));
        assert!(!mode_allows(Auto, UNCONFINED, Undo::Available));
        assert!(!mode_allows(Auto, Call::Other, Undo::Available));
        assert!(!mode_allows(Auto, Call::Edit, Undo::Unavailable));
        assert!(!mode_allows(Auto, SANDBOXED, Undo::Unavailable));
    }

    #[test]
    fn read_only_commands_run_unasked_in_every_mode_but_plan() {
        for mode in [
            ApprovalMode::Default,
            ApprovalMode::Auto,
            ApprovalMode::AutoEdit,
            ApprovalMode::Yolo,
        ] {
            assert!(mode_allows(mode, READS, Undo::Unavailable), "{mode:?}");
        }
        assert!(!mode_allows(ApprovalMode::Plan, READS, Undo::Available));
    }

    #[test]
    fn default_and_auto_edit_keep_asking_for_commands_that_may_write() {
        for mode in [ApprovalMode::Default, ApprovalMode::AutoEdit] {
            assert!(!mode_allows(mode, SANDBOXED, Undo::Available), "{mode:?}");
            assert!(!mode_allows(mode, UNCONFINED, Undo::Available), "{mode:?}");
        }
        assert!(!mode_allows(
            ApprovalMode::Default,
            Call::Edit,
            Undo::Available
        ));
        assert!(mode_allows(
            ApprovalMode::AutoEdit,
            Call::Edit,
            Undo::Unavailable
        ));
    }
}
