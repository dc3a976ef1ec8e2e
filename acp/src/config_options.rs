//! Session config options (issue 14 item 17, issue 32 item 1): a `mode` select (category
//! `mode`), kept in step with the legacy `modes` field and `current_mode_update`, and a `model`
//! select (category `model`), offered on `session/new`, `session/load` and `session/resume`
//! and set with `session/set_config_option`. Clients such as CodeCompanion switch modes only
//! through the option, and acpx picks a model only among the offered values. A third select,
//! `reasoning_effort` (category `thought_level`), is offered while the model takes an effort
//! and kept in step with `/model NAME EFFORT`.

use agent_client_protocol::v1::schema::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigOptionValue,
    SessionConfigSelectOption, SetSessionConfigOptionRequest,
};
use agent_client_protocol::{Error, ErrorCode};
use corvid_protocol::{ApprovalMode, ReasoningEffort};

/// The config option id of the approval mode.
pub(crate) const MODE: &str = "mode";
/// The config option id of the main model.
pub(crate) const MODEL: &str = "model";
/// The config option id of the reasoning effort.
pub(crate) const REASONING_EFFORT: &str = "reasoning_effort";

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
    Effort(ReasoningEffort),
}

/// The `reasoning_effort` option of a model that takes an effort.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EffortOption {
    pub current: ReasoningEffort,
    pub choices: &'static [ReasoningEffort],
}

/// The options a session offers: the mode, then the model with the current value first among
/// its choices, then the reasoning effort when the model takes one.
pub(crate) fn options(
    mode: ApprovalMode,
    model: &str,
    models: &[String],
    effort: Option<EffortOption>,
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
    .into_iter()
    .chain(effort.map(|effort| {
        let choices: Vec<SessionConfigSelectOption> = effort
            .choices
            .iter()
            .map(|e| SessionConfigSelectOption::new(e.as_str(), e.as_str()))
            .collect();
        SessionConfigOption::select(
            REASONING_EFFORT,
            "Reasoning effort",
            effort.current.as_str(),
            choices,
        )
        .description("How hard the model thinks in later turns".to_owned())
        .category(SessionConfigOptionCategory::ThoughtLevel)
    }))
    .collect()
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
        REASONING_EFFORT => ReasoningEffort::parse(&value)
            .map(Requested::Effort)
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::INVALID_PARAMS,
                    format!(
                        "unknown reasoning effort `{value}`; use minimal, low, medium, high or xhigh"
                    ),
                )
            }),
        other => Err(Error::new(
            ErrorCode::INVALID_PARAMS,
            format!(
                "unknown config option `{other}`; corvid offers `{MODE}`, `{MODEL}` and \
                 `{REASONING_EFFORT}`"
            ),
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
