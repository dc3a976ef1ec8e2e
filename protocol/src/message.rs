//! Conversation history: what is sent to models and recorded in sessions.
//! Stream-only events (such as tool preparation) never appear here.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::image::ImageData;
use crate::stream::JsonText;

/// Who authored a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
}

/// One message of the history: a role and its ordered parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub parts: Vec<Part>,
}

impl Message {
    /// A user message holding one text part.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            parts: vec![Part::Text { text: text.into() }],
        }
    }

    /// The concatenated visible text of this message.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// A piece of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    /// Visible text.
    Text { text: String },
    /// Model reasoning; the signature must be sent back unchanged (Anthropic).
    Thought {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        /// Opaque state the provider needs back with this reasoning (the Responses API's
        /// reasoning item, encrypted content included). The core never reads it: only the
        /// provider that produced it sends it back, byte for byte, and the others skip it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_data: Option<JsonText>,
    },
    /// A complete tool call requested by the assistant.
    ToolCall(ToolCall),
    /// The result of a tool call, paired with it by `call_id`; sent as a user message.
    ToolResult(ToolResult),
    /// An image the user attached to a prompt. The bytes stay in the recording so a resumed
    /// session sends the model the same conversation (each image is capped by the core).
    Image(ImageData),
    /// A step the model's API ran itself (Anthropic's server-side web search), kept so the
    /// provider that produced it sends it back verbatim.
    Hosted(HostedBlock),
}

/// A step the model's API ran on its own servers (Anthropic's server-side `web_search`):
/// shown as a card, never executed by corvid, and sent back verbatim by the provider that
/// produced it (the API requires the blocks in the replayed history); other providers skip it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostedBlock {
    /// The provider that produced it (`anthropic`); only it sends the block back.
    pub provider: String,
    /// The API's id, shared by a call and its result (`srvtoolu_…`).
    pub call_id: String,
    /// The API's name of the tool (`web_search`).
    pub tool_name: String,
    pub step: HostedStep,
    /// The content block exactly as the API sent it.
    pub data: JsonText,
}

/// Which half of a hosted tool use a block is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum HostedStep {
    /// The model asked the API to run the tool; `title` is the card's (`Search "query"`).
    Call { title: String, args: Value },
    /// The API's result as text for the card (titles and URLs), or its error.
    Result { text: String, is_error: bool },
}

/// A complete tool call: the arguments are whole and parsed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub call_id: String,
    pub name: String,
    /// The parsed arguments. Usually an object; anything else is answered as a tool error.
    pub args: Value,
}

/// What a tool returned, as the model will see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    pub call_id: String,
    pub name: String,
    pub output: String,
    #[serde(default)]
    pub is_error: bool,
    /// Images the tool returned beside `output`; recorded, so a resumed session sends them
    /// again (older recordings have none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageData>,
}

/// A conversation's messages, shared: the agent's history and every request built from it
/// point at the same messages, so sending a long history costs no copy of it (a session's
/// per-turn cost stays flat as it grows). Appending copies only when a request still holds
/// the old list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "Vec<Message>", into = "Vec<Message>")]
pub struct Messages(std::sync::Arc<Vec<Message>>);

impl Messages {
    /// Appends a message.
    pub fn push(&mut self, message: Message) {
        std::sync::Arc::make_mut(&mut self.0).push(message);
    }
}

impl std::ops::Deref for Messages {
    type Target = Vec<Message>;

    fn deref(&self) -> &Vec<Message> {
        &self.0
    }
}

impl From<Vec<Message>> for Messages {
    fn from(messages: Vec<Message>) -> Self {
        Self(std::sync::Arc::new(messages))
    }
}

impl From<Messages> for Vec<Message> {
    fn from(messages: Messages) -> Self {
        std::sync::Arc::unwrap_or_clone(messages.0)
    }
}

impl PartialEq<Vec<Message>> for Messages {
    fn eq(&self, other: &Vec<Message>) -> bool {
        *self.0 == *other
    }
}

impl<'a> IntoIterator for &'a Messages {
    type Item = &'a Message;
    type IntoIter = std::slice::Iter<'a, Message>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl PartialEq<Messages> for Vec<Message> {
    fn eq(&self, other: &Messages) -> bool {
        *self == *other.0
    }
}

impl Extend<Message> for Messages {
    fn extend<I: IntoIterator<Item = Message>>(&mut self, messages: I) {
        std::sync::Arc::make_mut(&mut self.0).extend(messages);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn a_thoughts_provider_data_survives_a_recording_so_a_resumed_session_sends_it_again() {
        let item = json!({"type": "reasoning", "encrypted_content": "gAAAA==", "summary": []});
        let part = Part::Thought {
            text: "summary".into(),
            signature: None,
            provider_data: Some(JsonText::new(&item)),
        };
        let recorded = serde_json::to_string(&part).unwrap();
        let back: Part = serde_json::from_str(&recorded).unwrap();
        assert_eq!(back, part);
        // Older recordings (and other providers' thoughts) have no such field.
        let old: Part =
            serde_json::from_str(r#"{"type":"thought","text":"t","signature":"s"}"#).unwrap();
        assert_eq!(
            old,
            Part::Thought {
                text: "t".into(),
                signature: Some("s".into()),
                provider_data: None,
            }
        );
        assert!(
            !serde_json::to_string(&old)
                .unwrap()
                .contains("provider_data")
        );
    }

    #[test]
    fn a_hosted_block_survives_a_recording_byte_for_byte() {
        let block = json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
            "content": [{"type": "web_search_result", "url": "https://a.example", "encrypted_content": "Eq=="}]});
        let part = Part::Hosted(HostedBlock {
            provider: "anthropic".into(),
            call_id: "srvtoolu_1".into(),
            tool_name: "web_search".into(),
            step: HostedStep::Result {
                text: "1. A\n   https://a.example".into(),
                is_error: false,
            },
            data: JsonText::new(&block),
        });
        let recorded = serde_json::to_string(&part).unwrap();
        let back: Part = serde_json::from_str(&recorded).unwrap();
        assert_eq!(back, part);
        let Part::Hosted(back) = back else {
            unreachable!()
        };
        assert_eq!(back.data.get(), JsonText::new(&block).get());
    }
}
