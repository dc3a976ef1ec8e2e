//! Session config options (issue 14 item 17, issue 32 item 1): a `mode` select (category
//! `mode`), kept in step with the legacy `modes` field and `current_mode_update`, and a `model`
//! select (category `model`), offered on `session/new`, `session/load` and `session/resume`
//! and set with `session/set_config_option`. Clients such as CodeCompanion switch modes only
//! through the option, and acpx picks a model only among the offered values.

use agent_client_protocol::v1::schema::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigOptionValue,
    SessionConfigSelectOption, SetSessionConfigOptionRequest,
};
use agent_client_protocol::{Error, ErrorCode};
use corvid_protocol::ApprovalMode;

/// The config option id of the approval mode.
pub(crate) const MODE: &str = "mode";
/// The config option id of the main model.
pub(crate) const MODEL: &str = "model";

/// The approval modes: id, name, description (the legacy `modes` field lists the same).
pub(crate) const MODES: [(ApprovalMode, &str, &str); 5] = [
    (
        ApprovalMode::Default,
        "Default",
        "Ask before edits and shell commands",
    ),
    (
        ApprovalMode::Auto,
        "Auto",
        "Edits and sandboxed shell commands run unasked while undo is on; escalations still ask",
    ),
    (
        ApprovalMode::AutoEdit,
        "Auto edit",
        "Edit files freely; ask before shell commands",
    ),
    (ApprovalMode::Yolo, "YOLO", "Never ask"),
    (
        ApprovalMode::Plan,
        "Plan",
        "Read-only: the agent proposes a plan and asks before it starts working",
    ),
];

/// What a `session/set_config_option` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Requested {
    Mode(ApprovalMode),
    Model(String),
}

/// The options a session offers: the mode, then the model with the current value first among
/// its choices.
pub(crate) fn options(
    mode: ApprovalMode,
    model: &str,
    models: &[String],
) -> Vec<SessionConfigOption> {
    let modes: Vec<SessionConfigSelectOption> = MODES
        .iter()
        .map(|(mode, name, description)| {
            SessionConfigSelectOption::new(mode.as_str(), *name)
                .description((*description).to_owned())
        })
        .collect();
    let models: Vec<SessionConfigSelectOption> = models
        .iter()
        .map(|m| SessionConfigSelectOption::new(m.clone(), m.clone()))
        .collect();
    vec![
        SessionConfigOption::select(MODE, "Mode", mode.as_str(), modes)
            .description("How much the agent may do without asking".to_owned())
            .category(SessionConfigOptionCategory::Mode),
        SessionConfigOption::select(MODEL, "Model", model.to_owned(), models)
            .description("The main model of later turns".to_owned())
            .category(SessionConfigOptionCategory::Model),
    ]
}

/// The mode or model a `session/set_config_option` asks for. Any model name the provider may
/// serve is taken (the provider is the judge of what exists), not only the listed ones.
pub(crate) fn requested(req: &SetSessionConfigOptionRequest) -> Result<Requested, Error> {
    let value = match &req.value {
        SessionConfigOptionValue::ValueId { value } if !value.0.trim().is_empty() => {
            value.0.trim().to_owned()
        }
        _ => {
            return Err(Error::new(
                ErrorCode::INVALID_PARAMS,
                format!("the `{}` option takes a value id", req.config_id.0),
            ));
        }
    };
    match req.config_id.0.as_ref() {
        MODE => ApprovalMode::parse(&value)
            .map(Requested::Mode)
            .ok_or_else(|| unknown_mode(&value)),
        MODEL => Ok(Requested::Model(value)),
        other => Err(Error::new(
            ErrorCode::INVALID_PARAMS,
            format!("unknown config option `{other}`; corvid offers `{MODE}` and `{MODEL}`"),
        )),
    }
}

/// The error for a mode id corvid does not have.
pub(crate) fn unknown_mode(id: &str) -> Error {
    Error::new(
        ErrorCode::INVALID_PARAMS,
        format!("unknown mode `{id}`; use default, auto, auto-edit, yolo or plan"),
    )
}
