//! The fast-model request for one batch (SPEC §7.2): a bounded prompt, so one large tool
//! result cannot inflate the cost of a cosmetic label.

use corvid_protocol::{Message, ModelRequest};
use serde::Serialize;
use serde_json::Value;

use super::BatchForSummary;

/// The longest serialised input or output of one call shown to the fast model.
pub const FIELD_MAX_CHARS: usize = 300;
/// The longest intent line (the assistant's last text before the batch).
pub const INTENT_MAX_CHARS: usize = 200;

const MAX_OUTPUT_TOKENS: u32 = 60;
const TEMPERATURE: f64 = 0.3;
const ELLIPSIS: &str = "...";

const SYSTEM_PROMPT: &str = "\
You name what a coding agent just did. You are given the tools it ran in one step, \
with their inputs and outputs, and sometimes the intent it stated beforehand. \
Answer with one short label in the past tense, written like a git commit subject: \
start with a verb, name the most distinctive thing involved (a file, directory, \
symbol, command or search term), and stay under about 50 characters. \
Examples: Searched in auth/ | Fixed NPE in UserService | Read config.json | Ran failing tests. \
Reply with the label only: no quotes, no list marker, no trailing period, no explanation.";

/// The request sent to the fast model: non-streaming by construction (the caller uses
/// `Provider::complete`), no tools, 60 output tokens, temperature 0.3.
pub fn build_summary_request(model: &str, batch: &BatchForSummary) -> ModelRequest {
    ModelRequest {
        model: model.to_owned(),
        system: SYSTEM_PROMPT.to_owned(),
        messages: vec![Message::user_text(summary_user_message(batch))].into(),
        tools: Vec::new(),
        max_output_tokens: Some(MAX_OUTPUT_TOKENS),
        temperature: Some(TEMPERATURE),
    }
}

/// The user message: an optional intent line, one `Tool`/`Input`/`Output` block per call,
/// and the closing `Label:` the model completes. The demo's scripted fast model reads this
/// layout (`corvid_providers::demo`), so a change here must be made there too.
fn summary_user_message(batch: &BatchForSummary) -> String {
    let mut message = String::new();
    if let Some(intent) = batch.intent.as_deref().map(str::trim)
        && !intent.is_empty()
    {
        let intent: String = intent.chars().take(INTENT_MAX_CHARS).collect();
        message.push_str("Intent: ");
        message.push_str(intent.trim_end());
        message.push_str("\n\n");
    }
    for call in &batch.calls {
        let status = if call.succeeded { "" } else { " (failed)" };
        message.push_str(&format!(
            "Tool: {}{status}\nInput: {}\nOutput: {}\n\n",
            cut_chars(&call.name, FIELD_MAX_CHARS),
            truncate_json(&call.args, FIELD_MAX_CHARS),
            truncate_json(&call.output, FIELD_MAX_CHARS),
        ));
    }
    message.push_str("Label:");
    message
}

/// Serialises `value` to compact JSON of at most `max_chars` characters (Unicode scalar
/// values). Within budget it is returned unchanged. Otherwise strings nested in arrays and
/// objects are first cut to a third of the budget each, so one long string cannot hide its
/// siblings; if that is still too long, the text is cut and ends in `...` (counted in the
/// budget). A value that cannot be serialised is described instead of failing the batch.
pub fn truncate_json<T: Serialize + ?Sized>(value: &T, max_chars: usize) -> String {
    let Ok(value) = serde_json::to_value(value) else {
        return cut_chars("[unserializable value]", max_chars);
    };
    let whole = value.to_string();
    if whole.chars().count() <= max_chars {
        return whole;
    }
    let precut = match value {
        Value::Array(_) | Value::Object(_) => {
            precut_strings(value, nested_string_budget(max_chars))
        }
        other => other,
    };
    cut_chars(&precut.to_string(), max_chars)
}

/// Each nested string gets a third of the budget: room for a path and a command or two.
fn nested_string_budget(max_chars: usize) -> usize {
    (max_chars / 3).max(ELLIPSIS.len() + 1)
}

fn precut_strings(value: Value, budget: usize) -> Value {
    match value {
        Value::String(s) => Value::String(cut_chars(&s, budget)),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|item| precut_strings(item, budget))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, item)| (key, precut_strings(item, budget)))
                .collect(),
        ),
        other => other,
    }
}

/// `text` itself when it fits in `max_chars`; otherwise its start plus `...`, exactly
/// `max_chars` characters long in total.
fn cut_chars(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let keep = max_chars.saturating_sub(ELLIPSIS.len());
    let mut cut: String = text.chars().take(keep).collect();
    cut.push_str(ELLIPSIS);
    cut.chars().take(max_chars).collect()
}
