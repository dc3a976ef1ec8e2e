//! How much a provider may send, and how slowly: a hostile or broken server must not make
//! corvid buffer without end or wait forever. Every cap and default lives here.

use std::time::Duration;

/// Longest SSE line (or one event's joined `data:` lines) kept in memory. Real events are a
/// few KiB; a whole tool call's arguments in one event stay far below this.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Longest response body read, streamed or whole.
pub const MAX_BODY_BYTES: usize = 256 * 1024 * 1024;

/// How long a response may send nothing before it fails (`model.streamIdleTimeoutMs`).
/// Generous: local servers say nothing while they read a long prompt, and reasoning models
/// can think for minutes; servers that can, send pings meanwhile.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// The size caps of one response body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// See [`MAX_LINE_BYTES`].
    pub max_line_bytes: usize,
    /// See [`MAX_BODY_BYTES`].
    pub max_body_bytes: usize,
}

impl Default for StreamLimits {
    fn default() -> Self {
        Self {
            max_line_bytes: MAX_LINE_BYTES,
            max_body_bytes: MAX_BODY_BYTES,
        }
    }
}
