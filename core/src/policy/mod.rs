//! What a session may do without asking: permission rules, protected paths, turn limits and
//! the shell's confinement. Policy is decided here, in the core; tools enforce what they are
//! handed, and front ends only show it.

/// The policies of one session, fixed when it starts (from settings, see
/// [`crate::settings::agent_config`]).
#[derive(Debug, Clone, Default)]
pub struct SessionPolicy {
    /// `tools.sandbox` and `tools.shellEnv`: how shell commands are confined and which
    /// variables they inherit.
    pub shell: corvid_tools::shell::ShellPolicy,
    /// `model.supportsImages`: whether prompts with images may go to the model.
    pub images: crate::images::ImageSupport,
}
