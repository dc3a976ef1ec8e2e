//! The demo's scripted fast model: a plausible commit-style label for a tool batch, derived
//! from the `Tool:`/`Input:` blocks of the summary prompt.

use serde_json::Value;

/// Whether the request looks like a tool-use summary prompt (it ends in `Label:`).
pub fn is_summary_prompt(user_text: &str) -> bool {
    user_text.trim_end().ends_with("Label:")
}

/// Whether the user message is a session-title request (`corvid_core::summary`'s layout:
/// `Request: ...`, `Answer: ...`, then `Title:`).
pub fn is_title_prompt(user_text: &str) -> bool {
    user_text.starts_with("Request: ") && user_text.trim_end().ends_with("Title:")
}

/// The demo's title: the first six words of the request's first line.
pub fn title_for(prompt: &str) -> String {
    let request = prompt
        .strip_prefix("Request: ")
        .and_then(|p| p.lines().next())
        .unwrap_or_default();
    request
        .split_whitespace()
        .take(6)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A label such as `Listed files and read README.md`; `Worked with tools` when the prompt
/// names no successful tool.
pub fn label_for(prompt: &str) -> String {
    let mut phrases: Vec<String> = Vec::new();
    let mut lines = prompt.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(tool) = line.strip_prefix("Tool: ") else {
            continue;
        };
        if tool.ends_with("(failed)") {
            continue;
        }
        let input = lines
            .peek()
            .and_then(|l| l.strip_prefix("Input: "))
            .unwrap_or("");
        let phrase = phrase(tool.trim(), input);
        if !phrases.contains(&phrase) {
            phrases.push(phrase);
        }
    }
    let label = match phrases.as_slice() {
        [] => "worked with tools".to_owned(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    };
    capitalise(&label)
}

/// A past-tense phrase for one call.
fn phrase(tool: &str, input: &str) -> String {
    let field = |key: &str| field(input, key);
    match tool {
        "list_directory" => match field("path").as_deref() {
            None | Some(".") | Some("") => "listed files".to_owned(),
            Some(path) => format!("listed {path}"),
        },
        "read_file" => format!(
            "read {}",
            field("file_path").unwrap_or_else(|| "a file".into())
        ),
        "glob" => format!(
            "found {}",
            field("pattern").unwrap_or_else(|| "files".into())
        ),
        "grep_search" => match field("pattern") {
            Some(p) => format!("searched for \"{p}\""),
            None => "searched the code".to_owned(),
        },
        "write_file" => format!(
            "wrote {}",
            field("file_path").unwrap_or_else(|| "a file".into())
        ),
        "edit" => format!(
            "edited {}",
            field("file_path").unwrap_or_else(|| "a file".into())
        ),
        "run_shell_command" => match field("command") {
            Some(c) => format!("ran {c}"),
            None => "ran a command".to_owned(),
        },
        other => format!("used {other}"),
    }
}

/// A string field of the (possibly cut) JSON input.
fn field(input: &str, key: &str) -> Option<String> {
    if let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(input) {
        return obj.get(key).and_then(Value::as_str).map(str::to_owned);
    }
    // The prompt cuts long inputs, so fall back to finding `"key":"value"` by hand.
    let start = input.find(&format!("\"{key}\":\""))? + key.len() + 4;
    let rest = &input[start..];
    let end = rest.find('"').unwrap_or(rest.len());
    Some(rest[..end].trim_end_matches("...").to_owned())
}

fn capitalise(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_listing_and_a_read_become_one_label() {
        let prompt = "Intent: look\n\nTool: list_directory\nInput: {\"path\":\".\"}\nOutput: \"a\"\n\n\
                      Tool: read_file\nInput: {\"file_path\":\"README.md\"}\nOutput: \"# x\"\n\nLabel:";
        assert!(is_summary_prompt(prompt));
        assert_eq!(label_for(prompt), "Listed files and read README.md");
    }

    #[test]
    fn failed_calls_are_left_out_and_cut_inputs_still_name_their_target() {
        let prompt = "Tool: run_shell_command (failed)\nInput: {\"command\":\"ls\"}\nOutput: \"no\"\n\n\
                      Tool: edit\nInput: {\"file_path\":\"src/lib.rs\",\"old_string\":\"aaaa...\nOutput: \"ok\"\n\n\
                      Tool: grep_search\nInput: {\"pattern\":\"login\"}\nOutput: \"\"\n\nLabel:";
        assert_eq!(
            label_for(prompt),
            "Edited src/lib.rs and searched for \"login\""
        );
    }

    #[test]
    fn three_phrases_are_joined_like_a_sentence() {
        let prompt = "Tool: glob\nInput: {\"pattern\":\"*.rs\"}\nOutput: 1\n\n\
                      Tool: run_shell_command\nInput: {\"command\":\"ls -la\"}\nOutput: 1\n\n\
                      Tool: write_file\nInput: {\"file_path\":\"a.txt\",\"content\":\"x\"}\nOutput: 1\n\nLabel:";
        assert_eq!(label_for(prompt), "Found *.rs, ran ls -la and wrote a.txt");
    }

    #[test]
    fn a_prompt_without_tools_gets_a_generic_label() {
        assert_eq!(label_for("Label:"), "Worked with tools");
        assert!(!is_summary_prompt("hello"));
    }
}
