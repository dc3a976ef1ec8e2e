//! The names the model calls MCP tools by: `mcp__<server>__<tool>`, within what every provider
//! accepts (`^[a-zA-Z0-9_-]{1,64}$`), unique and the same on every start.

use std::collections::HashSet;

/// The longest tool name the providers accept.
pub const MAX_NAME_LEN: usize = 64;

/// `text` with every character a provider rejects replaced by `_` (never empty).
pub fn sanitize(text: &str) -> String {
    let clean: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.is_empty() {
        "_".to_owned()
    } else {
        clean
    }
}

/// Server ids for the configured servers, in order: sanitized names, with `_2`, `_3`... added
/// to a later server whose sanitized name an earlier one already has, so tools of two servers
/// can never share a name.
pub fn server_ids<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut taken = HashSet::new();
    names
        .into_iter()
        .map(|name| unique(sanitize(name), &mut taken, usize::MAX))
        .collect()
}

/// The model-facing names of one server's tools, in the server's order: a tool whose name
/// turns out like an earlier one's gets `_2`, `_3`...; a name over 64 characters is cut and
/// ends in a hash of the whole name.
pub fn tool_names<'a>(server_id: &str, tools: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut taken = HashSet::new();
    tools
        .into_iter()
        .map(|tool| {
            let full = format!("mcp__{server_id}__{}", sanitize(tool));
            unique(fit(&full), &mut taken, MAX_NAME_LEN)
        })
        .collect()
}

/// `name` cut to the length limit, keeping it distinct with a hash of the whole name.
fn fit(name: &str) -> String {
    if name.len() <= MAX_NAME_LEN {
        return name.to_owned();
    }
    let hash = format!("{:08x}", fnv1a(name));
    // Sanitized names are ASCII, so any byte index is a character boundary.
    format!("{}_{hash}", &name[..MAX_NAME_LEN - hash.len() - 1])
}

/// `name`, or `name_N` with the first free N, within `max` characters.
fn unique(name: String, taken: &mut HashSet<String>, max: usize) -> String {
    let mut candidate = name.clone();
    let mut n = 2;
    while taken.contains(&candidate) {
        let suffix = format!("_{n}");
        let keep = name.len().min(max.saturating_sub(suffix.len()));
        candidate = format!("{}{suffix}", &name[..keep]);
        n += 1;
    }
    taken.insert(candidate.clone());
    candidate
}

/// A small stable hash (FNV-1a, 32 bits): the same on every run and platform.
fn fnv1a(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5, |h: u32, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn valid(name: &str) -> bool {
        (1..=MAX_NAME_LEN).contains(&name.len())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn names_join_server_and_tool_with_invalid_characters_replaced() {
        assert_eq!(
            tool_names("everything", ["echo", "get.weather", "añadir"]),
            [
                "mcp__everything__echo",
                "mcp__everything__get_weather",
                "mcp__everything__a_adir"
            ]
        );
    }

    #[test]
    fn colliding_names_get_numbered_in_order() {
        assert_eq!(
            tool_names("s", ["a.b", "a_b", "a b"]),
            ["mcp__s__a_b", "mcp__s__a_b_2", "mcp__s__a_b_3"]
        );
        assert_eq!(
            server_ids(["my.srv", "my_srv", "ok"]),
            ["my_srv", "my_srv_2", "ok"]
        );
    }

    #[test]
    fn long_names_are_cut_to_64_characters_and_stay_distinct_and_stable() {
        let long_a = "x".repeat(80) + "a";
        let long_b = "x".repeat(80) + "b";
        let names = tool_names(
            "server",
            [long_a.as_str(), long_b.as_str(), long_a.as_str()],
        );
        assert!(names.iter().all(|n| valid(n)), "{names:?}");
        assert_eq!(names.iter().collect::<HashSet<_>>().len(), 3, "{names:?}");
        assert_eq!(
            names,
            tool_names(
                "server",
                [long_a.as_str(), long_b.as_str(), long_a.as_str()]
            )
        );
    }
}
