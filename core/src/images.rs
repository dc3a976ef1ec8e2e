//! Images in user prompts and tool results: which models accept them, what an attached image
//! may be, and the messages that carry them. A turn with an image for a model that cannot see
//! it fails at once with an error saying so; a tool's image such a model cannot take becomes a
//! note in the result. An image is never dropped silently.

use corvid_protocol::{ErrorInfo, ErrorKind, ImageData, ImageProblem, Message, Part, Role};

/// Whether the session's model accepts images: by the model's name unless the
/// `model.supportsImages` setting says otherwise.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImageSupport {
    /// `model.supportsImages`; `None` decides by [`model_accepts_images`].
    pub setting: Option<bool>,
}

impl ImageSupport {
    /// Whether `model` may be sent images.
    pub fn accepts(self, model: &str) -> bool {
        self.setting.unwrap_or_else(|| model_accepts_images(model))
    }
}

/// Whether the main model `settings` configure accepts images (false when no provider is
/// configured: nothing can be sent then anyway).
pub fn default_model_accepts_images(
    settings: &crate::settings::Settings,
    env: impl Fn(&str) -> Option<String>,
) -> bool {
    let support = ImageSupport {
        setting: settings.model.supports_images,
    };
    crate::settings::resolve_provider(settings, env).is_ok_and(|main| support.accepts(&main.model))
}

/// Whether a model of this name accepts images, from what the vendors publish. Unknown models
/// are assumed not to (`model.supportsImages: true` overrides), so an image never reaches a
/// text-only model that would ignore it or fail obscurely.
pub fn model_accepts_images(model: &str) -> bool {
    let lower = model.to_ascii_lowercase();
    // Routers and local servers prefix a vendor (`openai/gpt-4o`) or append a tag (`llava:13b`).
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    let name = name.split(':').next().unwrap_or(name);
    if let Some(rest) = name.strip_prefix("claude-") {
        return !["1", "2", "instant"]
            .iter()
            .any(|old| rest.starts_with(old));
    }
    if let Some(rest) = name.strip_prefix('o')
        && rest.starts_with(['1', '3', '4'])
    {
        return !(rest.starts_with("1-mini")
            || rest.starts_with("1-preview")
            || rest.starts_with("3-mini"));
    }
    const VISION_PREFIXES: [&str; 8] = [
        "gpt-4o",
        "chatgpt-4o",
        "gpt-4.1",
        "gpt-4-turbo",
        "gpt-5",
        "gemini",
        "pixtral",
        "llava",
    ];
    VISION_PREFIXES.iter().any(|p| name.starts_with(p))
        || (name.starts_with("qwen") && name.contains("vl"))
        || name.contains("llava")
        || name.contains("vision")
}

/// Checks one attached image (see [`ImageData::check`]); the error names the problem and
/// what to send instead.
pub fn check_image(image: &ImageData) -> Result<(), String> {
    image.check().map_err(|problem| match problem {
        ImageProblem::UnsupportedType(_) => format!("{problem}; attach PNG, JPEG, GIF or WebP"),
        ImageProblem::TooLarge { .. } => format!("{problem}, attach a smaller one"),
        ImageProblem::NotBase64(_) => problem.to_string(),
    })
}

/// The user message of a prompt: its text, the attached context, then its images; or the
/// error that fails the turn: an invalid image, or images for a model that does not accept them.
pub fn user_message(
    prompt: String,
    context: Vec<String>,
    images: Vec<ImageData>,
    model: &str,
    support: ImageSupport,
) -> Result<Message, ErrorInfo> {
    if !images.is_empty() && !support.accepts(model) {
        return Err(ErrorInfo::new(
            ErrorKind::BadRequest,
            format!(
                "model {model} does not accept images; set model.supportsImages: true if it \
                 does, or send the prompt without images"
            ),
        ));
    }
    for image in &images {
        check_image(image).map_err(|e| ErrorInfo::new(ErrorKind::BadRequest, e))?;
    }
    let mut parts = vec![Part::Text { text: prompt }];
    parts.extend(context.into_iter().map(|text| Part::Text { text }));
    parts.extend(images.into_iter().map(Part::Image));
    Ok(Message {
        role: Role::User,
        parts,
    })
}

/// The images of a tool's result the model gets, and a note for each one left out: an image
/// a prompt could not attach either (type, base64, size), or every image when `model` does
/// not accept images. Front ends still get them all; only the model's copy is shaped.
pub fn result_images(
    images: &[ImageData],
    model: &str,
    support: ImageSupport,
) -> (Vec<ImageData>, Vec<String>) {
    if images.is_empty() {
        return (Vec::new(), Vec::new());
    }
    if !support.accepts(model) {
        let note = format!(
            "[{} image(s) left out: model {model} does not accept images]",
            images.len()
        );
        return (Vec::new(), vec![note]);
    }
    let mut kept = Vec::with_capacity(images.len());
    let mut notes = Vec::new();
    for image in images {
        match image.check() {
            Ok(()) => kept.push(image.clone()),
            Err(problem) => notes.push(format!("[image left out: {problem}]")),
        }
    }
    (kept, notes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use corvid_protocol::MAX_IMAGE_BYTES;
    use pretty_assertions::assert_eq;

    fn png(data: &str) -> ImageData {
        ImageData {
            media_type: "image/png".into(),
            data_base64: data.into(),
        }
    }

    #[test]
    fn the_capability_table_knows_vision_and_text_models() {
        let accepted: Vec<(&str, bool)> = [
            "claude-3-5-sonnet-20241022",
            "claude-3-haiku-20240307",
            "claude-sonnet-4-5",
            "claude-opus-4-1",
            "claude-2.1",
            "claude-instant-1.2",
            "gpt-4o",
            "gpt-4o-mini",
            "openai/gpt-4.1-mini",
            "gpt-5",
            "gpt-5-mini",
            "gpt-3.5-turbo",
            "gpt-4",
            "o1",
            "o1-mini",
            "o1-preview",
            "o3",
            "o3-mini",
            "o4-mini",
            "qwen-vl-max",
            "qwen2.5-vl-72b-instruct",
            "Qwen/Qwen3-VL-235B-A22B",
            "qwen2.5vl:7b",
            "qwen2.5-coder-32b",
            "llava:13b",
            "gemini-2.5-pro",
            "pixtral-large-latest",
            "deepseek-chat",
            "deepseek-reasoner",
            "llama3.1:8b",
            "some-new-model",
            "omni-text",
        ]
        .iter()
        .map(|m| (*m, model_accepts_images(m)))
        .collect();
        let expected = vec![
            ("claude-3-5-sonnet-20241022", true),
            ("claude-3-haiku-20240307", true),
            ("claude-sonnet-4-5", true),
            ("claude-opus-4-1", true),
            ("claude-2.1", false),
            ("claude-instant-1.2", false),
            ("gpt-4o", true),
            ("gpt-4o-mini", true),
            ("openai/gpt-4.1-mini", true),
            ("gpt-5", true),
            ("gpt-5-mini", true),
            ("gpt-3.5-turbo", false),
            ("gpt-4", false),
            ("o1", true),
            ("o1-mini", false),
            ("o1-preview", false),
            ("o3", true),
            ("o3-mini", false),
            ("o4-mini", true),
            ("qwen-vl-max", true),
            ("qwen2.5-vl-72b-instruct", true),
            ("Qwen/Qwen3-VL-235B-A22B", true),
            ("qwen2.5vl:7b", true),
            ("qwen2.5-coder-32b", false),
            ("llava:13b", true),
            ("gemini-2.5-pro", true),
            ("pixtral-large-latest", true),
            ("deepseek-chat", false),
            ("deepseek-reasoner", false),
            ("llama3.1:8b", false),
            ("some-new-model", false),
            ("omni-text", false),
        ];
        assert_eq!(accepted, expected);
    }

    #[test]
    fn the_setting_overrides_the_table_both_ways() {
        let yes = ImageSupport {
            setting: Some(true),
        };
        let no = ImageSupport {
            setting: Some(false),
        };
        let by_name = ImageSupport::default();
        assert_eq!(
            [
                yes.accepts("deepseek-chat"),
                no.accepts("gpt-4o"),
                by_name.accepts("gpt-4o"),
                by_name.accepts("deepseek-chat"),
            ],
            [true, false, true, false]
        );
    }

    #[test]
    fn an_image_for_a_text_model_is_an_error_naming_the_model_and_the_setting() {
        let err = user_message(
            "look".into(),
            Vec::new(),
            vec![png("iVBORw==")],
            "deepseek-chat",
            ImageSupport::default(),
        )
        .unwrap_err();
        assert_eq!(
            err,
            ErrorInfo::new(
                ErrorKind::BadRequest,
                "model deepseek-chat does not accept images; set model.supportsImages: true if \
                 it does, or send the prompt without images"
            )
        );
    }

    #[test]
    fn a_prompt_without_images_works_for_any_model() {
        let message = user_message(
            "hi".into(),
            Vec::new(),
            Vec::new(),
            "deepseek-chat",
            ImageSupport::default(),
        )
        .unwrap();
        assert_eq!(message, Message::user_text("hi"));
    }

    #[test]
    fn images_follow_the_text_in_the_user_message() {
        let message = user_message(
            "look".into(),
            Vec::new(),
            vec![png("iVBORw==")],
            "gpt-4o",
            ImageSupport::default(),
        )
        .unwrap();
        assert_eq!(
            message.parts,
            vec![
                Part::Text {
                    text: "look".into()
                },
                Part::Image(png("iVBORw=="))
            ]
        );
    }

    #[test]
    fn bad_images_are_refused_with_the_reason() {
        let svg = ImageData {
            media_type: "image/svg+xml".into(),
            data_base64: "PHN2Zz4=".into(),
        };
        let huge = png(&"A".repeat((MAX_IMAGE_BYTES / 3 + 1) * 4));
        let limit = png(&"A".repeat(MAX_IMAGE_BYTES / 3 * 4));
        assert_eq!(
            [
                check_image(&svg),
                check_image(&png("not base64!")),
                check_image(&png("")),
                check_image(&png("abc")),
                check_image(&huge),
                check_image(&limit),
            ],
            [
                Err("image type `image/svg+xml` is not supported; attach PNG, JPEG, GIF or WebP".into()),
                Err("the image/png image is not valid base64 (standard alphabet, padded)".into()),
                Err("the image/png image is not valid base64 (standard alphabet, padded)".into()),
                Err("the image/png image is not valid base64 (standard alphabet, padded)".into()),
                Err("the image/png image is 5.0 MiB; images are limited to 5 MiB, attach a smaller one".into()),
                Ok(()),
            ]
        );
    }

    #[test]
    fn a_tool_results_images_reach_a_vision_model_and_bad_ones_become_notes() {
        let svg = ImageData {
            media_type: "image/svg+xml".into(),
            data_base64: "PHN2Zz4=".into(),
        };
        let images = [png("iVBORw=="), svg];
        assert_eq!(
            result_images(&images, "gpt-4o", ImageSupport::default()),
            (
                vec![png("iVBORw==")],
                vec!["[image left out: image type `image/svg+xml` is not supported]".to_owned()]
            )
        );
        assert_eq!(
            result_images(&images, "deepseek-chat", ImageSupport::default()),
            (
                Vec::new(),
                vec![
                    "[2 image(s) left out: model deepseek-chat does not accept images]".to_owned()
                ]
            )
        );
    }
}
