//! Plan mode over ACP: the question to leave plan mode offers the choices editors show for
//! it, and a mode the agent switched itself reaches the client as `current_mode_update`.

use agent_client_protocol::v1::schema::{
    CurrentModeUpdate, PermissionOption, PermissionOptionKind, SessionId, SessionNotification,
    SessionUpdate,
};
use corvid_protocol::ApprovalMode;

use crate::mapping::{ALLOW_ALWAYS, ALLOW_ONCE, REJECT_ONCE};

/// The answers to `exit_plan_mode`: "always" leaves plan mode for `auto-edit`, "once" for
/// `default` (the core maps the decision), and "no" keeps planning.
pub(crate) fn leave_options() -> Vec<PermissionOption> {
    vec![
        PermissionOption::new(
            ALLOW_ALWAYS,
            "Yes, and auto-accept edits",
            PermissionOptionKind::AllowAlways,
        ),
        PermissionOption::new(ALLOW_ONCE, "Yes", PermissionOptionKind::AllowOnce),
        PermissionOption::new(
            REJECT_ONCE,
            "No, keep planning",
            PermissionOptionKind::RejectOnce,
        ),
    ]
}

/// The `current_mode_update` telling the client the session is now in `mode`.
pub(crate) fn mode_update(session_id: SessionId, mode: ApprovalMode) -> SessionNotification {
    SessionNotification::new(
        session_id,
        SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(mode.as_str())),
    )
}
