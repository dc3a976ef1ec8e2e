//! The Responses API's hosted web search (`{"type": "web_search"}`): offered in the request
//! when the user chose `{"type": "openai"}` in `webSearch`, its `web_search_call` output
//! items turned into hosted blocks (shown, never executed) and sent back verbatim in later
//! requests' `input`.

use corvid_protocol::{HostedBlock, HostedStep, JsonText};
use serde_json::Value;
use serde_json::value::RawValue;

/// The provider name hosted blocks carry, so only this provider sends them back.
pub(crate) const PROVIDER: &str = "openai-responses";

/// The hosted blocks for a finished `web_search_call` item: the call (its data the item as
/// it came minus its `id`, replayed) and its result as the card shows it (never replayed).
/// Without `store` the server keeps no item an id could name, so the id stays out of the
/// replay, as it does for reasoning items.
pub(crate) fn blocks(raw: &RawValue) -> Vec<HostedBlock> {
    let Ok(item) = serde_json::from_str::<Value>(raw.get()) else {
        return Vec::new();
    };
    let id = item
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let action = item.get("action").cloned().unwrap_or(Value::Null);
    let query = action.get("query").and_then(Value::as_str);
    let title = match query {
        Some(query) => format!("Search \"{query}\""),
        None => "Web search".to_owned(),
    };
    let status = item.get("status").and_then(Value::as_str).unwrap_or("");
    let is_error = status == "failed";
    let mut text = String::new();
    let sources = action.get("sources").and_then(Value::as_array);
    for (n, source) in sources.into_iter().flatten().enumerate() {
        let url = source.get("url").and_then(Value::as_str).unwrap_or("");
        text.push_str(&format!("{}. {url}\n", n + 1));
    }
    let text = match (is_error, text.is_empty()) {
        (true, _) => "The web search failed.".to_owned(),
        (false, true) => "Searched.".to_owned(),
        (false, false) => text.trim_end().to_owned(),
    };
    let result_data = serde_json::json!({"type": "web_search_call_result", "id": id});
    vec![
        HostedBlock {
            provider: PROVIDER.to_owned(),
            call_id: id.clone(),
            tool_name: "web_search".to_owned(),
            step: HostedStep::Call {
                title,
                args: action,
            },
            data: JsonText::new(&without_id(&item)),
        },
        HostedBlock {
            provider: PROVIDER.to_owned(),
            call_id: id,
            tool_name: "web_search".to_owned(),
            step: HostedStep::Result { text, is_error },
            data: JsonText::new(&result_data),
        },
    ]
}

/// `item` without its top-level `id`.
fn without_id(item: &Value) -> Value {
    let mut replay = item.clone();
    if let Some(fields) = replay.as_object_mut() {
        fields.remove("id");
    }
    replay
}
