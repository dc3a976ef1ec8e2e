//! What the model gets from a fetched body: Markdown for HTML, text as it is, a description
//! for anything else, all inside a wrapper the page cannot close.

use super::Format;
use super::fetch::{Fetched, MAX_BODY_BYTES};

/// The wrapper's tag: the model is told everything inside is the page's, not the user's.
const TAG: &str = "untrusted-web-content";

/// `body` inside the untrusted-content wrapper; every closing tag in the page is escaped
/// (case-insensitively) so the page cannot end the wrapper early.
pub fn wrap(url: &str, body: &str) -> String {
    wrap_attr("url", url, body)
}

/// `body` inside the same wrapper as [`wrap`], labelled by `attr="value"` instead of a URL
/// (`source="brave search"` for search results).
pub fn wrap_attr(attr: &str, value: &str, body: &str) -> String {
    let closing = format!("</{TAG}");
    let lower = body.to_ascii_lowercase();
    let mut escaped = String::with_capacity(body.len());
    let mut last = 0;
    // ASCII lowercasing keeps byte offsets, so matches in `lower` are matches in `body`.
    for (at, _) in lower.match_indices(&closing) {
        escaped.push_str(&body[last..at]);
        escaped.push_str("<\\/");
        last = at + 2;
    }
    escaped.push_str(&body[last..]);
    let value = value.replace('"', "%22");
    format!(
        "<{TAG} {attr}=\"{value}\">\n{}\n</{TAG}>",
        escaped.trim_end_matches('\n')
    )
}

fn is_html(content_type: &str) -> bool {
    content_type.contains("text/html") || content_type.contains("application/xhtml")
}

fn is_text(content_type: &str) -> bool {
    let ct = content_type.split(';').next().unwrap_or("").trim();
    ct.is_empty()
        || ct.starts_with("text/")
        || ct.ends_with("json")
        || ct.ends_with("+xml")
        || ct == "application/xml"
        || ct == "application/javascript"
        || ct == "application/x-yaml"
        || ct == "application/yaml"
        || ct == "application/toml"
}

/// The page as the model reads it, with a first line saying what it is.
pub fn render(fetched: &Fetched, format: Format) -> String {
    let ct = fetched.content_type.to_ascii_lowercase();
    let mut head = format!(
        "HTTP {} from {} ({}, {} bytes",
        fetched.status,
        fetched.url,
        if ct.is_empty() {
            "no content type"
        } else {
            &ct
        },
        fetched.body.len()
    );
    if fetched.truncated {
        head.push_str(&format!(
            "; only the first {} MiB were read",
            MAX_BODY_BYTES / (1024 * 1024)
        ));
    }
    head.push(')');
    if !is_text(&ct) {
        return format!("{head}\nThis is not a text page, so its content is not shown.");
    }
    let text = String::from_utf8_lossy(&fetched.body);
    let body = if is_html(&ct) && format != Format::Raw {
        html_to_markdown(&text)
    } else {
        text.into_owned()
    };
    format!("{head}\n\n{body}")
}

/// HTML as Markdown, scripts, styles and other non-content elements dropped.
fn html_to_markdown(html: &str) -> String {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "template", "iframe", "object", "embed", "svg",
            "canvas", "head", "nav", "footer", "form",
        ])
        .build();
    converter
        .convert(html)
        .unwrap_or_else(|e| format!("(the HTML could not be converted: {e})"))
}
