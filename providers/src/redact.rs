//! Secrets out of every text corvid writes: a server may echo the key it was sent (in an error
//! body, a stream error, a quoted URL), and that text ends up on screen, in logs and in
//! recordings. The [`Redactor`] is built once per provider from what it was configured with and
//! applied where errors leave the provider, so nothing downstream ever sees a secret.

use std::borrow::Cow;

use corvid_protocol::ErrorInfo;

/// What a secret is replaced with.
pub const REDACTED: &str = "<redacted>";

/// Secrets shorter than this are not searched for: replacing every `abc` in a message would
/// shred it, and a key that short protects nothing anyway.
const MIN_SECRET_LEN: usize = 6;

/// Query parameters whose values are credentials (`?key=` is Gemini's, the rest are common).
const CREDENTIAL_PARAMS: [&str; 7] = [
    "key",
    "api_key",
    "apikey",
    "api-key",
    "token",
    "access_token",
    "auth",
];

/// Replaces configured secret values, `user:pass@` in URLs and credential query values.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Redactor {
    /// Each secret with what replaces it; longest first, so a secret containing another is
    /// replaced whole.
    secrets: Vec<(String, String)>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} secrets)", self.secrets.len())
    }
}

impl Redactor {
    /// A redactor for these secret values; empty and very short values are ignored.
    pub fn new<S: AsRef<str>>(secrets: impl IntoIterator<Item = S>) -> Self {
        Self::with_replacements(
            secrets
                .into_iter()
                .map(|s| (s.as_ref().to_owned(), REDACTED.to_owned())),
        )
    }

    /// A redactor for named secret values, each replaced by `[REDACTED:<name>]` (so a reader
    /// sees which secret stood there: `[REDACTED:OPENAI_API_KEY]`); empty and very short
    /// values are ignored.
    pub fn labelled<N: AsRef<str>, S: AsRef<str>>(
        secrets: impl IntoIterator<Item = (N, S)>,
    ) -> Self {
        Self::with_replacements(secrets.into_iter().map(|(name, value)| {
            let name: String = name
                .as_ref()
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            (value.as_ref().to_owned(), format!("[REDACTED:{name}]"))
        }))
    }

    fn with_replacements(secrets: impl IntoIterator<Item = (String, String)>) -> Self {
        let mut secrets: Vec<(String, String)> = secrets
            .into_iter()
            .map(|(s, with)| (s.trim().to_owned(), with))
            .filter(|(s, _)| s.len() >= MIN_SECRET_LEN)
            .collect();
        secrets.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.cmp(b)));
        secrets.dedup_by(|a, b| a.0 == b.0);
        Self { secrets }
    }

    /// Whether it has no secret values to replace (URL credentials are still redacted).
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// `text` with only the configured secret values replaced: for text that must otherwise
    /// stay as it was (a recorded transcript, where a URL in code is not rewritten).
    pub fn replace_secrets<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for (secret, with) in &self.secrets {
            if out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), with));
            }
        }
        out
    }

    /// The credentials a base URL carries (`user`, `pass`, credential query values), which a
    /// redactor must also look for once the URL is split into parts by a server's message.
    pub fn url_secrets(url: &str) -> Vec<String> {
        let mut found = Vec::new();
        let Ok(parsed) = reqwest::Url::parse(url) else {
            return found;
        };
        found.push(parsed.username().to_owned());
        found.extend(parsed.password().map(str::to_owned));
        for (name, value) in parsed.query_pairs() {
            if is_credential_param(&name) {
                found.push(value.into_owned());
            }
        }
        found.retain(|s| !s.is_empty());
        found
    }

    /// `text` with every secret, URL user info and credential query value replaced.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let out = self.replace_secrets(text);
        match redact_url_credentials(&out) {
            Some(cleaned) => Cow::Owned(cleaned),
            None => out,
        }
    }

    /// The error with its message and request id redacted.
    pub fn error(&self, mut error: ErrorInfo) -> ErrorInfo {
        if let Cow::Owned(message) = self.redact(&error.message) {
            error.message = message;
        }
        if let Some(id) = &error.request_id
            && let Cow::Owned(cleaned) = self.redact(id)
        {
            error.request_id = Some(cleaned);
        }
        error
    }
}

/// A URL fit to show: user info and credential query values replaced.
pub fn redact_url(url: &str) -> String {
    redact_url_credentials(url).unwrap_or_else(|| url.to_owned())
}

fn is_credential_param(name: &str) -> bool {
    CREDENTIAL_PARAMS
        .iter()
        .any(|p| name.eq_ignore_ascii_case(p))
}

/// Ends of a URL part inside free text: what cannot be in it unescaped.
fn ends_url_part(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`' | ')' | ']' | '}' | ',')
}

/// Rewrites URLs found anywhere in `text`; `None` when there was nothing to hide.
fn redact_url_credentials(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut changed = false;
    let mut rest = text;
    // User info: `scheme://user:pass@host` → `scheme://<redacted>@host`.
    while let Some(pos) = rest.find("://") {
        let (head, tail) = rest.split_at(pos + 3);
        out.push_str(head);
        let authority_len = tail
            .find(|c: char| ends_url_part(c) || matches!(c, '/' | '?' | '#'))
            .unwrap_or(tail.len());
        let authority = &tail[..authority_len];
        match authority.rfind('@') {
            Some(at) if at > 0 => {
                out.push_str(REDACTED);
                out.push_str(&authority[at..]);
                changed = true;
            }
            _ => out.push_str(authority),
        }
        rest = &tail[authority_len..];
    }
    out.push_str(rest);
    let params = redact_credential_params(&out);
    match (params, changed) {
        (Some(cleaned), _) => Some(cleaned),
        (None, true) => Some(out),
        (None, false) => None,
    }
}

/// `?key=VALUE` / `&token=VALUE` → `?key=<redacted>`; `None` when none was found.
fn redact_credential_params(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut rest = text;
    while let Some(pos) = rest.find(['?', '&']) {
        let (head, tail) = rest.split_at(pos + 1);
        out.push_str(head);
        rest = tail;
        let Some(eq) = rest.find('=') else { continue };
        let name = &rest[..eq];
        if name.is_empty() || !is_credential_param(name) {
            continue;
        }
        let value_len = rest[eq + 1..]
            .find(|c: char| ends_url_part(c) || matches!(c, '&' | '#'))
            .unwrap_or(rest.len() - eq - 1);
        if value_len == 0 {
            continue;
        }
        out.push_str(name);
        out.push('=');
        out.push_str(REDACTED);
        rest = &rest[eq + 1 + value_len..];
        changed = true;
    }
    out.push_str(rest);
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn every_configured_secret_is_replaced_longest_first() {
        let redactor = Redactor::new(["sk-main-123456", "sk-main-123456-fast", "abc", ""]);
        assert_eq!(
            redactor.redact("bad key sk-main-123456-fast, and sk-main-123456; abc stays"),
            "bad key <redacted>, and <redacted>; abc stays"
        );
    }

    #[test]
    fn labelled_secrets_are_replaced_by_their_names_and_urls_are_left_alone() {
        let redactor = Redactor::labelled([
            ("OPENAI_API_KEY", "sk-live-abcdef"),
            ("FAST\"KEY", "fast-key-123456"),
            ("SHORT", "abc"),
        ]);
        assert_eq!(
            redactor.replace_secrets("k=sk-live-abcdef f=fast-key-123456 abc https://u:p@h/"),
            "k=[REDACTED:OPENAI_API_KEY] f=[REDACTED:FASTKEY] abc https://u:p@h/"
        );
    }

    #[test]
    fn text_without_secrets_is_borrowed_unchanged() {
        let redactor = Redactor::new(["sk-main-123456"]);
        let text = "rate limited, see https://example.com/docs?page=2";
        assert!(matches!(redactor.redact(text), Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn user_info_and_credential_query_values_in_urls_are_replaced() {
        let redactor = Redactor::default();
        assert_eq!(
            redactor.redact(
                "cannot reach https://bob:hunter2@proxy.local:8080/v1?key=AIza-xyz&alt=sse (GET)"
            ),
            "cannot reach https://<redacted>@proxy.local:8080/v1?key=<redacted>&alt=sse (GET)"
        );
        assert_eq!(
            redact_url("http://h/v1?api_key=one&token=two&x=3"),
            "http://h/v1?api_key=<redacted>&token=<redacted>&x=3"
        );
        assert_eq!(redact_url("http://h/v1?monkey=1"), "http://h/v1?monkey=1");
        assert_eq!(redact_url("mailto:a@b"), "mailto:a@b");
    }

    #[test]
    fn the_parts_of_a_base_url_are_secrets_even_when_quoted_apart() {
        let secrets = Redactor::url_secrets("https://bob:hunter2pass@h/v1?key=AIza-secret-1");
        assert_eq!(secrets, vec!["bob", "hunter2pass", "AIza-secret-1"]);
        let redactor = Redactor::new(secrets);
        assert_eq!(
            redactor.redact("password hunter2pass is wrong for AIza-secret-1"),
            "password <redacted> is wrong for <redacted>"
        );
    }

    #[test]
    fn an_error_has_its_message_and_request_id_redacted() {
        let redactor = Redactor::new(["sk-live-abcdef"]);
        let error = ErrorInfo {
            request_id: Some("req-sk-live-abcdef".into()),
            ..ErrorInfo::new(
                corvid_protocol::ErrorKind::Auth,
                "Incorrect API key provided: sk-live-abcdef",
            )
        };
        let redacted = redactor.error(error.clone());
        assert_eq!(
            redacted,
            ErrorInfo {
                message: "Incorrect API key provided: <redacted>".into(),
                request_id: Some("req-<redacted>".into()),
                ..error
            }
        );
    }
}
