//! Questions the model asks the user (`ask_user`): what front ends show and what they answer.
//! The core checks and cleans the questions before any front end sees them.

use serde::{Deserialize, Serialize};

/// One multiple-choice question, in Claude Code's `AskUserQuestion` shape (the model's
/// arguments parse into it as they are).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    /// The question, in the model's words.
    pub question: String,
    /// A short tag (at most 12 characters) that names the question in answers.
    pub header: String,
    /// The choices (2 to 4); an "Other" free-text answer is always offered besides.
    pub options: Vec<QuestionOption>,
    /// Whether several options may be chosen.
    #[serde(default)]
    pub multi_select: bool,
}

/// One choice of a [`Question`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionOption {
    pub label: String,
    #[serde(default)]
    pub description: String,
}

/// The user's answer to one question: the labels chosen, and the "Other" text if they
/// typed one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionAnswer {
    pub header: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other: Option<String>,
}

/// How the user replied to an `ask_user` call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum QuestionReply {
    /// One answer per question.
    Answered { answers: Vec<QuestionAnswer> },
    /// The user dismissed the questions: the task is cancelled.
    Cancelled,
}
