//! Hooks: the user's own programs run at fixed points of a session, configured exactly as
//! Claude Code's `hooks` block so teams can paste theirs unchanged (issue 27).
//!
//! This module holds what the format and the contract mean: the configuration and where it
//! comes from ([`config`]), which handlers an event selects ([`matcher`], with Claude's tool
//! names in [`claude_names`]), the JSON each handler reads and what its exit code and output
//! decide ([`contract`]), and the decision of all handlers of one event together
//! ([`outcome`]). Processes are run by `corvid_tools::hooks_runner`. The agent loop calls
//! [`Hooks::run`] once per event.

mod block;
pub mod claude_names;
pub mod condition;
pub mod config;
pub mod contract;
pub mod lifecycle;
mod locate;
pub mod matcher;
pub mod outcome;
pub mod review;
mod run;
pub mod session;
pub mod session_events;

pub use config::{Handler, HookConfigError, HookScope, HookSource, HooksConfig};
pub use contract::{HookContext, HookPayload};
pub use matcher::Matcher;
pub use outcome::{Decision, HandlerReport, HookOutcome};
pub use review::PendingHook;
pub use run::{HookRunner, Hooks};
pub use session::SessionHooks;

/// The events a handler can be configured for, named as in Claude Code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HookEvent {
    /// A session starts; matcher on the source (`startup|resume|clear|compact`).
    SessionStart,
    /// The user submitted a prompt, before the model sees it.
    UserPromptSubmit,
    /// A tool call is about to run; matcher on the tool name.
    PreToolUse,
    /// A tool call succeeded; matcher on the tool name.
    PostToolUse,
    /// A tool call failed; matcher on the tool name.
    PostToolUseFailure,
    /// The agent is about to end its turn.
    Stop,
    /// A subagent is about to end; matcher on its type.
    SubagentStop,
    /// The conversation is about to be compacted; matcher on `manual|auto`.
    PreCompact,
    /// corvid notifies the user; matcher on the notification type.
    Notification,
    /// The session ends.
    SessionEnd,
}

impl HookEvent {
    /// Every event, in the order lists show them.
    pub const ALL: [HookEvent; 10] = [
        Self::SessionStart,
        Self::UserPromptSubmit,
        Self::PreToolUse,
        Self::PostToolUse,
        Self::PostToolUseFailure,
        Self::Stop,
        Self::SubagentStop,
        Self::PreCompact,
        Self::Notification,
        Self::SessionEnd,
    ];

    /// Claude Code's name, used in settings and in `hook_event_name`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SessionStart => "SessionStart",
            Self::UserPromptSubmit => "UserPromptSubmit",
            Self::PreToolUse => "PreToolUse",
            Self::PostToolUse => "PostToolUse",
            Self::PostToolUseFailure => "PostToolUseFailure",
            Self::Stop => "Stop",
            Self::SubagentStop => "SubagentStop",
            Self::PreCompact => "PreCompact",
            Self::Notification => "Notification",
            Self::SessionEnd => "SessionEnd",
        }
    }

    /// The event named `name` (exact spelling, as Claude Code).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// Whether this event is about one tool call (its matcher selects tool names).
    pub fn is_tool_event(self) -> bool {
        matches!(
            self,
            Self::PreToolUse | Self::PostToolUse | Self::PostToolUseFailure
        )
    }

    /// Whether a matcher selects anything for this event; for the others Claude Code runs
    /// every handler whatever the matcher says.
    pub fn uses_matcher(self) -> bool {
        self.is_tool_event()
            || matches!(
                self,
                Self::SessionStart | Self::SubagentStop | Self::PreCompact | Self::Notification
            )
    }
}

impl std::fmt::Display for HookEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
