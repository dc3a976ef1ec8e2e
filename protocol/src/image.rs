//! Images as providers take them, and what every provider corvid speaks accepts: the one
//! check for an attached prompt image and an image a tool returned.

use serde::{Deserialize, Serialize};

/// An image as providers take it: a media type and the base64 of its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageData {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// Standard base64 (with padding) of the image file.
    pub data_base64: String,
}

/// The largest image (decoded bytes) one prompt or tool result may carry; both providers
/// reject larger ones.
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// The media types every provider corvid speaks accepts.
pub const IMAGE_MEDIA_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// Why an image cannot be sent to a model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageProblem {
    /// A media type not in [`IMAGE_MEDIA_TYPES`] (SVG, say).
    #[error("image type `{0}` is not supported")]
    UnsupportedType(String),
    /// Data that is not standard, padded base64.
    #[error("the {0} image is not valid base64 (standard alphabet, padded)")]
    NotBase64(String),
    /// More than [`MAX_IMAGE_BYTES`] once decoded.
    #[error(
        "the {media_type} image is {:.1} MiB; images are limited to {} MiB",
        *bytes as f64 / (1024.0 * 1024.0),
        MAX_IMAGE_BYTES / (1024 * 1024)
    )]
    TooLarge { media_type: String, bytes: usize },
}

impl ImageData {
    /// Checks that a provider will take this image: a supported media type, well-formed
    /// base64, at most [`MAX_IMAGE_BYTES`] once decoded.
    pub fn check(&self) -> Result<(), ImageProblem> {
        if !IMAGE_MEDIA_TYPES.contains(&self.media_type.as_str()) {
            return Err(ImageProblem::UnsupportedType(self.media_type.clone()));
        }
        let data = self.data_base64.as_bytes();
        let body = unpadded(data);
        let well_formed = !data.is_empty()
            && data.len().is_multiple_of(4)
            && body
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/');
        if !well_formed {
            return Err(ImageProblem::NotBase64(self.media_type.clone()));
        }
        let bytes = decoded_len(&self.data_base64);
        if bytes > MAX_IMAGE_BYTES {
            return Err(ImageProblem::TooLarge {
                media_type: self.media_type.clone(),
                bytes,
            });
        }
        Ok(())
    }
}

/// How many bytes standard base64 text decodes to (its padding counted off), without decoding
/// it: what the size limits on images and files are held against.
pub fn decoded_len(base64: &str) -> usize {
    let data = base64.as_bytes();
    (data.len() / 4 * 3).saturating_sub(data.len() - unpadded(data).len())
}

/// `data` without its trailing `=` padding.
fn unpadded(data: &[u8]) -> &[u8] {
    data.strip_suffix(b"==")
        .or_else(|| data.strip_suffix(b"="))
        .unwrap_or(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoded_len_counts_the_padding_off() {
        assert_eq!(
            ["", "AAAA", "AAA=", "AA==", "iVBORw=="].map(decoded_len),
            [0, 3, 2, 1, 4]
        );
    }
}
