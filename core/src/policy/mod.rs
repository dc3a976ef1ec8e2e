//! What a session may do without asking: permission rules, protected paths, turn limits and
//! the shell's confinement. Policy is decided here, in the core; tools enforce what they are
//! handed, and front ends only show it.

pub mod path_pattern;
pub mod protected;
pub mod read_only;
pub mod rules;
pub mod scope;
pub mod shell_words;
pub mod unasked;

/// The policies of one session, fixed when it starts (from settings, see
/// [`crate::settings::agent_config`]).
#[derive(Debug, Clone, Default)]
pub struct SessionPolicy {
    /// Paths whose change is asked in every mode but `yolo` (`tools.protectedPaths`).
    pub protected: protected::ProtectedPaths,
    /// `tools.allow` / `tools.deny`.
    pub rules: rules::PermissionRules,
    /// `agent.maxTurns`.
    pub max_turns: MaxTurns,
    /// `tools.sandbox` and `tools.shellEnv`: how shell commands are confined and which
    /// variables they inherit.
    pub shell: corvid_tools::shell::ShellPolicy,
    /// `model.supportsImages`: whether prompts with images may go to the model.
    pub images: crate::images::ImageSupport,
    /// `model.contextWindow`, `model.compactThreshold`, `model.autoCompact`.
    pub context: crate::context::ContextPolicy,
    /// `tools.maxResultTokens`: how much of one tool result the history keeps.
    pub result_budget: crate::context::result_budget::ResultBudget,
    /// `agent.subagents`, `agent.subagentMaxTurns`: the `task` tool and its children's limit.
    pub subagents: Subagents,
    /// `agent.maxConcurrentSubagents`, `agent.maxSubagentsPerTurn`: how many `task` children
    /// run at once, and how many one model turn may start.
    pub subagent_caps: SubagentCaps,
    /// The model keys' values (by the variables the settings name), never written to the
    /// session's recording.
    pub recorded_secrets: crate::session::RecordedSecrets,
    /// The session's hooks (issue 27), loaded once at start; `None` when none are configured,
    /// so the loop does no work for them at all.
    pub hooks: Option<std::sync::Arc<crate::hooks::SessionHooks>>,
    /// `checkpoints.enabled`: whether undo can take a turn's changes back, which lets the
    /// `auto` approval mode run edits and sandboxed commands unasked.
    pub undo: unasked::Undo,
    /// Custom commands and skills (issue 29): a prompt `/name args` naming one is expanded;
    /// `None` in sessions without them.
    pub commands: Option<std::sync::Arc<crate::commands::Library>>,
    /// The session's checkpoints (issue 26); `None` when `checkpoints.enabled` is false or
    /// they could not be opened (the session starts with a warning saying so).
    pub checkpoints: Option<std::sync::Arc<crate::checkpoints::SessionCheckpoints>>,
}

/// Whether the model may hand self-contained jobs to child agents with the `task` tool.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Subagents {
    /// No `task` tool.
    #[default]
    Off,
    /// A `task` tool offering `types`, whose children stop after `max_turns` model turns or
    /// `time_limit`, whichever comes first.
    On {
        max_turns: MaxTurns,
        time_limit: std::time::Duration,
        types: crate::agents::AgentTypes,
    },
}

/// How many subagents a session runs: a model turn asking for more than `per_turn` children
/// gets the rest refused (as tool errors naming the cap), and at most `concurrent` run at once
/// (the others wait for a free slot). Each child is a full agent with its own model requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubagentCaps {
    pub concurrent: usize,
    pub per_turn: u32,
}

impl SubagentCaps {
    /// The default caps: 4 at once, 16 per model turn.
    pub const DEFAULT: Self = Self {
        concurrent: 4,
        per_turn: 16,
    };
}

impl Default for SubagentCaps {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The most model turns one task may take (`agent.maxTurns`): a model that keeps calling tools
/// is stopped there, and the user decides whether to go on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaxTurns(pub u32);

impl MaxTurns {
    /// The limit when settings give none.
    pub const DEFAULT: Self = Self(100);
    /// The limit of a subagent (a `task` call's child): a focused job needs fewer turns.
    pub const SUBAGENT_DEFAULT: Self = Self(40);
}

/// How long a subagent may work when settings give no `agent.subagentTimeoutMs`.
pub const SUBAGENT_DEFAULT_TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(600);

impl Default for MaxTurns {
    fn default() -> Self {
        Self::DEFAULT
    }
}
