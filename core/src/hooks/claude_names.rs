//! The one table between corvid's built-in tools and Claude Code's names and input shapes,
//! so a pasted hook that matches `Bash` and reads `.tool_input.command` sees corvid's shell
//! tool exactly as it would see Claude's. MCP tools already carry Claude's
//! `mcp__<server>__<tool>` names; tools not in the table keep their own name and input.

use std::path::Path;

use serde_json::{Map, Value};

/// corvid's name ↔ Claude Code's name.
const TABLE: [(&str, &str); 11] = [
    ("run_shell_command", "Bash"),
    ("read_file", "Read"),
    ("write_file", "Write"),
    ("edit", "Edit"),
    ("glob", "Glob"),
    ("grep_search", "Grep"),
    (crate::agent::TASK_TOOL, "Task"),
    ("todo_write", "TodoWrite"),
    ("list_directory", "LS"),
    ("web_fetch", "WebFetch"),
    // Claude's input is the same: `query`, `allowed_domains`, `blocked_domains`.
    ("web_search", "WebSearch"),
];

/// Claude Code's name for corvid's tool `name` (itself when Claude has no such tool).
pub fn claude_name(name: &str) -> &str {
    TABLE
        .iter()
        .find(|(corvid, _)| *corvid == name)
        .map_or(name, |(_, claude)| claude)
}

/// corvid's name for a tool named either way (`Bash` or `run_shell_command`).
pub fn corvid_name(name: &str) -> &str {
    TABLE
        .iter()
        .find(|(_, claude)| *claude == name)
        .map_or(name, |(corvid, _)| corvid)
}

/// The tool input a hook sees: corvid's `input` for tool `name` in Claude's field names,
/// with paths made absolute against `cwd`. Fields Claude's tool does not have are left out
/// for the mapped tools (a hook's `updatedInput` cannot set them; see [`corvid_input`]).
pub fn claude_input(name: &str, input: &Value, cwd: &Path) -> Value {
    let Some(fields) = input.as_object() else {
        return input.clone();
    };
    let mut out = Map::new();
    match name {
        "run_shell_command" => {
            copy(fields, &mut out, "command", "command");
            copy(fields, &mut out, "description", "description");
            copy(fields, &mut out, "timeout_ms", "timeout");
        }
        "read_file" => {
            copy(fields, &mut out, "file_path", "file_path");
            // corvid counts lines from 0, Claude from 1.
            if let Some(offset) = fields.get("offset").and_then(Value::as_u64) {
                out.insert("offset".into(), Value::from(offset + 1));
            }
            copy(fields, &mut out, "limit", "limit");
        }
        "write_file" => {
            copy(fields, &mut out, "file_path", "file_path");
            copy(fields, &mut out, "content", "content");
        }
        "edit" => {
            copy(fields, &mut out, "file_path", "file_path");
            copy(fields, &mut out, "old_string", "old_string");
            copy(fields, &mut out, "new_string", "new_string");
            let all = fields
                .get("replace_all")
                .cloned()
                .unwrap_or(Value::Bool(false));
            out.insert("replace_all".into(), all);
        }
        _ => out = fields.clone(),
    }
    let mut out = Value::Object(out);
    absolute_paths(&mut out, cwd);
    out
}

/// Makes a Claude-shaped input's `file_path` and `path` absolute against `cwd`, as Claude
/// Code hands them to hooks.
pub fn absolute_paths(input: &mut Value, cwd: &Path) {
    let Some(fields) = input.as_object_mut() else {
        return;
    };
    for key in ["file_path", "path"] {
        if let Some(Value::String(p)) = fields.get_mut(key)
            && Path::new(p.as_str()).is_relative()
        {
            *p = cwd.join(&*p).to_string_lossy().into_owned();
        }
    }
}

/// corvid's input for tool `name` from a hook's `updatedInput` in Claude's shape. Fields of
/// corvid's `original` input that Claude's shape lacks (e.g. `outside_sandbox`) are kept
/// from the original, so a hook can change what runs but not how corvid confines it.
pub fn corvid_input(name: &str, updated: &Value, original: &Value) -> Value {
    let Some(fields) = updated.as_object() else {
        return updated.clone();
    };
    let mut out = Map::new();
    let mapped: &[&str] = match name {
        "run_shell_command" => {
            copy(fields, &mut out, "command", "command");
            copy(fields, &mut out, "description", "description");
            copy(fields, &mut out, "timeout", "timeout_ms");
            &["command", "description", "timeout_ms"]
        }
        "read_file" => {
            copy(fields, &mut out, "file_path", "file_path");
            if let Some(offset) = fields.get("offset").and_then(Value::as_u64) {
                out.insert("offset".into(), Value::from(offset.saturating_sub(1)));
            }
            copy(fields, &mut out, "limit", "limit");
            &["file_path", "offset", "limit"]
        }
        "write_file" => {
            copy(fields, &mut out, "file_path", "file_path");
            copy(fields, &mut out, "content", "content");
            &["file_path", "content"]
        }
        "edit" => {
            copy(fields, &mut out, "file_path", "file_path");
            copy(fields, &mut out, "old_string", "old_string");
            copy(fields, &mut out, "new_string", "new_string");
            copy(fields, &mut out, "replace_all", "replace_all");
            &["file_path", "old_string", "new_string", "replace_all"]
        }
        _ => return updated.clone(),
    };
    if let Some(original) = original.as_object() {
        for (k, v) in original {
            if !mapped.contains(&k.as_str()) {
                out.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
    Value::Object(out)
}

/// Copies field `from` of `fields` to `to` in `out`, when it is there.
fn copy(fields: &Map<String, Value>, out: &mut Map<String, Value>, from: &str, to: &str) {
    if let Some(v) = fields.get(from) {
        out.insert(to.to_owned(), v.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn built_in_tools_carry_claude_names_both_ways() {
        assert_eq!(claude_name("run_shell_command"), "Bash");
        assert_eq!(claude_name("list_directory"), "LS");
        assert_eq!(claude_name("task"), "Task");
        assert_eq!(claude_name("mcp__s__t"), "mcp__s__t");
        assert_eq!(corvid_name("Edit"), "edit");
        assert_eq!(corvid_name("edit"), "edit");
        assert_eq!(claude_name("web_search"), "WebSearch");
        assert_eq!(corvid_name("WebSearch"), "web_search");
        let input = json!({"query": "tokio", "allowed_domains": ["docs.rs"]});
        assert_eq!(claude_input("web_search", &input, Path::new("/p")), input);
    }

    #[test]
    fn shell_and_file_inputs_use_claude_field_names_and_absolute_paths() {
        let cwd = Path::new("/proj");
        assert_eq!(
            claude_input(
                "run_shell_command",
                &json!({"command": "ls", "timeout_ms": 5, "outside_sandbox": true}),
                cwd
            ),
            json!({"command": "ls", "timeout": 5})
        );
        assert_eq!(
            claude_input(
                "read_file",
                &json!({"file_path": "a.rs", "offset": 0, "limit": 3}),
                cwd
            ),
            json!({"file_path": "/proj/a.rs", "offset": 1, "limit": 3})
        );
        assert_eq!(
            claude_input(
                "edit",
                &json!({"file_path": "/x/b", "old_string": "a", "new_string": "b"}),
                cwd
            ),
            json!({"file_path": "/x/b", "old_string": "a", "new_string": "b", "replace_all": false})
        );
    }

    #[test]
    fn updated_input_maps_back_and_cannot_drop_corvid_only_fields() {
        let original = json!({"command": "rm -rf /", "outside_sandbox": false});
        assert_eq!(
            corvid_input(
                "run_shell_command",
                &json!({"command": "echo safe", "timeout": 9, "outside_sandbox": true}),
                &original
            ),
            json!({"command": "echo safe", "timeout_ms": 9, "outside_sandbox": false})
        );
        assert_eq!(
            corvid_input(
                "read_file",
                &json!({"file_path": "/a", "offset": 10}),
                &json!({})
            ),
            json!({"file_path": "/a", "offset": 9})
        );
    }
}
