//! The one classification of provider and transport failures (SPEC §2.4).

use serde::{Deserialize, Serialize};

/// What kind of failure happened; decides retry and fallback.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    RateLimited,
    Overloaded,
    Server,
    StreamTruncated,
    Network,
    Auth,
    BadRequest,
    ContextTooLong,
    /// The server answered something that is not a model response (an HTML page, non-JSON
    /// data lines, a line or body over corvid's size caps): retrying would get the same.
    BadResponse,
    Cancelled,
}

impl ErrorKind {
    /// Whether another attempt may succeed.
    pub fn is_retryable(self) -> bool {
        match self {
            Self::RateLimited
            | Self::Overloaded
            | Self::Server
            | Self::StreamTruncated
            | Self::Network => true,
            Self::Auth
            | Self::BadRequest
            | Self::ContextTooLong
            | Self::BadResponse
            | Self::Cancelled => false,
        }
    }

    /// The snake_case wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RateLimited => "rate_limited",
            Self::Overloaded => "overloaded",
            Self::Server => "server",
            Self::StreamTruncated => "stream_truncated",
            Self::Network => "network",
            Self::Auth => "auth",
            Self::BadRequest => "bad_request",
            Self::ContextTooLong => "context_too_long",
            Self::BadResponse => "bad_response",
            Self::Cancelled => "cancelled",
        }
    }
}

/// A classified failure with the provider's own words and request id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{} error{}: {message}{}", kind.as_str(), status.map(|s| format!(" (HTTP {s})")).unwrap_or_default(), request_id.as_ref().map(|r| format!(" [request id {r}]")).unwrap_or_default())]
pub struct ErrorInfo {
    pub kind: ErrorKind,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// How long the server asked us to wait before retrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

impl ErrorInfo {
    /// A new error of `kind` with `message` and nothing else known.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            status: None,
            request_id: None,
            retry_after_ms: None,
        }
    }

    /// Whether another attempt may succeed.
    pub fn is_retryable(&self) -> bool {
        self.kind.is_retryable()
    }
}
