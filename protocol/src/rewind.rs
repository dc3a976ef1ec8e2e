//! Rewind: what front ends ask for when the user undoes earlier turns, and what the core
//! answers. The checkpoints themselves live in `corvid-checkpoint`; these are only the
//! words front ends and the core share.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What a rewind puts back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewindScope {
    /// The workspace's files only; the model is told which files were restored.
    Code,
    /// The model's history only: it forgets the turn and everything after it.
    Conversation,
    /// Both (what `/undo` does for the last turn).
    #[default]
    Both,
}

impl RewindScope {
    /// Whether the workspace's files are restored.
    pub fn code(self) -> bool {
        matches!(self, Self::Code | Self::Both)
    }

    /// Whether the model's history is cut back.
    pub fn conversation(self) -> bool {
        matches!(self, Self::Conversation | Self::Both)
    }

    /// The flag and wire name (`code`, `conversation`, `both`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Code => "code",
            Self::Conversation => "conversation",
            Self::Both => "both",
        }
    }
}

/// What a finished rewind did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewindReport {
    /// The files put back as they were before the turn (paths relative to the workspace).
    pub restored: Vec<PathBuf>,
    /// Files the user changed after the agent did, left as they are.
    pub kept_conflicts: Vec<PathBuf>,
    /// Files that could not be restored, each with the reason.
    pub unrestorable: Vec<String>,
    /// The number of history messages kept when the conversation was cut back.
    pub kept_messages: Option<u32>,
}

impl RewindReport {
    /// One short paragraph for people about a finished rewind (every front end shows this).
    pub fn describe(&self, turn: u32, scope: RewindScope, error: Option<&str>) -> String {
        if let Some(error) = error {
            return format!("Nothing was rewound: {error}");
        }
        let mut out = format!("Rewound ({}) to before turn {turn}.", scope.as_str());
        if scope.code() {
            out.push_str(&format!(" Restored {} file(s)", self.restored.len()));
            if !self.kept_conflicts.is_empty() {
                let kept: Vec<String> = self
                    .kept_conflicts
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect();
                out.push_str(&format!("; kept your later edits to {}", kept.join(", ")));
            }
            out.push('.');
            for line in &self.unrestorable {
                out.push_str(&format!(" Not restored: {line}."));
            }
        }
        if let Some(kept) = self.kept_messages {
            out.push_str(&format!(
                " The conversation keeps its first {kept} messages."
            ));
        }
        out
    }
}
