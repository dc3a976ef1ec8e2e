//! Estimating a request's size in tokens without a tokenizer: bytes of what is sent, divided
//! by a ratio calibrated on the provider's own count of the last prompt.

use std::sync::Arc;

use corvid_protocol::{Message, Part, ToolSchema};

/// Bytes per token before any usage came back (English text and code run 3-4.5).
const DEFAULT_BYTES_PER_TOKEN: f64 = 4.0;
/// What an image costs, in bytes of text with the same token count (providers bill images by
/// their pixels, about 1,600 tokens for a typical screenshot, not by their base64 length).
const IMAGE_BYTES: u64 = 1_600 * 4;
/// Calibration stays within these ratios, so one odd usage report cannot make the estimate
/// absurd.
const RATIO_RANGE: (f64, f64) = (1.5, 8.0);

/// The session's estimate of tokens per byte, updated from each main-model usage report.
#[derive(Debug, Clone, Copy)]
pub struct ContextMeter {
    bytes_per_token: f64,
    /// The prompt tokens the provider counted for the last request, plus its answer.
    last_used: Option<u64>,
}

impl Default for ContextMeter {
    fn default() -> Self {
        Self {
            bytes_per_token: DEFAULT_BYTES_PER_TOKEN,
            last_used: None,
        }
    }
}

impl ContextMeter {
    /// Learns from a request of `request_bytes` that the provider counted as
    /// `prompt_tokens`, and which was answered with `output_tokens`.
    pub fn calibrate(&mut self, request_bytes: u64, prompt_tokens: u64, output_tokens: u64) {
        if prompt_tokens > 0 && request_bytes > 0 {
            let ratio = request_bytes as f64 / prompt_tokens as f64;
            self.bytes_per_token = ratio.clamp(RATIO_RANGE.0, RATIO_RANGE.1);
        }
        self.last_used = Some(prompt_tokens + output_tokens);
    }

    /// Bytes of text that make about `tokens` tokens.
    pub fn bytes(&self, tokens: u64) -> u64 {
        (tokens as f64 * self.bytes_per_token) as u64
    }

    /// Tokens of a request of `bytes`.
    pub fn tokens(&self, bytes: u64) -> u64 {
        // Sizes here stay far below 2^53, so the float round trip is exact enough.
        (bytes as f64 / self.bytes_per_token).ceil() as u64
    }

    /// What the last request and its answer used, as the provider counted them.
    pub fn last_used(&self) -> Option<u64> {
        self.last_used
    }

    /// Forgets the provider's last count (the history it described is gone).
    pub fn history_replaced(&mut self) {
        self.last_used = None;
    }
}

/// The bytes a request of this system prompt, these tools and these messages sends (text
/// and arguments; framing is left out, the calibration absorbs it).
pub fn request_bytes(system: &str, tools: &[Arc<ToolSchema>], messages: &[Message]) -> u64 {
    let tools: u64 = tools.iter().map(|tool| schema_bytes(tool)).sum();
    len(system) + tools + messages.iter().map(message_bytes).sum::<u64>()
}

/// The bytes one tool's schema adds to a request.
pub fn schema_bytes(tool: &ToolSchema) -> u64 {
    len(&tool.name) + len(&tool.description) + len(tool.parameters.get())
}

/// The bytes one message adds to a request.
pub fn message_bytes(message: &Message) -> u64 {
    message
        .parts
        .iter()
        .map(|part| match part {
            Part::Text { text } => len(text),
            Part::Thought {
                text,
                signature,
                provider_data,
            } => {
                len(text)
                    + signature.as_deref().map_or(0, len)
                    + provider_data.as_ref().map_or(0, |d| len(d.get()))
            }
            Part::ToolCall(call) => len(&call.call_id) + len(&call.name) + json_len(&call.args),
            Part::Hosted(block) => len(block.data.get()),
            Part::ToolResult(result) => {
                len(&result.call_id)
                    + len(&result.output)
                    + IMAGE_BYTES * result.images.len() as u64
            }
            Part::Image(_) => IMAGE_BYTES,
        })
        .sum()
}

fn len(text: &str) -> u64 {
    text.len() as u64
}

fn json_len(value: &serde_json::Value) -> u64 {
    serde_json::to_string(value).map_or(0, |s| len(&s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_follows_the_providers_count() {
        let mut meter = ContextMeter::default();
        assert_eq!(meter.tokens(4_000), 1_000);
        meter.calibrate(3_000, 1_000, 50);
        assert_eq!(meter.tokens(6_000), 2_000);
        assert_eq!(meter.last_used(), Some(1_050));
    }

    #[test]
    fn an_odd_usage_report_cannot_make_the_estimate_absurd() {
        let mut meter = ContextMeter::default();
        meter.calibrate(1_000_000, 1, 0);
        assert_eq!(meter.tokens(8_000), 1_000);
        meter.calibrate(0, 500, 0);
        assert_eq!(meter.tokens(8_000), 1_000);
    }

    #[test]
    fn images_count_as_their_token_cost_not_their_base64_length() {
        let image = Message {
            role: corvid_protocol::Role::User,
            parts: vec![Part::Image(corvid_protocol::ImageData {
                media_type: "image/png".into(),
                data_base64: "A".repeat(1_000_000),
            })],
        };
        assert_eq!(message_bytes(&image), IMAGE_BYTES);
    }

    #[test]
    fn a_tool_results_images_count_like_prompt_images() {
        let image = corvid_protocol::ImageData {
            media_type: "image/png".into(),
            data_base64: "A".repeat(1_000_000),
        };
        let result = Message {
            role: corvid_protocol::Role::User,
            parts: vec![Part::ToolResult(corvid_protocol::ToolResult {
                call_id: "c1".into(),
                name: "shot".into(),
                output: "ok".into(),
                is_error: false,
                images: vec![image.clone(), image],
            })],
        };
        assert_eq!(message_bytes(&result), 4 + 2 * IMAGE_BYTES);
    }
}
