//! One classification of every failure (SPEC §2.4): HTTP status, headers and body, in-stream
//! error objects, and transport errors.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use corvid_protocol::{ErrorInfo, ErrorKind};
use serde_json::Value;

use crate::redact::redact_url;

/// Response headers, as classification reads them (re-exported so callers need no reqwest).
pub use reqwest::header::HeaderMap;

/// Longest slice of a non-JSON error body kept as the message.
const MAX_RAW_MESSAGE: usize = 500;

/// Classifies a non-success HTTP response from its status, headers and body.
pub fn classify_http_error(status: u16, headers: &HeaderMap, body: &[u8]) -> ErrorInfo {
    classify_http_error_at(status, headers, body, SystemTime::now())
}

/// [`classify_http_error`] with the clock passed in, so HTTP-date `retry-after` is testable.
pub fn classify_http_error_at(
    status: u16,
    headers: &HeaderMap,
    body: &[u8],
    now: SystemTime,
) -> ErrorInfo {
    let json: Option<Value> = serde_json::from_slice(body).ok();
    let details = json
        .as_ref()
        .map(ErrorDetails::from_body)
        .unwrap_or_default();
    let message = details
        .message
        .clone()
        .unwrap_or_else(|| raw_message(status, body));
    let mut kind = classify(Some(status), &details, &message);
    // Gemini answers a wrong key with 400 INVALID_ARGUMENT; its reason says what it is.
    if kind == ErrorKind::BadRequest && json.as_ref().is_some_and(google_key_invalid) {
        kind = ErrorKind::Auth;
    }
    let wait = retry_after_ms(headers, now)
        .or_else(|| json.as_ref().and_then(google_retry_delay))
        // OpenAI's 429 may name the wait only in its message.
        .or_else(|| {
            (kind == ErrorKind::RateLimited)
                .then(|| retry_delay_in_message(&message))
                .flatten()
        });
    let request_id = header(headers, "x-request-id")
        .or_else(|| header(headers, "request-id"))
        .or(details.request_id);
    ErrorInfo {
        kind,
        message,
        status: Some(status),
        request_id,
        retry_after_ms: wait,
    }
}

/// Classifies an error object found inside a stream (OpenAI `error`, Anthropic `event: error`).
pub fn classify_stream_error(payload: &Value) -> ErrorInfo {
    let details = ErrorDetails::from_body(payload);
    let message = details
        .message
        .clone()
        .unwrap_or_else(|| format!("the provider sent an error in the stream: {payload}"));
    let status = details.status;
    let kind = classify(status, &details, &message);
    ErrorInfo {
        kind,
        message,
        status,
        request_id: details.request_id,
        retry_after_ms: None,
    }
}

/// Classifies a transport failure; `started` says whether response bytes were already read
/// (a broken body then means a truncated stream rather than a failed connection).
///
/// The message names the URL tried (credentials redacted: the key travels in a header, but a
/// base URL may carry `user:pass@` or `?key=`) and the lowest cause, which says the most.
pub fn classify_reqwest_error(error: &reqwest::Error, started: bool) -> ErrorInfo {
    let url = error.url().map(|u| redact_url(u.as_str()));
    let mut causes = Vec::new();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        causes.push(cause.to_string());
        source = cause.source();
    }
    let detail = match causes.last() {
        Some(lowest) => lowest.clone(),
        None => error.to_string(),
    };
    let detail = match &url {
        // reqwest's own text repeats the URL unredacted.
        Some(url_text) => detail.replace(error.url().map_or("", |u| u.as_str()), url_text),
        None => detail,
    };
    let at = url.as_ref().map(|u| format!(" at {u}")).unwrap_or_default();
    let to = url.as_ref().map(|u| format!(" to {u}")).unwrap_or_default();
    let (kind, message) = if started {
        (
            ErrorKind::StreamTruncated,
            format!("the response stream{at} broke ({detail}); check the network"),
        )
    } else if error.is_timeout() {
        (
            ErrorKind::Network,
            format!("the request{to} timed out ({detail}); check the network and model.baseUrl"),
        )
    } else if error.is_connect() {
        (
            ErrorKind::Network,
            format!(
                "could not connect to the provider{at} ({detail}); check that the server is \
                 running and that model.baseUrl is right"
            ),
        )
    } else if error.is_builder() {
        (
            ErrorKind::BadRequest,
            format!("could not build the request{to} ({detail}); check model.baseUrl"),
        )
    } else {
        (
            ErrorKind::Network,
            format!("the request{to} failed ({detail}); check the network and model.baseUrl"),
        )
    };
    ErrorInfo::new(kind, message)
}

#[derive(Debug, Default)]
struct ErrorDetails {
    message: Option<String>,
    /// `error.type` (OpenAI, Anthropic) and `error.code` (OpenAI), lowercased.
    type_and_code: String,
    status: Option<u16>,
    request_id: Option<String>,
}

impl ErrorDetails {
    fn from_body(body: &Value) -> Self {
        let error = body.get("error").unwrap_or(body);
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        let message = match error {
            Value::String(s) => Some(s.clone()),
            _ => text(error.get("message")).or_else(|| text(body.get("message"))),
        };
        let mut type_and_code = String::new();
        for key in ["type", "code", "status"] {
            if let Some(s) = error.get(key).and_then(Value::as_str) {
                type_and_code.push_str(&s.to_ascii_lowercase());
                type_and_code.push(' ');
            }
        }
        // OpenRouter and others put the upstream HTTP status in a numeric `code`.
        let status = ["code", "status"]
            .iter()
            .find_map(|k| error.get(*k).and_then(Value::as_u64))
            .and_then(|n| u16::try_from(n).ok())
            .filter(|n| (100..600).contains(n));
        Self {
            message,
            type_and_code,
            status,
            request_id: text(body.get("request_id")).or_else(|| text(error.get("request_id"))),
        }
    }
}

fn classify(status: Option<u16>, details: &ErrorDetails, message: &str) -> ErrorKind {
    let words = format!("{} {}", details.type_and_code, message.to_ascii_lowercase());
    let overloaded = words.contains("overload");
    let server_side = matches!(status, Some(429) | Some(500..=599));
    if !server_side && is_context_wording(&words) {
        return ErrorKind::ContextTooLong;
    }
    match status {
        Some(429) if overloaded => ErrorKind::Overloaded,
        Some(429) => ErrorKind::RateLimited,
        Some(503 | 529) => ErrorKind::Overloaded,
        Some(500..=599) if overloaded => ErrorKind::Overloaded,
        Some(500..=599) => ErrorKind::Server,
        Some(401 | 403) => ErrorKind::Auth,
        Some(408) => ErrorKind::Network,
        Some(400..=499) => ErrorKind::BadRequest,
        Some(_) => ErrorKind::Server,
        None => classify_by_words(&words, overloaded),
    }
}

/// In-stream errors carry no status: the error type and code decide.
fn classify_by_words(words: &str, overloaded: bool) -> ErrorKind {
    if overloaded {
        ErrorKind::Overloaded
    } else if words.contains("rate_limit")
        || words.contains("rate limit")
        || words.contains("quota")
    {
        ErrorKind::RateLimited
    } else if words.contains("authentication")
        || words.contains("permission")
        || words.contains("api key")
    {
        ErrorKind::Auth
    } else if words.contains("invalid_request")
        || words.contains("not_found")
        || words.contains("request_too_large")
    {
        ErrorKind::BadRequest
    } else {
        ErrorKind::Server
    }
}

fn is_context_wording(words: &str) -> bool {
    [
        "context_length",
        "context length",
        "context window",
        "maximum context",
        "prompt is too long",
        "prompt too long",
        "input is too long",
        "too many input tokens",
        // Gemini: "The input token count (N) exceeds the maximum number of tokens allowed (M)."
        "exceeds the maximum number of tokens",
    ]
    .iter()
    .any(|w| words.contains(w))
}

fn raw_message(status: u16, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        return format!("HTTP {status} with an empty body");
    }
    let mut end = text.len().min(MAX_RAW_MESSAGE);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

/// `retry-after-ms` (OpenAI, fractional) wins over `retry-after` (seconds or an HTTP date).
fn retry_after_ms(headers: &HeaderMap, now: SystemTime) -> Option<u64> {
    let ms = header(headers, "retry-after-ms").and_then(|v| v.parse::<f64>().ok());
    if let Some(ms) = ms.filter(|ms| ms.is_finite() && *ms >= 0.0) {
        return Some(ms.round() as u64);
    }
    let value = header(headers, "retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| (secs * 1000.0).round() as u64);
    }
    let at = parse_http_date(&value)?;
    let wait = at.duration_since(now).unwrap_or(Duration::ZERO);
    Some(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX))
}

/// Parses the IMF-fixdate form of an HTTP date (`Wed, 21 Oct 2015 07:28:00 GMT`), the only
/// form servers are allowed to send.
fn parse_http_date(value: &str) -> Option<SystemTime> {
    let mut parts = value.split_ascii_whitespace();
    let _weekday = parts.next()?;
    let day: u64 = parts.next()?.parse().ok()?;
    let month = match parts.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: i64 = parts.next()?.parse().ok()?;
    let mut hms = parts.next()?.split(':').map(|p| p.parse::<u64>().ok());
    let (h, m, s) = (hms.next()??, hms.next()??, hms.next()??);
    if parts.next()? != "GMT" || day == 0 || day > 31 || h > 23 || m > 59 || s > 60 {
        return None;
    }
    let days = u64::try_from(days_from_civil(year, month, day as i64)).ok()?;
    Some(UNIX_EPOCH + Duration::from_secs(days * 86_400 + h * 3600 + m * 60 + s))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The wait an error message asks for in words: OpenAI's rate-limit messages say
/// `Please try again in 1.898s` (or `in 20ms`) and send no header in a stream.
/// Google's `RetryInfo` detail (`{"error":{"details":[{"@type":"...RetryInfo","retryDelay":"32s"}]}}`)
/// in milliseconds: Gemini's 429 says how long to wait there, not in a header.
pub(crate) fn google_retry_delay(body: &Value) -> Option<u64> {
    let details = body
        .get("error")
        .unwrap_or(body)
        .get("details")?
        .as_array()?;
    details.iter().find_map(|d| {
        let kind = d.get("@type")?.as_str()?;
        if !kind.ends_with("google.rpc.RetryInfo") {
            return None;
        }
        let secs: f64 = d
            .get("retryDelay")?
            .as_str()?
            .strip_suffix('s')?
            .parse()
            .ok()?;
        (secs.is_finite() && secs >= 0.0).then(|| (secs * 1000.0).round() as u64)
    })
}

/// Whether a Google error body's `ErrorInfo` detail says the API key is not valid.
fn google_key_invalid(body: &Value) -> bool {
    let details = body
        .get("error")
        .unwrap_or(body)
        .get("details")
        .and_then(Value::as_array);
    details
        .into_iter()
        .flatten()
        .any(|d| d.get("reason").and_then(Value::as_str) == Some("API_KEY_INVALID"))
}

pub(crate) fn retry_delay_in_message(message: &str) -> Option<u64> {
    let lower = message.to_ascii_lowercase();
    let rest = &lower[lower.find("try again in ")? + "try again in ".len()..];
    let number_len = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let value: f64 = rest[..number_len].parse().ok()?;
    let unit = &rest[number_len..];
    let ms = if unit.starts_with("ms") {
        value
    } else if unit.starts_with('s') {
        value * 1000.0
    } else if unit.starts_with('m') {
        value * 60_000.0
    } else {
        return None;
    };
    (ms.is_finite() && ms >= 0.0).then(|| ms.round() as u64)
}

#[cfg(test)]
mod retry_delay_tests {
    use super::retry_delay_in_message;

    #[test]
    fn the_wait_in_an_openai_rate_limit_message_is_read_in_milliseconds() {
        let said = |m: &str| retry_delay_in_message(m);
        assert_eq!(
            said("Rate limit reached for gpt-5. Please try again in 1.898s. Visit"),
            Some(1898)
        );
        assert_eq!(said("Please try again in 20ms."), Some(20));
        assert_eq!(said("try again in 2m"), Some(120_000));
        assert_eq!(said("Please try again later."), None);
        assert_eq!(said("no hint"), None);
    }
}

#[cfg(test)]
mod gemini_tests {
    use super::*;
    use serde_json::json;

    fn http(status: u16, body: Value) -> ErrorInfo {
        classify_http_error(status, &HeaderMap::new(), body.to_string().as_bytes())
    }

    #[test]
    fn gemini_http_errors_are_classified_with_the_retry_delay_from_retry_info() {
        let limited = http(
            429,
            json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
                "message": "You exceeded your current quota", "details": [
                    {"@type": "type.googleapis.com/google.rpc.QuotaFailure"},
                    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7.5s"}]}}),
        );
        assert_eq!(
            (limited.kind, limited.retry_after_ms),
            (ErrorKind::RateLimited, Some(7_500))
        );
        let busy = http(
            503,
            json!({"error": {"code": 503, "status": "UNAVAILABLE",
                "message": "The model is overloaded. Please try again later."}}),
        );
        assert_eq!(busy.kind, ErrorKind::Overloaded);
        let long = http(
            400,
            json!({"error": {"code": 400, "status": "INVALID_ARGUMENT", "message":
                "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."}}),
        );
        assert_eq!(long.kind, ErrorKind::ContextTooLong);
    }
}
