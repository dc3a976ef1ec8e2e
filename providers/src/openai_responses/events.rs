//! The Responses API's stream events as corvid reads them: only the fields it uses are
//! parsed (borrowed where possible), the rest of each event is skipped unparsed.

use corvid_protocol::{JsonText, Usage};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::wire::{Str, lenient_u64};

/// The fields of any stream event that corvid reads; the rest is skipped unparsed.
#[derive(Deserialize, Default)]
pub(super) struct Event<'a> {
    #[serde(borrow, rename = "type", default)]
    pub(super) kind: Option<Str<'a>>,
    #[serde(default, deserialize_with = "lenient_u64")]
    pub(super) sequence_number: Option<u64>,
    #[serde(borrow, default)]
    pub(super) item_id: Option<Str<'a>>,
    #[serde(default, deserialize_with = "lenient_u64")]
    pub(super) output_index: Option<u64>,
    #[serde(default, deserialize_with = "lenient_u64")]
    pub(super) summary_index: Option<u64>,
    #[serde(borrow, default)]
    pub(super) delta: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) arguments: Option<Str<'a>>,
    /// `output_item.added`/`.done`: kept raw, a reasoning item goes back verbatim.
    #[serde(borrow, default)]
    pub(super) item: Option<&'a RawValue>,
    /// Terminal events: the response object, read only at the end.
    #[serde(borrow, default)]
    pub(super) response: Option<&'a RawValue>,
    /// The `{"type":"error","error":{...}}` form some proxies send.
    #[serde(borrow, default)]
    pub(super) error: Option<&'a RawValue>,
    /// A top-level `error` event's own fields.
    #[serde(borrow, default)]
    pub(super) code: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) message: Option<Str<'a>>,
}

/// An output item's identity.
#[derive(Deserialize)]
pub(super) struct Item<'a> {
    #[serde(borrow, rename = "type", default)]
    pub(super) kind: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) call_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) name: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) arguments: Option<Str<'a>>,
    /// A message item's content, for servers that send no text deltas.
    #[serde(default)]
    pub(super) content: Option<Vec<ContentPart>>,
}

#[derive(Deserialize)]
pub(super) struct ContentPart {
    #[serde(rename = "type", default)]
    pub(super) kind: String,
    #[serde(default)]
    pub(super) text: Option<String>,
    #[serde(default)]
    pub(super) refusal: Option<String>,
}

/// The part of a terminal event's response object corvid reads.
#[derive(Deserialize)]
pub(super) struct Response {
    /// The response's id: what `previous_response_id` names on the next request.
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) usage: Option<RawUsage>,
    #[serde(default)]
    pub(super) error: Option<Value>,
    #[serde(default)]
    pub(super) incomplete_details: Option<IncompleteDetails>,
}

#[derive(Deserialize)]
pub(super) struct IncompleteDetails {
    #[serde(default)]
    pub(super) reason: Option<String>,
}

#[derive(Deserialize, Clone, Copy)]
pub(super) struct RawUsage {
    #[serde(default, deserialize_with = "lenient_u64")]
    pub(super) input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient_u64")]
    pub(super) output_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient_u64")]
    pub(super) total_tokens: Option<u64>,
    #[serde(default)]
    pub(super) input_tokens_details: Option<InputDetails>,
    #[serde(default)]
    pub(super) output_tokens_details: Option<OutputDetails>,
}

#[derive(Deserialize, Clone, Copy)]
pub(super) struct InputDetails {
    #[serde(default, deserialize_with = "lenient_u64")]
    pub(super) cached_tokens: Option<u64>,
}

#[derive(Deserialize, Clone, Copy)]
pub(super) struct OutputDetails {
    #[serde(default, deserialize_with = "lenient_u64")]
    pub(super) reasoning_tokens: Option<u64>,
}

impl RawUsage {
    pub(super) fn normalise(self) -> Usage {
        let input = self.input_tokens.unwrap_or(0);
        let output = self.output_tokens.unwrap_or(0);
        Usage {
            input_tokens: input,
            output_tokens: output,
            total_tokens: self.total_tokens.unwrap_or(input.saturating_add(output)),
            cached_input_tokens: self
                .input_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
            reasoning_tokens: self
                .output_tokens_details
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
        }
    }
}

/// A finished reasoning item as it must be sent back: verbatim (every other field's bytes and
/// the field order kept), minus its `id` (items are not stored server-side with
/// `store: false`, and an id would make the server look for one).
pub(super) fn replayable_reasoning(raw: &RawValue) -> Option<JsonText> {
    let fields: Fields<'_> = serde_json::from_str(raw.get()).ok()?;
    let kept = Fields(
        fields
            .0
            .into_iter()
            .filter(|(k, _)| k.as_str() != "id")
            .collect(),
    );
    let text = serde_json::to_string(&kept).ok()?;
    RawValue::from_string(text).ok().map(JsonText::from_raw)
}

/// An object's fields in order, their values untouched.
struct Fields<'a>(Vec<(Str<'a>, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for Fields<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Fields<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut fields = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    fields.push(entry);
                }
                Ok(Fields(fields))
            }
        }
        deserializer.deserialize_map(V)
    }
}

impl Serialize for Fields<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(k, v)| (k.as_str(), v)))
    }
}
