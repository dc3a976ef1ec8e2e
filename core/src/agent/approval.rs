//! Whether a call may run. In order: a failed plan refuses; a deny rule or a remembered
//! "reject always" refuses without asking; an escalated call is asked in every mode; a call
//! touching a protected path is asked in every mode but `yolo` (only an "always" given for
//! that very file skips the question); in `plan`, only an allow rule, a remembered "always"
//! or a hook lets it run and the rest is refused unasked; otherwise the mode (see
//! `policy::unasked`: read-only
//! commands, and in `auto` what undo can take back), an allow rule or a remembered "allow
//! always" (or a PreToolUse hook's `allow`) lets it run, and anything left is asked.

use std::path::PathBuf;

use corvid_protocol::{
    ApprovalDecision, ApprovalMode, ApprovalPreview, CoreEvent, Provenance, ToolCall, ToolDisplay,
};
use corvid_tools::{ApprovalNeed, Tool};

use super::session::{TaskCtx, lock};
use crate::policy::path_pattern::touched;
use crate::policy::read_only::reads_only;
use crate::policy::rules::{Rule, Subject};
use crate::policy::scope::{Reach, Scope};
use crate::policy::shell_words::CommandLine;
use crate::policy::unasked::{Call, Confinement, mode_allows, protected_in_command};

/// What the tool's plan says the call is, before the mode decides.
#[derive(Clone, Copy)]
enum Kind {
    Edit,
    Run(Confinement),
    Other,
}

/// The decision on one call.
pub(super) enum Approval {
    /// The call may run; `asked` tells whether a permission prompt was shown.
    Granted { asked: bool },
    /// The user said no in a prompt.
    Denied(String),
    /// Refused without a prompt (a failed plan, a deny rule, an earlier "reject always").
    DeniedUnasked(String),
}

/// Decides whether the call may run, asking the user when the policy leaves it open.
pub(super) async fn approve(
    ctx: &TaskCtx,
    call: &ToolCall,
    tool: &dyn Tool,
    display: &ToolDisplay,
    need: ApprovalNeed,
    hook_allows: bool,
) -> Approval {
    let mode = *lock(&ctx.shared.approval_mode);
    let policy = &ctx.stat.policy;
    let (preview, kind, escalation) = match need {
        // Nothing to approve, but a deny rule (`read_file(.env)`) still applies.
        ApprovalNeed::None => (None, Kind::Other, None),
        ApprovalNeed::Refuse(err) => return Approval::DeniedUnasked(err.message),
        ApprovalNeed::Edit(preview) => (Some(preview), Kind::Edit, None),
        ApprovalNeed::Execute(preview) => (Some(preview), Kind::Run(Confinement::Unconfined), None),
        ApprovalNeed::Sandboxed(preview) => {
            (Some(preview), Kind::Run(Confinement::Sandboxed), None)
        }
        ApprovalNeed::Escalated { preview, reason } => (Some(preview), Kind::Other, Some(reason)),
    };
    let command = match &preview {
        Some(ApprovalPreview::Command { command }) => Some(CommandLine::parse(command)),
        _ => None,
    };
    // Only the built-in shell's commands are judged by their words; an MCP tool cannot pass
    // for one by previewing a command.
    let builtin = matches!(tool.provenance(), Provenance::Builtin);
    let call_kind = match (kind, &command) {
        (Kind::Edit, _) => Call::Edit,
        (Kind::Run(confinement), Some(line)) if builtin => Call::Command {
            confinement,
            reads_only: reads_only(line, &ctx.stat.cwd),
        },
        _ => Call::Other,
    };
    let automatic = mode_allows(mode, call_kind, policy.undo);
    let file = match &preview {
        Some(ApprovalPreview::Diff(diff)) => Some(diff.path.clone()),
        _ => None,
    };
    let named: Vec<PathBuf> = file
        .iter()
        .cloned()
        .chain(display.locations.iter().map(|l| l.path.clone()))
        .collect();
    let paths = touched(&ctx.stat.cwd, &named);
    let domain = tool.domain(&call.args);
    let subject = Subject {
        tool: tool.name(),
        command: command.as_ref(),
        file: file.as_deref(),
        domain: domain.as_deref(),
        paths: &paths,
    };
    let server = match tool.provenance() {
        Provenance::Mcp { server_id } => Some(server_id),
        Provenance::Builtin | Provenance::Subagent => None,
    };
    let server = server.as_deref();
    if let Some(rule) = policy.rules.denying(&subject) {
        return Approval::DeniedUnasked(denied_message(call, rule));
    }
    if lock(&ctx.shared.remembered).rejects(&subject) {
        return Approval::DeniedUnasked(rejected_message(call, true));
    }
    let Some(preview) = preview else {
        return Approval::Granted { asked: false };
    };
    if let Some(reason) = escalation {
        // No mode, rule or remembered answer skips an escalated question.
        return ask(ctx, call, display, preview, Some(reason), &subject, server).await;
    }
    let protected = match mode {
        ApprovalMode::Yolo => None,
        ApprovalMode::Default
        | ApprovalMode::Auto
        | ApprovalMode::AutoEdit
        | ApprovalMode::Plan => policy.protected.reason(&paths),
    };
    if let Some(reason) = protected {
        if lock(&ctx.shared.remembered).allows(&subject, Reach::ThisFileOnly) {
            return Approval::Granted { asked: false };
        }
        return ask(ctx, call, display, preview, Some(reason), &subject, server).await;
    }
    // What `auto` lets run unasked must not change a protected path either: the sandbox
    // keeps only the built-in names read-only, not the user's `tools.protectedPaths`.
    let unasked_write = automatic
        && mode == ApprovalMode::Auto
        && matches!(
            call_kind,
            Call::Command {
                reads_only: false,
                ..
            }
        );
    if let (true, Some(line)) = (unasked_write, &command)
        && let Some(reason) = protected_in_command(&policy.protected, &ctx.stat.cwd, line)
    {
        return ask(ctx, call, display, preview, Some(reason), &subject, server).await;
    }
    let remembered = {
        let remembered = lock(&ctx.shared.remembered);
        remembered.allows(&subject, Reach::Any)
            || server.is_some_and(|s| remembered.allows_server(s))
    };
    let allowed = automatic || hook_allows || policy.rules.allow(&subject) || remembered;
    let granted = lock(&ctx.shared.prompt_grants).allow(&subject);
    // A command file's `allowed-tools` (`Bash(*)`) grants no write to a protected path: the
    // command line is judged like one `auto` would run unasked.
    if granted
        && !allowed
        && mode != ApprovalMode::Yolo
        && let Some(line) = &command
        && let Some(reason) = protected_in_command(&policy.protected, &ctx.stat.cwd, line)
    {
        return ask(ctx, call, display, preview, Some(reason), &subject, server).await;
    }
    if allowed || granted {
        return Approval::Granted { asked: false };
    }
    if mode == ApprovalMode::Plan {
        // Plan mode asks only whether to leave it: what is not allowed already is refused.
        return Approval::DeniedUnasked(plan_mode_message(call, subject.domain));
    }
    ask(ctx, call, display, preview, None, &subject, server).await
}

fn plan_mode_message(call: &ToolCall, domain: Option<&str>) -> String {
    let rule = match domain {
        Some(domain) => format!("`{}(domain:{domain})`", call.name),
        None => format!("`{}`", call.name),
    };
    format!(
        "plan mode: this `{}` call needs approval, and plan mode asks nothing but whether to \
         leave it, so it was refused; it did not run. Plan without it, or do it after the plan \
         is approved (the user can also allow it with a tools.allow rule such as {rule}).",
        call.name
    )
}

/// Asks the user, remembers an "always" answer for the call's scope (or its MCP `server`),
/// and maps the answer.
async fn ask(
    ctx: &TaskCtx,
    call: &ToolCall,
    display: &ToolDisplay,
    preview: ApprovalPreview,
    reason: Option<String>,
    subject: &Subject<'_>,
    server: Option<&str>,
) -> Approval {
    let scope = Scope::of(subject);
    let answer = ctx.shared.wait_for_approval(&call.call_id);
    ctx.events.emit(CoreEvent::PermissionRequested {
        call_id: call.call_id.clone(),
        tool_name: call.name.clone(),
        args: call.args.clone(),
        display: display.clone(),
        preview,
        reason,
        always_scope: scope.label(&ctx.stat.cwd),
        server: server.map(str::to_owned),
    });
    super::exec::notify_hooks(ctx, "permission_prompt", &call.name);
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
    let raw = subject.command.map(CommandLine::raw);
    match decision {
        ApprovalDecision::AllowAlways => {
            lock(&ctx.shared.remembered).remember(subject.tool, &scope, raw, true);
        }
        // Only offered with a server; without one it is the narrower "always" for the tool.
        ApprovalDecision::AllowServerAlways => match server {
            Some(server) => lock(&ctx.shared.remembered).remember_server(server),
            None => lock(&ctx.shared.remembered).remember(subject.tool, &scope, raw, true),
        },
        ApprovalDecision::RejectAlways => {
            lock(&ctx.shared.remembered).remember(subject.tool, &scope, raw, false);
        }
        ApprovalDecision::AllowOnce
        | ApprovalDecision::RejectOnce
        | ApprovalDecision::Cancelled
        | ApprovalDecision::Unattended => {}
    }
    match decision {
        ApprovalDecision::AllowOnce
        | ApprovalDecision::AllowAlways
        | ApprovalDecision::AllowServerAlways => Approval::Granted { asked: true },
        ApprovalDecision::RejectOnce => Approval::Denied(rejected_message(call, false)),
        ApprovalDecision::RejectAlways => Approval::Denied(rejected_message(call, true)),
        ApprovalDecision::Cancelled => Approval::Denied(format!(
            "The approval request for `{}` was cancelled; the call did not run.",
            call.name
        )),
        ApprovalDecision::Unattended => Approval::Denied(unattended_message(call)),
    }
}

/// The user never saw the question: say so, so the model does not report a "no" they gave.
fn unattended_message(call: &ToolCall) -> String {
    format!(
        "This `{}` call needs approval, and nobody can be asked in this non-interactive \
         (headless) run, so corvid refused it; it did not run. The user did not reject it. Do \
         not retry it; finish what you can without it and tell the user it needs approval \
         (another approval mode or a tools.allow rule).",
        call.name
    )
}

fn rejected_message(call: &ToolCall, always: bool) -> String {
    let scope = if always {
        " (the user rejects such calls for the rest of the session)"
    } else {
        ""
    };
    format!(
        "The user rejected this `{}` call{scope}; it did not run. Do not retry it as is; \
         ask the user how to proceed or take another approach.",
        call.name
    )
}

fn denied_message(call: &ToolCall, rule: &Rule) -> String {
    format!(
        "This `{}` call is refused by the rule `{}` in the user's `tools.deny` settings; it \
         did not run. Do not retry it; ask the user how to proceed or take another approach.",
        call.name,
        rule.source()
    )
}
