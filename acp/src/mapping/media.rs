//! A tool's images and resources as ACP tool-call content, so an editor shows what an MCP
//! tool returned (a screenshot, an embedded file, a link) beside its text.

use agent_client_protocol::v1::schema::{
    BlobResourceContents, ContentBlock, EmbeddedResource, EmbeddedResourceResource, ImageContent,
    ResourceLink, TextResourceContents, ToolCallContent,
};
use corvid_protocol::{ToolOutput, ToolResource};

/// The image blocks, then the resource blocks, of `output`.
pub(super) fn media_content(output: &ToolOutput) -> impl Iterator<Item = ToolCallContent> + '_ {
    let images = output.images.iter().map(|image| {
        ContentBlock::Image(ImageContent::new(
            image.data_base64.clone(),
            image.media_type.clone(),
        ))
    });
    images
        .chain(output.resources.iter().map(resource_block))
        .map(ToolCallContent::from)
}

fn resource_block(resource: &ToolResource) -> ContentBlock {
    match resource {
        ToolResource::Text {
            uri,
            mime_type,
            text,
        } => embedded(EmbeddedResourceResource::TextResourceContents(
            TextResourceContents::new(text.clone(), uri.clone()).mime_type(mime_type.clone()),
        )),
        ToolResource::Blob {
            uri,
            mime_type,
            blob_base64,
        } => embedded(EmbeddedResourceResource::BlobResourceContents(
            BlobResourceContents::new(blob_base64.clone(), uri.clone())
                .mime_type(mime_type.clone()),
        )),
        ToolResource::Link {
            uri,
            name,
            mime_type,
        } => ContentBlock::ResourceLink(
            ResourceLink::new(name.clone(), uri.clone()).mime_type(mime_type.clone()),
        ),
    }
}

fn embedded(resource: EmbeddedResourceResource) -> ContentBlock {
    ContentBlock::Resource(EmbeddedResource::new(resource))
}
