//! The agent the UI talks to and what swaps it (`/resume`, `/clear`, `/branch` with a fork of
//! the current session), and the provider's model listing the UI is given at start.

use corvid_core::agent::{AgentHandle, EventReceiver, OpSender};
use corvid_core::context::instructions::InstructionsFile;
use corvid_protocol::Op;
use corvid_tools::ToolRegistry;
use futures::future::BoxFuture;

use crate::app::App;
use crate::cells::NoticeKind;
use crate::picker::{BranchAt, SessionLauncher};

/// The agent the UI talks to; `/resume` replaces it.
pub(super) struct Agent {
    pub(super) session_id: String,
    instructions: Vec<InstructionsFile>,
    tools: ToolRegistry,
    commands: Option<std::sync::Arc<corvid_core::commands::Library>>,
    checkpoints: Option<std::sync::Arc<corvid_core::checkpoints::SessionCheckpoints>>,
    background: Option<std::sync::Arc<corvid_tools::shell::BackgroundProcesses>>,
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
            take_agent_parts(app, agent);
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
            take_agent_parts(app, agent);
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

/// The UI shows what the agent it now talks to has loaded.
pub(super) fn take_agent_parts(app: &mut App, agent: &Agent) {
    app.instructions.clone_from(&agent.instructions);
    app.tools.clone_from(&agent.tools);
    app.commands.clone_from(&agent.commands);
    app.checkpoints.clone_from(&agent.checkpoints);
    app.background.clone_from(&agent.background);
    app.count_background();
}

/// `/clear`: swaps `agent` for one in a new recorded session, going on with the model and
/// approval mode in use. When that fails the old agent stays, with its history cleared.
pub(super) fn new_session(
    agent: &mut Agent,
    launcher: Option<&dyn SessionLauncher>,
    app: &mut App,
) -> bool {
    let started = match launcher.map(SessionLauncher::fresh) {
        Some(Ok(started)) => started,
        failed => {
            let why = match failed {
                Some(Err(e)) => e,
                _ => "sessions are not available here".to_owned(),
            };
            app.notice(
                NoticeKind::Error,
                format!(
                    "Cannot start a new session ({why}); the conversation is cleared in this one"
                ),
            );
            return agent.sender.submit(Op::ClearHistory).is_ok();
        }
    };
    // Dropping the old agent's sender ends it; its recording is complete (flushed per record).
    *agent = Agent::new(started.handle);
    take_agent_parts(app, agent);
    let mut ops = Vec::new();
    if app.status.model != started.model {
        ops.push(Op::SetModel {
            model: app.status.model.clone(),
        });
    }
    if app.status.approval_mode != started.approval_mode {
        ops.push(Op::SetApprovalMode {
            mode: app.status.approval_mode,
        });
    }
    app.on_new_session(&agent.session_id);
    ops.into_iter().all(|op| agent.sender.submit(op).is_ok())
}

/// The provider's fresh model listing, on its way.
pub(super) type ModelsOnTheWay =
    tokio::task::JoinHandle<Result<Vec<String>, corvid_protocol::ErrorInfo>>;

/// Gives `app` the cached model listing at once and starts fetching a fresh one (it replaces
/// the cached one when it comes; a failure leaves the cached one).
pub(super) fn list_models(
    listing: Option<&corvid_core::models::ModelListing>,
    app: &mut App,
) -> Option<ModelsOnTheWay> {
    let listing = listing?.clone();
    if let Some(cached) = listing.cached() {
        app.on_models(Ok(cached));
    }
    Some(tokio::spawn(async move { listing.fetch().await }))
}

pub(super) async fn models_answer(
    listed: &mut Option<ModelsOnTheWay>,
) -> Result<Vec<String>, String> {
    match listed {
        Some(fetch) => match fetch.await {
            Ok(answer) => answer.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        },
        None => futures::future::pending().await,
    }
}

/// Rewind work running on a blocking thread (listing the turns, a preview: both read the
/// store, a preview walks the workspace too), as what to do with the app once it is done.
pub(super) type RewindWork = BoxFuture<'static, Box<dyn FnOnce(&mut App) + Send>>;

/// Starts listing the turns for `request` off the UI thread.
pub(super) fn start_listing(
    app: &mut App,
    request: crate::rewind::TurnsRequest,
) -> Option<RewindWork> {
    let Some(checkpoints) = app.checkpoints.clone() else {
        app.listed(&request, Err(CHECKPOINTS_GONE.into()));
        return None;
    };
    let job = request.clone();
    let listing = tokio::task::spawn_blocking(move || job.run(&checkpoints));
    Some(Box::pin(async move {
        let answer = listing.await.unwrap_or_else(|e| Err(e.to_string()));
        Box::new(move |app: &mut App| app.listed(&request, answer))
            as Box<dyn FnOnce(&mut App) + Send>
    }))
}

/// Starts computing the preview of `request` off the UI thread.
pub(super) fn start_preview(
    app: &mut App,
    request: crate::rewind::PreviewRequest,
) -> Option<RewindWork> {
    let Some(checkpoints) = app.checkpoints.clone() else {
        app.previewed(&request, Err(CHECKPOINTS_GONE.into()));
        return None;
    };
    let job = request.clone();
    let preview = tokio::task::spawn_blocking(move || job.run(&checkpoints));
    Some(Box::pin(async move {
        let answer = preview.await.unwrap_or_else(|e| Err(e.to_string()));
        Box::new(move |app: &mut App| app.previewed(&request, answer))
            as Box<dyn FnOnce(&mut App) + Send>
    }))
}

/// Why rewind work found no checkpoints (the agent was swapped for one without them).
const CHECKPOINTS_GONE: &str = "checkpoints are off in this session";

/// The rewind work's result, when it is done (never, without any).
pub(super) async fn rewind_done(work: &mut Option<RewindWork>) -> Box<dyn FnOnce(&mut App) + Send> {
    match work {
        Some(work) => work.await,
        None => futures::future::pending().await,
    }
}
