//! A `tools/call` result as a corvid tool result: text for the model, real images (those a
//! provider takes), resources for front ends that show them, a short note for the model on
//! everything else, and the structured result for `rawOutput`.

use corvid_protocol::{ImageData, MAX_IMAGE_BYTES, ToolOutput, ToolResource, decoded_len};
use corvid_tools::ToolError;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::Value;

/// The most text one result hands the model; a server is untrusted and may answer megabytes.
pub const MAX_RESULT_BYTES: usize = 100_000;

/// The most image and file bytes (decoded) one result keeps: each image rides in every later
/// request of the session and each blob in every frame that shows the card, so an untrusted
/// server must not fill the history with them. Later ones become notes (blobs, links).
pub const MAX_RESULT_MEDIA_BYTES: usize = 2 * MAX_IMAGE_BYTES;

/// The tool result of a call to `tool` on `server`; `isError` makes it a failed call whose
/// message names the server.
pub fn to_output(
    server: &str,
    tool: &str,
    result: &CallToolResult,
) -> Result<ToolOutput, ToolError> {
    let mut output = ToolOutput::new(String::new(), raw(result));
    let mut parts = Vec::new();
    let mut media_left = MAX_RESULT_MEDIA_BYTES;
    for block in &result.content {
        if let Some(text) = add(block, &mut output, &mut media_left) {
            parts.push(text);
        }
    }
    if parts.is_empty()
        && output.images.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    output.text = cap(parts.join("\n"));
    if result.is_error == Some(true) {
        let detail = if output.text.is_empty() {
            "no details given".to_owned()
        } else {
            output.text
        };
        return Err(ToolError::new(format!(
            "MCP server `{server}`: tool `{tool}` reported an error: {detail}"
        )));
    }
    Ok(output)
}

/// Adds one content block to `output`: an image a provider takes becomes an image, a resource
/// becomes a resource for front ends, while `media_left` (decoded bytes) lasts; returns the
/// text the model gets for it, if any.
fn add(block: &ContentBlock, output: &mut ToolOutput, media_left: &mut usize) -> Option<String> {
    match block {
        ContentBlock::Text(t) => Some(t.text.clone()),
        ContentBlock::Image(i) => {
            let image = ImageData {
                media_type: i.mime_type.clone(),
                data_base64: i.data.clone(),
            };
            match image.check() {
                Ok(()) if decoded_len(&image.data_base64) > *media_left => Some(format!(
                    "[image not shown: this result already carries the most images and files \
                     one result may ({} MiB)]",
                    MAX_RESULT_MEDIA_BYTES / (1024 * 1024)
                )),
                Ok(()) => {
                    *media_left -= decoded_len(&image.data_base64);
                    output.images.push(image);
                    None
                }
                Err(problem) => Some(format!("[image not shown: {problem}]")),
            }
        }
        ContentBlock::Audio(a) => Some(format!(
            "[audio: {}, {} bytes base64]",
            a.mime_type,
            a.data.len()
        )),
        ContentBlock::Resource(r) => Some(match &r.resource {
            ResourceContents::TextResourceContents {
                uri,
                mime_type,
                text,
                ..
            } => {
                output.resources.push(ToolResource::Text {
                    uri: uri.clone(),
                    mime_type: mime_type.clone(),
                    text: cap(text.clone()),
                });
                format!("[resource: {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => {
                // A blob is held to the image cap and the result's budget: it rides in every
                // frame that shows the card.
                let size = decoded_len(blob);
                let kept = size <= MAX_IMAGE_BYTES && size <= *media_left;
                if kept {
                    *media_left -= size;
                }
                output.resources.push(if kept {
                    ToolResource::Blob {
                        uri: uri.clone(),
                        mime_type: mime_type.clone(),
                        blob_base64: blob.clone(),
                    }
                } else {
                    ToolResource::Link {
                        uri: uri.clone(),
                        name: uri.clone(),
                        mime_type: mime_type.clone(),
                    }
                });
                format!(
                    "[resource: {uri}, {}, {} bytes base64]",
                    mime_type.as_deref().unwrap_or("binary"),
                    blob.len()
                )
            }
            _ => "[resource of an unknown kind]".to_owned(),
        }),
        ContentBlock::ResourceLink(link) => {
            output.resources.push(ToolResource::Link {
                uri: link.uri.clone(),
                name: link.name.clone(),
                mime_type: link.mime_type.clone(),
            });
            Some(format!("[resource link: {} ({})]", link.uri, link.name))
        }
        _ => Some("[content of a kind corvid does not show]".to_owned()),
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

    fn png(data: &str) -> ImageData {
        ImageData {
            media_type: "image/png".into(),
            data_base64: data.into(),
        }
    }

    #[test]
    fn images_become_images_and_resources_become_resources_with_text_for_the_model() {
        let r = result(json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "data": "iVBORw==", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "test://a", "mimeType": "text/plain", "text": "body"}},
            {"type": "resource", "resource": {"uri": "test://b", "mimeType": "application/pdf", "blob": "JVBE"}},
            {"type": "resource_link", "uri": "test://c", "name": "c.txt", "mimeType": "text/plain"},
        ]}));
        let out = to_output("s", "t", &r).unwrap();
        assert_eq!(
            out,
            ToolOutput {
                text: "hello\n[resource: test://a]\nbody\n\
                       [resource: test://b, application/pdf, 4 bytes base64]\n\
                       [resource link: test://c (c.txt)]"
                    .into(),
                images: vec![png("iVBORw==")],
                resources: vec![
                    ToolResource::Text {
                        uri: "test://a".into(),
                        mime_type: Some("text/plain".into()),
                        text: "body".into(),
                    },
                    ToolResource::Blob {
                        uri: "test://b".into(),
                        mime_type: Some("application/pdf".into()),
                        blob_base64: "JVBE".into(),
                    },
                    ToolResource::Link {
                        uri: "test://c".into(),
                        name: "c.txt".into(),
                        mime_type: Some("text/plain".into()),
                    },
                ],
                raw: out.raw.clone(),
                ..Default::default()
            }
        );
        assert_eq!(out.raw["content"][1]["data"], json!("<8 bytes base64>"));
        assert_eq!(
            out.raw["content"][3]["resource"]["blob"],
            json!("<4 bytes base64>")
        );
    }

    #[test]
    fn an_image_a_provider_would_refuse_and_audio_stay_notes_saying_why() {
        let huge = "A".repeat((MAX_IMAGE_BYTES / 3 + 1) * 4);
        let r = result(json!({"content": [
            {"type": "image", "data": "PHN2Zz4=", "mimeType": "image/svg+xml"},
            {"type": "image", "data": huge, "mimeType": "image/png"},
            {"type": "image", "data": "not base64!", "mimeType": "image/gif"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
        ]}));
        let out = to_output("s", "t", &r).unwrap();
        assert_eq!(
            (out.text.as_str(), out.images.len()),
            (
                "[image not shown: image type `image/svg+xml` is not supported]\n\
                 [image not shown: the image/png image is 5.0 MiB; images are limited to 5 MiB]\n\
                 [image not shown: the image/gif image is not valid base64 (standard alphabet, padded)]\n\
                 [audio: audio/wav, 4 bytes base64]",
                0
            )
        );
    }

    #[test]
    fn an_oversize_blob_reaches_front_ends_as_a_link() {
        let blob = "A".repeat((MAX_IMAGE_BYTES / 3 + 1) * 4);
        let r = result(json!({"content": [
            {"type": "resource", "resource": {"uri": "test://big", "blob": blob}},
        ]}));
        assert_eq!(
            to_output("s", "t", &r).unwrap().resources,
            vec![ToolResource::Link {
                uri: "test://big".into(),
                name: "test://big".into(),
                mime_type: None,
            }]
        );
    }

    #[test]
    fn a_result_keeps_images_and_files_up_to_its_budget_and_caps_resource_text() {
        let four_mib = "A".repeat(4 * 1024 * 1024 / 3 * 4);
        let r = result(json!({"content": [
            {"type": "image", "data": four_mib, "mimeType": "image/png"},
            {"type": "image", "data": four_mib, "mimeType": "image/png"},
            {"type": "image", "data": four_mib, "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "test://b", "blob": four_mib}},
            {"type": "resource", "resource": {"uri": "test://t", "text": "x".repeat(2 * MAX_RESULT_BYTES)}},
        ]}));
        let out = to_output("s", "t", &r).unwrap();
        assert_eq!(out.images.len(), 2);
        assert!(
            out.text.starts_with(
                "[image not shown: this result already carries the most images and files one \
                 result may (10 MiB)]\n[resource: test://b,"
            ),
            "{}",
            &out.text[..200]
        );
        assert!(matches!(&out.resources[0], ToolResource::Link { uri, .. } if uri == "test://b"));
        let ToolResource::Text { text, .. } = &out.resources[1] else {
            panic!("a text resource expected: {:?}", out.resources[1]);
        };
        assert!(text.len() < MAX_RESULT_BYTES + 40, "{}", text.len());
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
