//! `ask_user` over ACP (issue 30). A client that advertises form elicitation gets one
//! `elicitation/create` with a field per question (its options as a choice, and an "Other"
//! text field beside it). Any other client gets one `session/request_permission` per
//! question, its options as the permission options: there the user picks exactly one option
//! (no free text, no several choices; the card says so), or dismisses, which cancels the
//! task as in the other front ends.

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, CreateElicitationRequest, ElicitationAction, ElicitationContentValue,
    ElicitationFormMode, ElicitationSchema, ElicitationSessionScope, EnumOption,
    MultiSelectPropertySchema, PermissionOption, PermissionOptionKind, RequestPermissionOutcome,
    RequestPermissionRequest, SessionId, StringPropertySchema, ToolCallContent, ToolCallId,
    ToolCallUpdate, ToolCallUpdateFields,
};
use corvid_protocol::{Question, QuestionAnswer, QuestionReply};

/// How questions reach the client: the connection's `initialize` decides it once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QuestionChannel {
    /// The client advertised `elicitation.form`: one form for all questions.
    Elicitation,
    /// One permission request per question.
    #[default]
    Permission,
}

/// The option id that dismisses the questions in a permission request.
const DISMISS: &str = "dismiss";

/// The heading of every form and card: the questions are the model's words, not corvid's.
const FROM_THE_MODEL: &str = "The model asks you (its own words, not corvid's):";

/// Asks the client the questions of call `call_id` and returns the user's reply; a failed
/// request is a dismissal.
pub(crate) async fn ask(
    cx: &ConnectionTo<Client>,
    session_id: SessionId,
    call_id: &str,
    questions: &[Question],
    channel: QuestionChannel,
) -> QuestionReply {
    match channel {
        QuestionChannel::Elicitation => {
            let request = form(session_id, call_id, questions);
            match cx.send_request(request).block_task().await {
                Ok(response) => form_reply(questions, response.action),
                Err(e) => {
                    tracing::warn!(error = %e, "the elicitation failed; the questions are dismissed");
                    QuestionReply::Cancelled
                }
            }
        }
        QuestionChannel::Permission => {
            let mut answers = Vec::with_capacity(questions.len());
            for (i, q) in questions.iter().enumerate() {
                let request = permission(session_id.clone(), call_id, q, i, questions.len());
                let chosen = match cx.send_request(request).block_task().await {
                    Ok(response) => match response.outcome {
                        RequestPermissionOutcome::Selected(selected) => {
                            option_label(q, &selected.option_id.0)
                        }
                        _ => None,
                    },
                    Err(e) => {
                        tracing::warn!(error = %e, "a question's permission request failed");
                        None
                    }
                };
                let Some(label) = chosen else {
                    return QuestionReply::Cancelled;
                };
                answers.push(QuestionAnswer {
                    header: q.header.clone(),
                    labels: vec![label],
                    other: None,
                });
            }
            QuestionReply::Answered { answers }
        }
    }
}

/// The field names of question `i`: its choice and its Other text.
fn fields(i: usize) -> (String, String) {
    (format!("q{}", i + 1), format!("q{}_other", i + 1))
}

/// One form for all questions (elicitation schema v1).
pub(crate) fn form(
    session_id: SessionId,
    call_id: &str,
    questions: &[Question],
) -> CreateElicitationRequest {
    let mut schema = ElicitationSchema::new();
    for (i, q) in questions.iter().enumerate() {
        let options: Vec<EnumOption> = q
            .options
            .iter()
            .map(|o| {
                let option = EnumOption::new(o.label.clone(), o.label.clone());
                if o.description.is_empty() {
                    option
                } else {
                    option.description(o.description.clone())
                }
            })
            .collect();
        let (choice, other) = fields(i);
        // Not required: an Other text answers the question instead.
        schema = if q.multi_select {
            schema.property(
                choice,
                MultiSelectPropertySchema::titled(options)
                    .title(q.header.clone())
                    .description(q.question.clone()),
                false,
            )
        } else {
            schema.property(
                choice,
                StringPropertySchema::new()
                    .title(q.header.clone())
                    .description(q.question.clone())
                    .one_of(options),
                false,
            )
        };
        schema = schema.property(
            other,
            StringPropertySchema::new()
                .title(format!("{}: Other", q.header))
                .description("Your own answer instead of (or besides) the options".to_owned()),
            false,
        );
    }
    let message = std::iter::once(FROM_THE_MODEL.to_owned())
        .chain(
            questions
                .iter()
                .map(|q| format!("{}: {}", q.header, q.question)),
        )
        .collect::<Vec<_>>()
        .join("\n");
    let scope =
        ElicitationSessionScope::new(session_id).tool_call_id(ToolCallId::new(call_id.to_owned()));
    CreateElicitationRequest::new(ElicitationFormMode::new(scope, schema), message)
}

/// The answers a submitted form holds; a declined or cancelled form dismisses the questions.
fn form_reply(questions: &[Question], action: ElicitationAction) -> QuestionReply {
    let content = match action {
        ElicitationAction::Accept(accepted) => accepted.content.unwrap_or_default(),
        _ => return QuestionReply::Cancelled,
    };
    let answers = questions
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let (choice, other) = fields(i);
            QuestionAnswer {
                header: q.header.clone(),
                labels: labels(content.get(&choice)),
                other: match content.get(&other) {
                    Some(ElicitationContentValue::String(text)) if !text.trim().is_empty() => {
                        Some(text.trim().to_owned())
                    }
                    _ => None,
                },
            }
        })
        .collect();
    QuestionReply::Answered { answers }
}

/// The labels a choice field holds (the core keeps only those the question offered).
fn labels(value: Option<&ElicitationContentValue>) -> Vec<String> {
    match value {
        Some(ElicitationContentValue::String(label)) => vec![label.clone()],
        Some(ElicitationContentValue::StringArray(labels)) => labels.clone(),
        _ => Vec::new(),
    }
}

/// The permission request for question `i` of `n`, about the `ask_user` call's card.
pub(crate) fn permission(
    session_id: SessionId,
    call_id: &str,
    q: &Question,
    i: usize,
    n: usize,
) -> RequestPermissionRequest {
    let mut text = format!("{FROM_THE_MODEL}\n\n{}\n", q.question);
    for o in &q.options {
        if o.description.is_empty() {
            text.push_str(&format!("\n- {}", o.label));
        } else {
            text.push_str(&format!("\n- {}: {}", o.label, o.description));
        }
    }
    text.push_str(
        "\n\nThis editor can only pick one option here: no Other text. Choose the closest \
         option, or dismiss the question (the task stops) and answer in a new prompt.",
    );
    if q.multi_select {
        text.push_str(" The model allowed several choices; only one can be chosen here.");
    }
    let title = if n > 1 {
        format!("Question {} of {n} · {}", i + 1, q.header)
    } else {
        format!("Question · {}", q.header)
    };
    let fields = ToolCallUpdateFields::new()
        .title(title)
        .content(vec![ToolCallContent::from(ContentBlock::from(text))]);
    let options = q
        .options
        .iter()
        .enumerate()
        .map(|(j, o)| {
            PermissionOption::new(
                format!("option-{}", j + 1),
                o.label.clone(),
                PermissionOptionKind::AllowOnce,
            )
        })
        .chain(std::iter::once(PermissionOption::new(
            DISMISS,
            "Dismiss (cancels the task)",
            PermissionOptionKind::RejectOnce,
        )))
        .collect();
    RequestPermissionRequest::new(
        session_id,
        ToolCallUpdate::new(call_id.to_owned(), fields),
        options,
    )
}

/// The label an option id stands for; `None` for the dismissal or an unknown id.
fn option_label(q: &Question, option_id: &str) -> Option<String> {
    let index: usize = option_id.strip_prefix("option-")?.parse().ok()?;
    q.options
        .get(index.checked_sub(1)?)
        .map(|o| o.label.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    use corvid_protocol::QuestionOption;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn question(multi_select: bool) -> Question {
        Question {
            question: "Which database?".into(),
            header: "Db".into(),
            options: vec![
                QuestionOption {
                    label: "Postgres".into(),
                    description: "a server".into(),
                },
                QuestionOption {
                    label: "SQLite".into(),
                    description: String::new(),
                },
            ],
            multi_select,
        }
    }

    #[test]
    fn the_form_has_a_choice_and_an_other_field_per_question() {
        let request = form(
            SessionId::new("s1"),
            "q1",
            &[question(false), question(true)],
        );
        let value = serde_json::to_value(&request).unwrap();
        assert_eq!(value["mode"], json!("form"));
        assert_eq!(value["toolCallId"], json!("q1"));
        let props = &value["requestedSchema"]["properties"];
        assert_eq!(
            props["q1"],
            json!({"type": "string", "title": "Db", "description": "Which database?",
                   "oneOf": [{"const": "Postgres", "title": "Postgres", "description": "a server"},
                             {"const": "SQLite", "title": "SQLite"}]})
        );
        assert_eq!(props["q2"]["type"], json!("array"));
        assert_eq!(props["q2_other"]["title"], json!("Db: Other"));
        assert!(
            value["message"]
                .as_str()
                .unwrap()
                .starts_with(FROM_THE_MODEL)
        );
    }

    #[test]
    fn a_submitted_form_becomes_answers_and_a_declined_one_dismisses() {
        let content = BTreeMap::from([
            (
                "q1".to_owned(),
                ElicitationContentValue::String("SQLite".into()),
            ),
            (
                "q2".to_owned(),
                ElicitationContentValue::StringArray(vec!["Postgres".into()]),
            ),
            (
                "q2_other".to_owned(),
                ElicitationContentValue::String(" Redis ".into()),
            ),
        ]);
        let action = ElicitationAction::Accept(
            agent_client_protocol::v1::schema::ElicitationAcceptAction::new().content(content),
        );
        let mut second = question(true);
        second.header = "More".into();
        assert_eq!(
            form_reply(&[question(false), second.clone()], action),
            QuestionReply::Answered {
                answers: vec![
                    QuestionAnswer {
                        header: "Db".into(),
                        labels: vec!["SQLite".into()],
                        other: None
                    },
                    QuestionAnswer {
                        header: "More".into(),
                        labels: vec!["Postgres".into()],
                        other: Some("Redis".into())
                    },
                ]
            }
        );
        assert_eq!(
            form_reply(&[question(false)], ElicitationAction::Decline),
            QuestionReply::Cancelled
        );
    }

    #[test]
    fn a_permission_option_stands_for_its_label_and_dismiss_for_nothing() {
        let q = question(true);
        let request = permission(SessionId::new("s1"), "q1", &q, 0, 2);
        let ids: Vec<String> = request
            .options
            .iter()
            .map(|o| o.option_id.0.to_string())
            .collect();
        assert_eq!(ids, vec!["option-1", "option-2", "dismiss"]);
        assert_eq!(option_label(&q, "option-2"), Some("SQLite".into()));
        assert_eq!(option_label(&q, "dismiss"), None);
        assert_eq!(option_label(&q, "option-9"), None);
        let card = serde_json::to_string(&request.tool_call).unwrap();
        assert!(card.contains("only one can be chosen here"), "{card}");
        assert!(card.contains("no Other text"), "{card}");
    }
}
