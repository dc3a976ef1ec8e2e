//! A `tools/call` result as a corvid tool result: text for the model, a short note for every
//! image, audio clip or resource, and the structured result for `rawOutput`.

use corvid_protocol::ToolOutput;
use corvid_tools::ToolError;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::Value;

/// The most text one result hands the model; a server is untrusted and may answer megabytes.
pub const MAX_RESULT_BYTES: usize = 100_000;

/// The tool result of a call to `tool` on `server`; `isError` makes it a failed call whose
/// message names the server.
pub fn to_output(
    server: &str,
    tool: &str,
    result: &CallToolResult,
) -> Result<ToolOutput, ToolError> {
    let mut parts: Vec<String> = result.content.iter().map(describe).collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    let text = cap(parts.join("\n"));
    if result.is_error == Some(true) {
        let detail = if text.is_empty() {
            "no details given".to_owned()
        } else {
            text
        };
        return Err(ToolError::new(format!(
            "MCP server `{server}`: tool `{tool}` reported an error: {detail}"
        )));
    }
    Ok(ToolOutput::new(text, raw(result)))
}

/// One content block as text for the model.
fn describe(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => {
            format!("[image: {}, {} bytes base64]", i.mime_type, i.data.len())
        }
        ContentBlock::Audio(a) => {
            format!("[audio: {}, {} bytes base64]", a.mime_type, a.data.len())
        }
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource: {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[resource: {uri}, {}, {} bytes base64]",
                mime_type.as_deref().unwrap_or("binary"),
                blob.len()
            ),
            _ => "[resource of an unknown kind]".to_owned(),
        },
        ContentBlock::ResourceLink(link) => {
            format!("[resource link: {} ({})]", link.uri, link.name)
        }
        _ => "[content of a kind corvid does not show]".to_owned(),
    }
}

/// The result as JSON for `rawOutput`, with base64 payloads replaced by their size (they would
/// bloat every frame and recording).
fn raw(result: &CallToolResult) -> Value {
    let mut value = serde_json::to_value(result).unwrap_or(Value::Null);
    if let Some(Value::Array(blocks)) = value.get_mut("content") {
        for block in blocks {
            strip_payload(block);
            if let Some(resource) = block.get_mut("resource") {
                strip_payload(resource);
            }
        }
    }
    value
}

fn strip_payload(value: &mut Value) {
    for key in ["data", "blob"] {
        if let Some(Value::String(s)) = value.get(key) {
            let note = Value::String(format!("<{} bytes base64>", s.len()));
            value[key] = note;
        }
    }
}

/// `text` cut to [`MAX_RESULT_BYTES`] on a character boundary, saying how much was cut.
fn cap(mut text: String) -> String {
    if text.len() <= MAX_RESULT_BYTES {
        return text;
    }
    let mut end = MAX_RESULT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = text.len() - end;
    text.truncate(end);
    text.push_str(&format!("\n... [{cut} more bytes cut]"));
    text
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    fn result(value: Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn text_images_and_resources_become_text_for_the_model() {
        let r = result(json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "test://a", "text": "body"}},
        ]}));
        let out = to_output("s", "t", &r).unwrap();
        assert_eq!(
            out.text,
            "hello\n[image: image/png, 4 bytes base64]\n[resource: test://a]\nbody"
        );
        assert_eq!(out.raw["content"][1]["data"], json!("<4 bytes base64>"));
    }

    #[test]
    fn is_error_fails_the_call_naming_the_server() {
        let r =
            result(json!({"content": [{"type": "text", "text": "bad input"}], "isError": true}));
        assert_eq!(
            to_output("files", "read", &r).unwrap_err().message,
            "MCP server `files`: tool `read` reported an error: bad input"
        );
    }

    #[test]
    fn structured_content_stands_in_for_missing_content_and_huge_text_is_cut() {
        let r = result(json!({"content": [], "structuredContent": {"sum": 3}}));
        assert_eq!(to_output("s", "t", &r).unwrap().text, r#"{"sum":3}"#);
        let big =
            result(json!({"content": [{"type": "text", "text": "é".repeat(MAX_RESULT_BYTES)}]}));
        let text = to_output("s", "t", &big).unwrap().text;
        assert!(text.len() < MAX_RESULT_BYTES + 40 && text.ends_with("more bytes cut]"));
    }
}
