//! The agent the terminal UI talks to, and swapping it for another session's: `/resume`
//! goes on with a recorded session, `/branch` with a fork of the current one.

use corvid_core::agent::{AgentHandle, EventReceiver, OpSender};
use corvid_core::context::instructions::InstructionsFile;
use corvid_tools::ToolRegistry;

use crate::app::App;
use crate::cells::NoticeKind;
use crate::picker::{BranchAt, SessionLauncher};

/// The agent the UI talks to; `/resume` replaces it.
pub(super) struct Agent {
    pub(super) session_id: String,
    pub(super) instructions: Vec<InstructionsFile>,
    pub(super) tools: ToolRegistry,
    pub(super) commands: Option<std::sync::Arc<corvid_core::commands::Library>>,
    pub(super) checkpoints: Option<std::sync::Arc<corvid_core::checkpoints::SessionCheckpoints>>,
    pub(super) background: Option<std::sync::Arc<corvid_tools::shell::BackgroundProcesses>>,
    pub(super) sender: OpSender,
    pub(super) events: EventReceiver,
}

impl Agent {
    pub(super) fn new(handle: AgentHandle) -> Self {
        let session_id = handle.session_id().to_owned();
        let instructions = handle.instructions().to_vec();
        let tools = handle.tools().clone();
        let commands = handle.commands().cloned();
        let checkpoints = handle.checkpoints();
        let background = handle.background();
        let (sender, events) = handle.split();
        Self {
            session_id,
            instructions,
            tools,
            commands,
            checkpoints,
            background,
            sender,
            events,
        }
    }
}

/// Swaps `agent` for one going on with session `id`; false (with a notice) when that fails.
pub(super) fn resume(
    agent: &mut Agent,
    launcher: Option<&dyn SessionLauncher>,
    app: &mut App,
    id: &str,
) -> bool {
    let Some(launcher) = launcher else {
        app.notice(
            NoticeKind::Warning,
            "Sessions are not available here".into(),
        );
        return false;
    };
    match launcher.resume(id) {
        Ok(resumed) => {
            // Dropping the old agent's sender ends it; its recording is complete (flushed per record).
            *agent = Agent::new(resumed.handle);
            app.instructions.clone_from(&agent.instructions);
            app.tools.clone_from(&agent.tools);
            app.commands.clone_from(&agent.commands);
            app.checkpoints.clone_from(&agent.checkpoints);
            app.background.clone_from(&agent.background);
            app.count_background();
            app.on_resumed(&agent.session_id, &resumed.transcript);
            true
        }
        Err(e) => {
            app.notice(NoticeKind::Error, format!("Cannot resume {id}: {e}"));
            false
        }
    }
}

/// Swaps `agent` for one going on in a fork of its session (`/branch [N]`); false (with a
/// notice) when that fails. The parent's agent ends with its recording untouched.
pub(super) fn branch(
    agent: &mut Agent,
    launcher: Option<&dyn SessionLauncher>,
    app: &mut App,
    turn: Option<u32>,
    overwrite_conflicts: bool,
) -> bool {
    let Some(launcher) = launcher else {
        app.notice(
            NoticeKind::Warning,
            "Sessions are not available here".into(),
        );
        return false;
    };
    let at = match (turn, &agent.checkpoints) {
        (None, _) => None,
        (Some(turn), Some(checkpoints)) => Some(BranchAt {
            checkpoints: checkpoints.clone(),
            turn,
            overwrite_conflicts,
        }),
        (Some(_), None) => {
            app.notice(
                NoticeKind::Warning,
                "Checkpoints are off in this session: /branch N cannot restore files; /branch \
                 forks the whole conversation"
                    .into(),
            );
            return false;
        }
    };
    let parent = agent.session_id.clone();
    match launcher.fork(&parent, at) {
        Ok(branched) => {
            *agent = Agent::new(branched.resumed.handle);
            app.instructions.clone_from(&agent.instructions);
            app.tools.clone_from(&agent.tools);
            app.commands.clone_from(&agent.commands);
            app.checkpoints.clone_from(&agent.checkpoints);
            app.background.clone_from(&agent.background);
            app.count_background();
            let restored = turn.zip(branched.restored.as_ref());
            app.on_branched(
                &parent,
                &agent.session_id,
                &branched.resumed.transcript,
                restored,
            );
            true
        }
        Err(e) => {
            app.notice(NoticeKind::Error, format!("Cannot branch {parent}: {e}"));
            false
        }
    }
}
