//! Gemini's `thoughtSignature`s as opaque provider data on history parts.
//!
//! A signature rides on the text, thought or functionCall part it came with and must go back
//! on that same part, byte-exact. The core keeps it as a thought part's `provider_data`
//! (via `StreamEvent::ThoughtData`) without reading it; this module is the one place that
//! knows the shape: which part it belongs to and, for a call, which call.

use corvid_protocol::JsonText;
use serde::{Deserialize, Serialize};

/// The `type` tag that marks provider data as a Gemini signature (other providers skip it).
pub(super) const TAG: &str = "gemini_signature";

/// The documented signature for history corvid did not get from Gemini (another provider's
/// turns, a hand-built transcript): Gemini 3 rejects a step whose first functionCall has none.
pub(super) const PLACEHOLDER: &str = "skip_thought_signature_validator";

/// Which part of a model turn a signature came with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum On {
    Text,
    Thought,
    Call,
}

/// One signature and the part it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Signed {
    #[serde(rename = "type")]
    pub kind: String,
    pub on: On,
    pub thought_signature: String,
    /// For a call: the id corvid gave it, then its position among the response's calls
    /// (the core may rename an id that collides with an earlier one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_index: Option<usize>,
}

impl Signed {
    pub(super) fn new(on: On, signature: &str) -> Self {
        Self {
            kind: TAG.to_owned(),
            on,
            thought_signature: signature.to_owned(),
            call_id: None,
            call_index: None,
        }
    }

    pub(super) fn to_data(&self) -> JsonText {
        // Serializing a struct of strings and numbers cannot fail.
        #[allow(clippy::expect_used)]
        JsonText::new(&serde_json::to_value(self).expect("plain struct serializes"))
    }

    /// The signature `data` holds, when it is Gemini's.
    pub(super) fn from_data(data: &JsonText) -> Option<Self> {
        serde_json::from_str::<Self>(data.raw().get())
            .ok()
            .filter(|s| s.kind == TAG)
    }
}

/// Whether `text` is standard base64 (signatures are bytes; anything else is not Gemini's).
pub(super) fn is_base64(text: &str) -> bool {
    let body = text.trim_end_matches('=');
    !text.is_empty()
        && text.len() - body.len() <= 2
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_'))
}
