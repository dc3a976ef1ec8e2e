//! Anthropic's server-side web search (`web_search_20250305`): offered in the request when
//! the user chose `{"type": "anthropic"}` in `webSearch`, its `server_tool_use` and
//! `web_search_tool_result` blocks turned into hosted blocks (shown, never executed) and
//! sent back verbatim, as the API requires, in later requests.

use std::collections::HashSet;

use corvid_protocol::{HostedBlock, HostedStep, JsonText, Part, Role};
use serde::Serialize;
use serde_json::{Value, json};

use crate::history::Turn;

/// The most searches one request may make.
const MAX_USES_PER_REQUEST: u32 = 5;
/// The provider name hosted blocks carry, so only this provider sends them back.
pub(crate) const PROVIDER: &str = "anthropic";

/// The server-side search a session offers, from the user's `webSearch` settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerWebSearch {
    /// `webSearch.maxPerSession`: searches already in the history count against it.
    pub max_per_session: u32,
}

/// The tool entry in the request's `tools`.
#[derive(Debug, Serialize)]
pub(crate) struct ServerTool {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'static str,
    max_uses: u32,
}

impl ServerWebSearch {
    /// The tool to offer with `turns`, or `None` when the session's searches are used up.
    /// Offered only beside client tools: a request without tools (a summary, a compaction)
    /// searches nothing.
    pub(crate) fn tool(self, turns: &[Turn<'_>], has_tools: bool) -> Option<ServerTool> {
        let used = turns
            .iter()
            .flat_map(|t| t.parts.iter())
            .filter(|p| {
                matches!(&***p, Part::Hosted(b) if b.provider == PROVIDER
                    && matches!(b.step, HostedStep::Call { .. }))
            })
            .count();
        let used = u32::try_from(used).unwrap_or(u32::MAX);
        let left = self.max_per_session.saturating_sub(used);
        (has_tools && left > 0).then(|| ServerTool {
            kind: "web_search_20250305",
            name: "web_search",
            max_uses: left.min(MAX_USES_PER_REQUEST),
        })
    }
}

/// The ids of the hosted calls in `turn` that have their result in it too: only complete
/// pairs are sent back (a search cut off mid-stream would make the API reject the history).
pub(crate) fn complete_pairs<'a>(turn: &'a Turn<'_>) -> HashSet<&'a str> {
    if turn.role != Role::Assistant {
        return HashSet::new();
    }
    let mut calls = HashSet::new();
    let mut results = HashSet::new();
    for part in &turn.parts {
        if let Part::Hosted(block) = &**part
            && block.provider == PROVIDER
        {
            match block.step {
                HostedStep::Call { .. } => calls.insert(block.call_id.as_str()),
                HostedStep::Result { .. } => results.insert(block.call_id.as_str()),
            };
        }
    }
    calls.intersection(&results).copied().collect()
}

/// The hosted block for a finished `server_tool_use` block.
pub(crate) fn call_block(id: String, name: String, input: Value) -> HostedBlock {
    let title = match input.get("query").and_then(Value::as_str) {
        Some(query) if name == "web_search" => format!("Search \"{query}\""),
        _ => name.clone(),
    };
    let data =
        JsonText::new(&json!({"type": "server_tool_use", "id": id, "name": name, "input": input}));
    HostedBlock {
        provider: PROVIDER.to_owned(),
        call_id: id,
        tool_name: name,
        step: HostedStep::Call { title, args: input },
        data,
    }
}

/// The hosted block for a `*_tool_result` block of a server tool (`web_search_tool_result`).
pub(crate) fn result_block(kind: &str, tool_use_id: String, content: Value) -> HostedBlock {
    let tool_name = kind.strip_suffix("_tool_result").unwrap_or(kind).to_owned();
    let (text, is_error) = result_text(&content);
    let data =
        JsonText::new(&json!({"type": kind, "tool_use_id": tool_use_id, "content": content}));
    HostedBlock {
        provider: PROVIDER.to_owned(),
        call_id: tool_use_id,
        tool_name,
        step: HostedStep::Result { text, is_error },
        data,
    }
}

/// The results as the card shows them (`1. title` and URL per result), or the error code.
fn result_text(content: &Value) -> (String, bool) {
    let Some(results) = content.as_array() else {
        let code = content
            .get("error_code")
            .and_then(Value::as_str)
            .unwrap_or("unknown_error");
        return (format!("The web search failed: {code}"), true);
    };
    let mut text = String::new();
    for (n, r) in results.iter().enumerate() {
        let field = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
        text.push_str(&format!(
            "{}. {}\n   {}\n",
            n + 1,
            field("title"),
            field("url")
        ));
    }
    if text.is_empty() {
        text.push_str("No results.");
    }
    (text.trim_end().to_owned(), false)
}
