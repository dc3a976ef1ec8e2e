//! `--answers FILE.json`: the answers a headless run gives the model's `ask_user` questions,
//! by header: `{"Db": "SQLite", "Extras": ["Auth", "Cache"], "Name": "my own words"}`. A
//! string that is one of the question's labels chooses it; any other string is the "Other"
//! text. Without the file, headless runs do not offer `ask_user` at all.

use std::collections::BTreeMap;
use std::path::Path;

use corvid_protocol::{Question, QuestionAnswer, QuestionReply};
use serde::Deserialize;

/// The answers of the file, by question header.
#[derive(Debug, Clone, PartialEq)]
pub struct Answers(BTreeMap<String, Answer>);

/// One header's answer: a label or free text, or several for a multi-select question.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
enum Answer {
    One(String),
    Several(Vec<String>),
}

impl Answers {
    /// Reads and checks the file; the error names the file and what is wrong with it.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the answers file {}: {e}", path.display()))?;
        serde_json::from_str(&text).map(Self).map_err(|e| {
            format!(
                "the answers file {} is not a JSON object of header → answer (a string, or a \
                 list of strings for a multi-select question): {e}",
                path.display()
            )
        })
    }

    /// The reply to these questions; `Err` names the first header the file does not answer.
    pub fn reply(&self, questions: &[Question]) -> Result<QuestionReply, String> {
        let answers = questions
            .iter()
            .map(|q| {
                let given = self
                    .0
                    .get(&q.header)
                    .or_else(|| {
                        // Headers are short tags; a differently cased key still answers.
                        self.0
                            .iter()
                            .find(|(k, _)| k.eq_ignore_ascii_case(&q.header))
                            .map(|(_, v)| v)
                    })
                    .ok_or_else(|| q.header.clone())?;
                let texts = match given {
                    Answer::One(text) => std::slice::from_ref(text),
                    Answer::Several(texts) => texts.as_slice(),
                };
                let mut labels = Vec::new();
                let mut other = Vec::new();
                for text in texts {
                    match q
                        .options
                        .iter()
                        .find(|o| o.label.eq_ignore_ascii_case(text))
                    {
                        Some(option) => labels.push(option.label.clone()),
                        None => other.push(text.trim().to_owned()),
                    }
                }
                Ok(QuestionAnswer {
                    header: q.header.clone(),
                    labels,
                    other: (!other.is_empty()).then(|| other.join("; ")),
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(QuestionReply::Answered { answers })
    }
}

/// What a run stops with when the file does not answer a question.
pub fn missing_message(header: &str, path_hint: &str) -> String {
    format!(
        "the model asked a question headed \"{header}\" and the answers file {path_hint} has \
         no answer for it; add \"{header}\": \"<one of the options, or your own text>\" to it"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use corvid_protocol::QuestionOption;
    use pretty_assertions::assert_eq;

    fn question(header: &str, multi_select: bool) -> Question {
        Question {
            question: "Which?".into(),
            header: header.into(),
            options: ["Postgres", "SQLite"]
                .iter()
                .map(|l| QuestionOption {
                    label: (*l).into(),
                    description: String::new(),
                })
                .collect(),
            multi_select,
        }
    }

    #[test]
    fn labels_choose_options_and_other_strings_are_free_text() {
        let answers: Answers = Answers(
            serde_json::from_str(r#"{"Db": "sqlite", "Both": ["Postgres", "MySQL"]}"#).unwrap(),
        );
        let reply = answers
            .reply(&[question("db", false), question("Both", true)])
            .unwrap();
        assert_eq!(
            reply,
            QuestionReply::Answered {
                answers: vec![
                    QuestionAnswer {
                        header: "db".into(),
                        labels: vec!["SQLite".into()],
                        other: None
                    },
                    QuestionAnswer {
                        header: "Both".into(),
                        labels: vec!["Postgres".into()],
                        other: Some("MySQL".into())
                    },
                ]
            }
        );
        assert_eq!(
            answers.reply(&[question("Missing", false)]),
            Err("Missing".to_owned())
        );
    }

    #[test]
    fn a_file_that_is_no_object_of_answers_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        std::fs::write(&path, r#"{"Db": 3}"#).unwrap();
        let err = Answers::load(&path).unwrap_err();
        assert!(err.starts_with("the answers file "), "{err}");
        assert!(err.contains("a.json"), "{err}");
    }
}
