//! `session/prompt` content → the core's user turn: text as is, images as image parts, and
//! files the editor linked or embedded as context the model reads (a link's file is read from
//! disk, capped, because the user attached it deliberately). Nothing is dropped silently:
//! content corvid cannot pass on is refused with an error naming it.

use std::path::PathBuf;

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource, ResourceLink};
use agent_client_protocol::{Error, ErrorCode};
use corvid_core::attach::file_context;
use corvid_core::images::check_image;
use corvid_protocol::ImageData;

/// A prompt as the core takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Prompt {
    pub text: String,
    pub images: Vec<ImageData>,
}

/// Converts the prompt's blocks; an invalid image or unsupported content is an
/// `invalid_params` error saying what to send instead.
pub(crate) fn convert(blocks: &[ContentBlock]) -> Result<Prompt, Error> {
    let mut parts = Vec::new();
    let mut images = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(text) => parts.push(text.text.clone()),
            ContentBlock::Image(image) => {
                images.push(checked(ImageData {
                    media_type: image.mime_type.clone(),
                    data_base64: image.data.clone(),
                })?);
            }
            ContentBlock::ResourceLink(link) => parts.push(linked(link)),
            ContentBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::TextResourceContents(contents) => parts.push(format!(
                    "<context ref=\"{}\">\n{}\n</context>",
                    path_or_uri(&contents.uri),
                    contents.text
                )),
                EmbeddedResourceResource::BlobResourceContents(blob)
                    if blob
                        .mime_type
                        .as_deref()
                        .is_some_and(|m| m.starts_with("image/")) =>
                {
                    images.push(checked(ImageData {
                        media_type: blob.mime_type.clone().unwrap_or_default(),
                        data_base64: blob.blob.clone(),
                    })?);
                }
                EmbeddedResourceResource::BlobResourceContents(blob) => parts.push(format!(
                    "<context ref=\"{}\">\n[binary content{}: not included]\n</context>",
                    path_or_uri(&blob.uri),
                    blob.mime_type
                        .as_deref()
                        .map(|m| format!(" ({m})"))
                        .unwrap_or_default()
                )),
                other => return Err(unsupported(&format!("{other:?}"))),
            },
            ContentBlock::Audio(_) => {
                return Err(Error::new(
                    ErrorCode::INVALID_PARAMS,
                    "audio prompts are not supported (promptCapabilities.audio is false); send \
                     text instead",
                ));
            }
            other => return Err(unsupported(&format!("{other:?}"))),
        }
    }
    Ok(Prompt {
        text: parts.join("\n"),
        images,
    })
}

fn checked(image: ImageData) -> Result<ImageData, Error> {
    check_image(&image).map_err(|e| Error::new(ErrorCode::INVALID_PARAMS, e))?;
    Ok(image)
}

fn unsupported(what: &str) -> Error {
    Error::new(
        ErrorCode::INVALID_PARAMS,
        format!("unsupported prompt content {what}; send text, images or resources"),
    )
}

/// A link to a local file (`file://` URI or absolute path) brings the file's contents; any
/// other link is passed on as its name and address.
fn linked(link: &ResourceLink) -> String {
    match local_path(&link.uri) {
        Some(path) => file_context(&path, &path.display().to_string()),
        None => format!("@{} ({})", link.name, link.uri),
    }
}

fn local_path(uri: &str) -> Option<PathBuf> {
    if uri.starts_with("file:") {
        return url::Url::parse(uri).ok()?.to_file_path().ok();
    }
    let path = PathBuf::from(uri);
    path.is_absolute().then_some(path)
}

/// `file:///x/y` as the path `/x/y` (what the file tools accept); other URIs unchanged.
fn path_or_uri(uri: &str) -> String {
    match local_path(uri) {
        Some(path) if uri.starts_with("file:") => path.display().to_string(),
        _ => uri.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::ImageContent;
    use pretty_assertions::assert_eq;

    #[test]
    fn text_and_an_image_become_the_prompt_and_an_image_part() {
        let prompt = convert(&[
            ContentBlock::from("what is this?"),
            ContentBlock::Image(ImageContent::new("iVBORw==", "image/png")),
        ])
        .unwrap();
        assert_eq!(
            prompt,
            Prompt {
                text: "what is this?".into(),
                images: vec![ImageData {
                    media_type: "image/png".into(),
                    data_base64: "iVBORw==".into()
                }],
            }
        );
    }

    #[test]
    fn an_invalid_image_is_refused_naming_the_problem() {
        let err =
            convert(&[ContentBlock::Image(ImageContent::new("x", "image/tiff"))]).unwrap_err();
        assert_eq!(
            (err.code, err.message),
            (
                ErrorCode::INVALID_PARAMS,
                "image type `image/tiff` is not supported; attach PNG, JPEG, GIF or WebP".into()
            )
        );
    }

    #[test]
    fn a_linked_local_file_brings_its_contents_and_a_percent_encoded_uri_is_decoded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("my notes.md");
        std::fs::write(&path, "remember the milk").unwrap();
        let uri = url::Url::from_file_path(&path).unwrap().to_string();
        assert!(uri.contains("%20"), "{uri}");
        let prompt = convert(&[ContentBlock::ResourceLink(ResourceLink::new(
            "my notes.md",
            uri,
        ))])
        .unwrap();
        assert_eq!(
            prompt.text,
            format!(
                "<context ref=\"{}\">\nremember the milk\n</context>",
                path.display()
            )
        );
    }

    #[test]
    fn a_remote_link_stays_a_name_and_address() {
        let prompt = convert(&[ContentBlock::ResourceLink(ResourceLink::new(
            "spec",
            "https://example.com/spec",
        ))])
        .unwrap();
        assert_eq!(prompt.text, "@spec (https://example.com/spec)");
    }
}
