//! `ask_user`: the model asks the user 1-4 multiple-choice questions instead of guessing.
//! This tool checks and cleans the questions and words the answers; the core shows them to
//! the user through the front end (`CoreEvent::QuestionAsked`) and waits for the reply.
//!
//! The questions are the model's text, so they are hostile: control characters (terminal
//! escapes) and bidirectional overrides are removed before any front end sees them.

use std::collections::HashSet;

use corvid_protocol::{
    Question, QuestionAnswer, QuestionOption, ToolDisplay, ToolKind, ToolOutput,
};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{one_line, parse_args, plain_display};
use crate::{ApprovalNeed, Tool, ToolContext, ToolError};

/// The tool's name, which the core recognises to ask the user.
pub const ASK_USER: &str = "ask_user";

/// The label front ends give the free-text answer every question offers.
pub const OTHER_LABEL: &str = "Other";

/// The longest header (Claude Code's limit).
pub const MAX_HEADER_CHARS: usize = 12;
const MAX_QUESTIONS: usize = 4;
const MIN_OPTIONS: usize = 2;
const MAX_OPTIONS: usize = 4;
/// Longer texts are refused: a question is read by a person on one screen.
const MAX_QUESTION_CHARS: usize = 1_000;
const MAX_LABEL_CHARS: usize = 60;
const MAX_DESCRIPTION_CHARS: usize = 300;
/// The longest "Other" text kept in the answer.
const MAX_OTHER_CHARS: usize = 2_000;

/// Asks the user structured questions and returns their answers.
#[derive(Debug, Clone, Copy, Default)]
pub struct AskUser;

#[derive(Deserialize)]
struct Args {
    questions: Vec<Question>,
}

impl Tool for AskUser {
    fn name(&self) -> &'static str {
        ASK_USER
    }

    fn display_name(&self) -> &'static str {
        "AskUser"
    }

    fn description(&self) -> &'static str {
        "Ask the user 1-4 multiple-choice questions when a decision is theirs (a choice \
         between approaches, a missing requirement) instead of guessing. Each question has a \
         short header (at most 12 characters), 2-4 options with a label and a description, \
         and multiSelect when several options may be chosen. The user can always answer \
         with their own text instead (\"Other\"); do not add an Other option yourself. The \
         answers come back as the result."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "questions": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_QUESTIONS,
                    "items": {
                        "type": "object",
                        "properties": {
                            "question": {"type": "string", "description": "The complete question, ending with a question mark."},
                            "header": {"type": "string", "description": "A short tag for the question, at most 12 characters (\"Auth method\")."},
                            "options": {
                                "type": "array",
                                "minItems": MIN_OPTIONS,
                                "maxItems": MAX_OPTIONS,
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "label": {"type": "string", "description": "The choice in 1-5 words."},
                                        "description": {"type": "string", "description": "What the choice means or implies."}
                                    },
                                    "required": ["label", "description"]
                                }
                            },
                            "multiSelect": {"type": "boolean", "description": "Whether several options may be chosen."}
                        },
                        "required": ["question", "header", "options", "multiSelect"]
                    }
                }
            },
            "required": ["questions"]
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Think
    }

    /// It waits for the user, so it runs alone, after the batch's earlier calls.
    fn mutates(&self) -> bool {
        true
    }

    fn allowed_in_plan_mode(&self) -> bool {
        true
    }

    fn display(&self, args: &Value, _ctx: &ToolContext) -> ToolDisplay {
        let title = match questions_of(args) {
            Ok(questions) => questions
                .first()
                .map(|q| one_line(&q.question, 80))
                .unwrap_or_default(),
            Err(_) => "Ask the user".to_owned(),
        };
        plain_display(self.kind(), title)
    }

    fn approval(&self, args: &Value, _ctx: &ToolContext) -> BoxFuture<'static, ApprovalNeed> {
        let need = match questions_of(args) {
            Ok(_) => ApprovalNeed::None,
            Err(err) => ApprovalNeed::Refuse(err),
        };
        futures::future::ready(need).boxed()
    }

    /// Only reached where no front end can answer (the core asks the user itself).
    fn execute(
        &self,
        _args: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        futures::future::ready(Err(ToolError::new(
            "nobody can answer questions in this session; decide yourself and say what you \
             assumed",
        )))
        .boxed()
    }
}

/// The call's questions, checked (counts, lengths, unique headers and labels) and cleaned of
/// control characters; the error names the first problem.
pub fn questions_of(args: &Value) -> Result<Vec<Question>, ToolError> {
    let questions = parse_args::<Args>(ASK_USER, args)?.questions;
    if questions.is_empty() || questions.len() > MAX_QUESTIONS {
        return Err(ToolError::new(format!(
            "ask_user takes 1 to {MAX_QUESTIONS} questions, got {}",
            questions.len()
        )));
    }
    let mut headers = HashSet::new();
    let questions: Vec<Question> = questions
        .into_iter()
        .map(clean_question)
        .collect::<Result<_, _>>()?;
    for q in &questions {
        if !headers.insert(q.header.to_lowercase()) {
            return Err(ToolError::new(format!(
                "two questions have the header \"{}\"; give each question its own header",
                q.header
            )));
        }
    }
    Ok(questions)
}

fn clean_question(q: Question) -> Result<Question, ToolError> {
    let header = clean_line(&q.header);
    let question = clean_text(&q.question);
    if header.is_empty() {
        return Err(ToolError::new(
            "a question has an empty header; give each question a short header",
        ));
    }
    let chars = header.chars().count();
    if chars > MAX_HEADER_CHARS {
        return Err(ToolError::new(format!(
            "the header \"{header}\" has {chars} characters; keep headers at most \
             {MAX_HEADER_CHARS}"
        )));
    }
    let named = |problem: &str| ToolError::new(format!("question \"{header}\": {problem}"));
    if question.trim().is_empty() {
        return Err(named("the question text is empty"));
    }
    if question.chars().count() > MAX_QUESTION_CHARS {
        return Err(named(&format!(
            "the question is longer than {MAX_QUESTION_CHARS} characters"
        )));
    }
    let n = q.options.len();
    if !(MIN_OPTIONS..=MAX_OPTIONS).contains(&n) {
        let what = if n == 0 {
            "it has no options".to_owned()
        } else {
            format!("it has {n} option{}", if n == 1 { "" } else { "s" })
        };
        return Err(named(&format!(
            "{what}; give {MIN_OPTIONS} to {MAX_OPTIONS} options (\"Other\" is added for you)"
        )));
    }
    let mut labels = HashSet::new();
    let mut options = Vec::with_capacity(n);
    for option in q.options {
        let label = clean_line(&option.label);
        let description = clean_text(&option.description);
        if label.is_empty() {
            return Err(named("an option has an empty label"));
        }
        if label.chars().count() > MAX_LABEL_CHARS {
            return Err(named(&format!(
                "the label \"{}\" is longer than {MAX_LABEL_CHARS} characters",
                one_line(&label, MAX_LABEL_CHARS)
            )));
        }
        if description.chars().count() > MAX_DESCRIPTION_CHARS {
            return Err(named(&format!(
                "the description of \"{label}\" is longer than {MAX_DESCRIPTION_CHARS} characters"
            )));
        }
        if label.eq_ignore_ascii_case(OTHER_LABEL) {
            return Err(named(
                "an option is labelled \"Other\"; leave it out (a free-text Other answer is \
                 always offered)",
            ));
        }
        if !labels.insert(label.to_lowercase()) {
            return Err(named(&format!(
                "two options are labelled \"{label}\"; labels must differ"
            )));
        }
        options.push(QuestionOption { label, description });
    }
    Ok(Question {
        question,
        header,
        options,
        multi_select: q.multi_select,
    })
}

/// Whether a character may reach a terminal or an editor from the model's text: no control
/// characters (escape sequences), no bidirectional overrides (text that reads differently
/// than it is).
fn shown(c: char) -> bool {
    !c.is_control() && !matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// One line of text: controls and line breaks removed, spaces trimmed.
fn clean_line(text: &str) -> String {
    let kept: String = text
        .chars()
        .map(|c| if c == '\n' || c == '\t' { ' ' } else { c })
        .filter(|c| shown(*c))
        .collect();
    kept.trim().to_owned()
}

/// Text that may span lines: controls removed but line breaks kept.
fn clean_text(text: &str) -> String {
    let kept: String = text
        .chars()
        .map(|c| if c == '\t' { ' ' } else { c })
        .filter(|c| *c == '\n' || shown(*c))
        .collect();
    kept.trim().to_owned()
}

/// The tool result for the user's answers: one line per question (header → chosen labels or
/// the Other text), and the answers as data. Labels the question did not offer are dropped
/// (a front end cannot invent choices), and the Other text is cleaned like the questions.
pub fn answers_output(questions: &[Question], answers: &[QuestionAnswer]) -> ToolOutput {
    let mut lines = vec!["The user answered:".to_owned()];
    let mut kept = Vec::with_capacity(questions.len());
    for q in questions {
        let answer = answers.iter().find(|a| a.header == q.header);
        let mut labels: Vec<String> = answer
            .map(|a| {
                q.options
                    .iter()
                    .filter(|o| a.labels.contains(&o.label))
                    .map(|o| o.label.clone())
                    .collect()
            })
            .unwrap_or_default();
        if !q.multi_select {
            labels.truncate(1);
        }
        let other = answer
            .and_then(|a| a.other.as_deref())
            .map(|text| {
                clean_text(text)
                    .chars()
                    .take(MAX_OTHER_CHARS)
                    .collect::<String>()
            })
            .filter(|text| !text.is_empty());
        let mut said: Vec<String> = labels.clone();
        if let Some(text) = &other {
            said.push(format!("{OTHER_LABEL}: \"{text}\""));
        }
        let said = if said.is_empty() {
            "(no answer)".to_owned()
        } else {
            said.join(", ")
        };
        lines.push(format!("- {}: {said}", q.header));
        kept.push(QuestionAnswer {
            header: q.header.clone(),
            labels,
            other,
        });
    }
    ToolOutput::new(lines.join("\n"), json!({ "answers": kept }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn option(label: &str) -> Value {
        json!({"label": label, "description": format!("about {label}")})
    }

    fn question(header: &str, options: Vec<Value>) -> Value {
        json!({"question": "Which one?", "header": header, "options": options, "multiSelect": false})
    }

    fn error(args: Value) -> String {
        questions_of(&args).unwrap_err().message
    }

    #[test]
    fn malformed_questions_are_refused_naming_the_problem() {
        assert_eq!(
            error(json!({"questions": [question("Db", vec![])]})),
            "question \"Db\": it has no options; give 2 to 4 options (\"Other\" is added for you)"
        );
        let five = (0..5).map(|i| option(&format!("o{i}"))).collect();
        assert_eq!(
            error(json!({"questions": [question("Db", five)]})),
            "question \"Db\": it has 5 options; give 2 to 4 options (\"Other\" is added for you)"
        );
        assert_eq!(
            error(json!({"questions": [question("Db", vec![option("A"), option("a")])]})),
            "question \"Db\": two options are labelled \"a\"; labels must differ"
        );
        assert_eq!(
            error(
                json!({"questions": [question("Database kind", vec![option("A"), option("B")])]})
            ),
            "the header \"Database kind\" has 13 characters; keep headers at most 12"
        );
        assert_eq!(
            error(json!({"questions": []})),
            "ask_user takes 1 to 4 questions, got 0"
        );
        let two = question("Db", vec![option("A"), option("B")]);
        assert_eq!(
            error(json!({"questions": [two.clone(), two]})),
            "two questions have the header \"Db\"; give each question its own header"
        );
        assert_eq!(
            error(json!({"questions": [question("Db", vec![option("A"), option("other")])]})),
            "question \"Db\": an option is labelled \"Other\"; leave it out (a free-text Other \
             answer is always offered)"
        );
    }

    #[test]
    fn terminal_escapes_and_bidi_overrides_are_removed_from_what_the_user_sees() {
        let args = json!({"questions": [{
            "question": "Allow\u{1b}[2J\u{1b}]0;corvid\u{7} this?\nSure\u{202E}txt.exe",
            "header": "\u{1b}[31mDb\n",
            "options": [option("Yes\u{9b}1m"), option("No")],
            "multiSelect": true
        }]});
        let q = &questions_of(&args).unwrap()[0];
        assert_eq!(q.question, "Allow[2J]0;corvid this?\nSuretxt.exe");
        assert_eq!(q.header, "[31mDb");
        assert_eq!(q.options[0].label, "Yes1m");
    }

    #[test]
    fn answers_read_header_then_labels_or_the_other_text() {
        let args = json!({"questions": [
            question("Db", vec![option("Postgres"), option("SQLite")]),
            {"question": "Which?", "header": "Extras", "multiSelect": true,
             "options": [option("Auth"), option("Cache"), option("Logs")]},
        ]});
        let questions = questions_of(&args).unwrap();
        let output = answers_output(
            &questions,
            &[
                QuestionAnswer {
                    header: "Db".into(),
                    labels: vec![],
                    other: Some("MySQL\u{1b}[0m".into()),
                },
                QuestionAnswer {
                    header: "Extras".into(),
                    labels: vec!["Logs".into(), "Auth".into(), "Invented".into()],
                    other: None,
                },
            ],
        );
        assert_eq!(
            output.text,
            "The user answered:\n- Db: Other: \"MySQL[0m\"\n- Extras: Auth, Logs"
        );
    }
}
