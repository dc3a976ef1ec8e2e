//! Shift+Tab cycles the approval mode, as in peer agents: `default` → `auto` → `auto-edit` →
//! `plan` → `default`. `yolo` is never reached by cycling (it is chosen deliberately, with a flag or a
//! setting); from it the cycle goes back to `default`.

use corvid_protocol::ApprovalMode;

/// The mode after `mode` in the cycle.
pub fn next_mode(mode: ApprovalMode) -> ApprovalMode {
    match mode {
        ApprovalMode::Default => ApprovalMode::Auto,
        ApprovalMode::Auto => ApprovalMode::AutoEdit,
        ApprovalMode::AutoEdit => ApprovalMode::Plan,
        ApprovalMode::Plan | ApprovalMode::Yolo => ApprovalMode::Default,
    }
}

/// What the status line says right after a switch to `mode`.
pub fn switched_hint(mode: ApprovalMode) -> String {
    let what = match mode {
        ApprovalMode::Default => "asks before edits and commands",
        ApprovalMode::Auto => "edits and sandboxed commands run, undo takes them back",
        ApprovalMode::AutoEdit => "edits freely, asks before commands",
        ApprovalMode::Plan => "read-only, the agent proposes a plan",
        ApprovalMode::Yolo => "never asks",
    };
    format!("{} mode: {what} · shift+tab next", mode.as_str())
}
