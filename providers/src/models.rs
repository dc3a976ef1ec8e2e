//! The models a server offers, for model pickers (the ACP `model` option): OpenAI-compatible
//! servers answer `GET {base}/models`, Anthropic `GET {host}/v1/models`; both list
//! `{"data": [{"id": ...}, ...]}`.

use corvid_protocol::{ErrorInfo, ErrorKind};
use serde_json::Value;

/// The most models offered; a gateway listing thousands would make the picker unusable.
pub const MAX_LISTED_MODELS: usize = 500;

/// The model ids of a list answer, in the server's order, without duplicates or blanks.
pub fn model_ids(answer: &Value) -> Result<Vec<String>, ErrorInfo> {
    let Some(data) = answer.get("data").and_then(Value::as_array) else {
        return Err(ErrorInfo::new(
            ErrorKind::BadResponse,
            "the model list has no `data` array",
        ));
    };
    let mut ids: Vec<String> = Vec::new();
    for id in data
        .iter()
        .filter_map(|m| m.get("id").and_then(Value::as_str))
    {
        let id = id.trim();
        if !id.is_empty() && !ids.iter().any(|known| known == id) {
            ids.push(id.to_owned());
        }
        if ids.len() == MAX_LISTED_MODELS {
            break;
        }
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_keep_the_server_order_without_duplicates_or_blanks() {
        let answer = json!({"object": "list", "data": [
            {"id": "gpt-4.1", "object": "model"},
            {"id": " "},
            {"name": "no id"},
            {"id": "o3"},
            {"id": "gpt-4.1"},
        ]});
        assert_eq!(model_ids(&answer).unwrap(), vec!["gpt-4.1", "o3"]);
    }

    #[test]
    fn a_list_without_data_is_a_bad_response() {
        let err = model_ids(&json!({"models": []})).unwrap_err();
        assert_eq!(err.kind, ErrorKind::BadResponse);
        assert!(err.message.contains("`data`"), "{}", err.message);
    }

    #[test]
    fn a_huge_list_is_capped() {
        let data: Vec<Value> = (0..2000).map(|i| json!({"id": format!("m{i}")})).collect();
        assert_eq!(
            model_ids(&json!({ "data": data })).unwrap().len(),
            MAX_LISTED_MODELS
        );
    }
}
