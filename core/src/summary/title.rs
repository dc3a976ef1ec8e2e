//! Session titles for `/resume` and `corvid sessions list`: one fast-model call after the
//! first answer, bounded like a tool-use summary, cleaned like a label.

use corvid_protocol::{Message, ModelRequest};

use super::{SUMMARY_TIMEOUT, SummaryConfig, clean_label};

/// The longest title kept, in characters.
pub const TITLE_MAX_CHARS: usize = 80;
/// How much of the prompt and of the first answer the fast model reads.
const PROMPT_MAX_CHARS: usize = 600;
const ANSWER_MAX_CHARS: usize = 300;
const MAX_OUTPUT_TOKENS: u32 = 30;
const TEMPERATURE: f64 = 0.3;

const SYSTEM_PROMPT: &str = "\
You name coding sessions so their user can find them again in a list. You are given the \
user's first request and the start of the agent's answer. Answer with a title of 3 to 7 \
words naming the task, like a git commit subject without a trailing period \
(e.g. Fix flaky parser test | Add retry to HTTP client | Explain the build setup). \
Reply with the title only: no quotes, no list marker, no explanation.";

/// The request for a title of the session that began with `prompt` and `answer`.
pub fn build_title_request(model: &str, prompt: &str, answer: &str) -> ModelRequest {
    let cut = |text: &str, max: usize| text.trim().chars().take(max).collect::<String>();
    let user = format!(
        "Request: {}\n\nAnswer: {}\n\nTitle:",
        cut(prompt, PROMPT_MAX_CHARS),
        cut(answer, ANSWER_MAX_CHARS)
    );
    ModelRequest {
        model: model.to_owned(),
        system: SYSTEM_PROMPT.to_owned(),
        messages: vec![Message::user_text(user)].into(),
        tools: Vec::new(),
        max_output_tokens: Some(MAX_OUTPUT_TOKENS),
        temperature: Some(TEMPERATURE),
    }
}

/// Asks the fast model for a title; `None` when it fails, times out or answers nothing
/// usable (the first prompt stands in then). The model's text is hostile: the title keeps no
/// control characters and at most [`TITLE_MAX_CHARS`].
pub async fn session_title(cfg: &SummaryConfig, prompt: &str, answer: &str) -> Option<String> {
    let call = cfg
        .provider
        .complete(build_title_request(&cfg.model, prompt, answer));
    let completion = match tokio::time::timeout(SUMMARY_TIMEOUT, call).await {
        Ok(Ok(completion)) => completion,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "the session title call failed");
            return None;
        }
        Err(_) => {
            tracing::debug!("the session title call timed out");
            return None;
        }
    };
    clean_title(&completion.text)
}

/// A model's answer as a title: a cleaned label without control characters, cut short.
pub fn clean_title(raw: &str) -> Option<String> {
    let label = clean_label(raw)?;
    let title: String = label
        .chars()
        .filter(|c| !c.is_control())
        .take(TITLE_MAX_CHARS)
        .collect();
    let title = title.trim().to_owned();
    (!title.is_empty()).then_some(title)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_title_loses_quotes_control_characters_and_excess_length() {
        assert_eq!(
            clean_title("\"Fix the parser\x1b]0;pwned\x07 test\"\nmore"),
            Some("Fix the parser]0;pwned test".into())
        );
        let long = clean_title(&"word ".repeat(40)).unwrap();
        assert!(long.chars().count() <= TITLE_MAX_CHARS, "{long}");
        assert!(long.starts_with("word word"), "{long}");
        assert_eq!(clean_title("  \n"), None);
    }

    #[test]
    fn the_title_request_cuts_the_prompt_and_answer() {
        let request = build_title_request("fast", &"p".repeat(5000), "answer");
        let text = request
            .messages
            .last()
            .map(|m| m.text())
            .unwrap_or_default();
        assert!(text.starts_with(&format!("Request: {}\n\n", "p".repeat(600))));
        assert!(text.ends_with("Answer: answer\n\nTitle:"));
        assert_eq!(request.max_output_tokens, Some(30));
    }
}
