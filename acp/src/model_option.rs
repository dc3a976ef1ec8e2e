//! Per-session model selection (issue 14 item 17) through ACP session config options: one
//! `model` select, offered on `session/new` and `session/load` and set with
//! `session/set_config_option`, which clients such as acpx use to pick a model.

use agent_client_protocol::v1::schema::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigOptionValue,
    SessionConfigSelectOption, SetSessionConfigOptionRequest,
};
use agent_client_protocol::{Error, ErrorCode};

/// The config option id of the main model.
pub(crate) const MODEL: &str = "model";

/// The options a session offers: the model, current value first among its choices.
pub(crate) fn options(current: &str, choices: &[String]) -> Vec<SessionConfigOption> {
    let choices: Vec<SessionConfigSelectOption> = choices
        .iter()
        .map(|m| SessionConfigSelectOption::new(m.clone(), m.clone()))
        .collect();
    vec![
        SessionConfigOption::select(MODEL, "Model", current.to_owned(), choices)
            .description("The main model of later turns".to_owned())
            .category(SessionConfigOptionCategory::Model),
    ]
}

/// The model a `session/set_config_option` asks for. Any model name the provider may serve
/// is taken (the provider is the judge of what exists), not only the listed ones.
pub(crate) fn requested_model(req: &SetSessionConfigOptionRequest) -> Result<String, Error> {
    if req.config_id.0.as_ref() != MODEL {
        return Err(Error::new(
            ErrorCode::INVALID_PARAMS,
            format!(
                "unknown config option `{}`; corvid offers `{MODEL}`",
                req.config_id.0
            ),
        ));
    }
    match &req.value {
        SessionConfigOptionValue::ValueId { value } if !value.0.trim().is_empty() => {
            Ok(value.0.trim().to_owned())
        }
        _ => Err(Error::new(
            ErrorCode::INVALID_PARAMS,
            "the `model` option takes a model name",
        )),
    }
}
