//! Plan mode: the model is offered only tools that change nothing (plus `todo_write` and
//! `exit_plan_mode`), any other call is refused unasked, and `exit_plan_mode` shows the plan
//! and asks the user to leave plan mode; a yes switches the session's approval mode.
//! `enter_plan_mode` switches into plan mode (asked in `default`); plan mode only ever takes
//! rights away, so entering it never lowers a restriction.

use std::sync::Arc;

use corvid_protocol::{
    ApprovalDecision, ApprovalMode, ApprovalPreview, CoreEvent, ToolCall, ToolDisplay, ToolOutput,
    ToolSchema,
};
use corvid_tools::enter_plan_mode::ENTER_PLAN_MODE;
use corvid_tools::exit_plan_mode::{EXIT_PLAN_MODE, plan_of, plan_steps};
use corvid_tools::{ApprovalNeed, Tool};

use super::approval::{Approval, approve};
use super::schemas::SchemaCache;
use super::session::{TaskCtx, lock};

/// What the model is told about plan mode, after the system prompt.
const PLAN_MODE_NOTE: &str = "\n\nYou are in PLAN MODE. Do not change anything: no file \
     edits, no shell commands; only the read-only tools (and todo_write) are available. \
     Investigate what you need, then call exit_plan_mode with a concise plan in Markdown, its \
     steps as a list. The user reads the plan and decides whether you start working; until \
     then keep planning. If the user only asks a question, just answer it.";

/// What a subagent is told in plan mode: it cannot leave plan mode (it has no
/// `exit_plan_mode`), so it reports instead of planning.
const CHILD_PLAN_MODE_NOTE: &str = "\n\nThe session is in PLAN MODE. Do not change anything: \
     no file edits, no shell commands; only the read-only tools are available. Investigate and \
     report what you found; the main agent plans with your report.";

/// The answer to a call plan mode does not allow.
const REFUSED_IN_PLAN_MODE: &str = "plan mode: this session only plans; this call did not \
     run. Call exit_plan_mode with your plan to ask the user to start working.";

/// The answer to a subagent's call plan mode does not allow.
const CHILD_REFUSED_IN_PLAN_MODE: &str = "plan mode: this session only plans; this call did \
     not run. Use the read-only tools and report what you found.";

/// The answer to `exit_plan_mode` outside plan mode.
const NOT_IN_PLAN_MODE: &str = "the session is not in plan mode; go on with the work (there \
     is no plan mode to leave).";

/// The answer when the user keeps plan mode.
const KEEP_PLANNING: &str = "The user wants to keep planning: plan mode goes on and nothing \
     may change yet. Ask what to change in the plan, or refine it and call exit_plan_mode \
     again.";

/// The answer to `enter_plan_mode` when it switched the mode.
const ENTERED: &str = "Plan mode is on. Do not change anything: no file edits, no shell \
     commands; only the read-only tools (and todo_write) are available. Investigate, then call \
     exit_plan_mode with a concise plan in Markdown for the user to approve.";

/// The answer to `enter_plan_mode` in plan mode.
const ALREADY_PLANNING: &str = "The session is already in plan mode; nothing changed. Go on \
     planning and call exit_plan_mode with your plan when it is ready.";

fn mode(ctx: &TaskCtx) -> ApprovalMode {
    *lock(&ctx.shared.approval_mode)
}

/// Whether the session's current mode offers and runs the tool.
fn offered(tool: &dyn Tool, mode: ApprovalMode) -> bool {
    match mode {
        ApprovalMode::Plan => tool.allowed_in_plan_mode(),
        ApprovalMode::Default
        | ApprovalMode::Auto
        | ApprovalMode::AutoEdit
        | ApprovalMode::Yolo => tool.name() != EXIT_PLAN_MODE,
    }
}

/// Whether the agent can leave plan mode itself: the session's can, a subagent (which has no
/// `exit_plan_mode`) cannot and is told so.
fn can_leave(ctx: &TaskCtx) -> bool {
    ctx.stat.tools.get(EXIT_PLAN_MODE).is_some()
}

/// The system prompt of the next request, with the plan-mode note in plan mode.
pub(super) fn system_prompt(ctx: &TaskCtx) -> String {
    match mode(ctx) {
        ApprovalMode::Plan => {
            let note = if can_leave(ctx) {
                PLAN_MODE_NOTE
            } else {
                CHILD_PLAN_MODE_NOTE
            };
            format!("{}{note}", ctx.stat.system_prompt)
        }
        ApprovalMode::Default
        | ApprovalMode::Auto
        | ApprovalMode::AutoEdit
        | ApprovalMode::Yolo => ctx.stat.system_prompt.clone(),
    }
}

/// The schemas of the tools offered to the model in the session's current mode, and the bytes
/// they add to a request.
pub(super) fn tool_schemas(ctx: &TaskCtx) -> (Vec<Arc<ToolSchema>>, u64) {
    SchemaCache::process().schemas(&offered_tools(ctx))
}

/// The bytes the schemas of the offered tools add to a request.
pub(super) fn tool_bytes(ctx: &TaskCtx) -> u64 {
    SchemaCache::process().bytes(&offered_tools(ctx))
}

fn offered_tools(ctx: &TaskCtx) -> Vec<Arc<dyn Tool>> {
    let mode = mode(ctx);
    ctx.stat
        .tools
        .iter()
        .filter(|tool| offered(tool.as_ref(), mode))
        .collect()
}

/// Why the call may not even be planned in this mode (it is refused unasked), if so.
pub(super) fn refusal(ctx: &TaskCtx, tool: &dyn Tool) -> Option<String> {
    let mode = mode(ctx);
    // Not offered while planning, but a call to it is a harmless no-op (see `enter`).
    if offered(tool, mode) || tool.name() == ENTER_PLAN_MODE {
        return None;
    }
    Some(match mode {
        ApprovalMode::Plan if can_leave(ctx) => REFUSED_IN_PLAN_MODE.to_owned(),
        ApprovalMode::Plan => CHILD_REFUSED_IN_PLAN_MODE.to_owned(),
        ApprovalMode::Default
        | ApprovalMode::Auto
        | ApprovalMode::AutoEdit
        | ApprovalMode::Yolo => NOT_IN_PLAN_MODE.to_owned(),
    })
}

/// Decides whether the call may run: `exit_plan_mode` asks to leave plan mode, every other
/// call goes through the approval policy.
pub(super) async fn decide(
    ctx: &TaskCtx,
    call: &ToolCall,
    tool: &dyn Tool,
    display: &ToolDisplay,
    need: ApprovalNeed,
    hook_allows: bool,
) -> Approval {
    if tool.name() == ENTER_PLAN_MODE {
        return match mode(ctx) {
            ApprovalMode::Plan => Approval::Granted { asked: false },
            // Asked; an allow rule or "always" may still skip the question.
            ApprovalMode::Default => approve(ctx, call, tool, display, need, hook_allows).await,
            // These modes already let the agent work alone; planning asks for less. A deny
            // rule still applies.
            ApprovalMode::Auto | ApprovalMode::AutoEdit | ApprovalMode::Yolo => {
                approve(ctx, call, tool, display, ApprovalNeed::None, hook_allows).await
            }
        };
    }
    if tool.name() != EXIT_PLAN_MODE {
        return approve(ctx, call, tool, display, need, hook_allows).await;
    }
    match need {
        ApprovalNeed::Escalated { preview, reason } => {
            leave(ctx, call, display, preview, reason).await
        }
        ApprovalNeed::Refuse(err) => Approval::DeniedUnasked(err.message),
        ApprovalNeed::None
        | ApprovalNeed::Edit(_)
        | ApprovalNeed::Execute(_)
        | ApprovalNeed::Sandboxed(_) => {
            Approval::DeniedUnasked("internal error: exit_plan_mode planned no question".into())
        }
    }
}

/// Shows the plan (as a plan update and in the question), asks the user, and on a yes
/// switches the mode: "always" (auto-accept edits) to `auto-edit`, "once" to `default`.
async fn leave(
    ctx: &TaskCtx,
    call: &ToolCall,
    display: &ToolDisplay,
    preview: ApprovalPreview,
    reason: String,
) -> Approval {
    if let Ok(plan) = plan_of(&call.args) {
        ctx.events.emit(CoreEvent::Plan {
            todos: plan_steps(&plan),
        });
    }
    let answer = ctx.shared.wait_for_approval(&call.call_id);
    ctx.events.emit(CoreEvent::PermissionRequested {
        call_id: call.call_id.clone(),
        tool_name: call.name.clone(),
        args: call.args.clone(),
        display: display.clone(),
        preview,
        reason: Some(reason),
        always_scope: Some("edits".to_owned()),
        server: None,
    });
    let decision = tokio::select! {
        biased;
        _ = ctx.cancel.cancelled() => {
            ctx.shared.forget_approval(&call.call_id);
            ApprovalDecision::Cancelled
        }
        decision = answer => decision.unwrap_or(ApprovalDecision::Cancelled),
    };
    ctx.events.emit(CoreEvent::PermissionResolved {
        call_id: call.call_id.clone(),
        decision,
    });
    let next = match decision {
        ApprovalDecision::AllowAlways => ApprovalMode::AutoEdit,
        // No server was offered; a client answering with one gets the narrower "once".
        ApprovalDecision::AllowOnce | ApprovalDecision::AllowServerAlways => ApprovalMode::Default,
        ApprovalDecision::RejectOnce | ApprovalDecision::RejectAlways => {
            return Approval::Denied(KEEP_PLANNING.to_owned());
        }
        ApprovalDecision::Cancelled => {
            return Approval::Denied(
                "The question to leave plan mode was cancelled; plan mode goes on.".to_owned(),
            );
        }
        ApprovalDecision::Unattended => {
            return Approval::Denied(
                "Nobody can approve the plan in this non-interactive (headless) run, so plan \
                 mode goes on. Give the user the plan as your answer."
                    .to_owned(),
            );
        }
    };
    // Only a session still in plan mode leaves it (the user may have switched meanwhile).
    let switched = {
        let mut current = lock(&ctx.shared.approval_mode);
        let was_planning = *current == ApprovalMode::Plan;
        if was_planning {
            *current = next;
        }
        was_planning
    };
    if switched {
        ctx.events
            .emit(CoreEvent::ApprovalModeChanged { mode: next });
    }
    Approval::Granted { asked: true }
}

/// Runs an approved `enter_plan_mode`: switches the session to plan mode (every front end
/// sees the `ApprovalModeChanged`, and the recording restores it), or says it already plans.
pub(super) fn enter(ctx: &TaskCtx) -> ToolOutput {
    let before = std::mem::replace(&mut *lock(&ctx.shared.approval_mode), ApprovalMode::Plan);
    if before == ApprovalMode::Plan {
        return ToolOutput::text(ALREADY_PLANNING);
    }
    ctx.events.emit(CoreEvent::ApprovalModeChanged {
        mode: ApprovalMode::Plan,
    });
    ToolOutput::text(ENTERED)
}
