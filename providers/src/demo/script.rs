//! What the demo model says at each stage of a task, decided from the request alone.
//!
//! Stages are counted from the request's history (assistant turns since the last user
//! prompt), so the same provider serves any number of sessions and tasks.

use std::path::{Path, PathBuf};

use corvid_protocol::{FinishReason, Message, ModelRequest, Part, Role, ToolCall, ToolResult};
use serde_json::{Value, json};

/// One scripted response: text, then tool calls, then the finish reason.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub text: String,
    pub calls: Vec<ToolCall>,
    pub finish: FinishReason,
}

/// Picks the reply for this request. `cwd` is where the demo looks for a file worth reading
/// on its first turn, standing in for the project overview a real model gets in its prompt.
pub fn reply(request: &ModelRequest, cwd: Option<&Path>) -> Reply {
    let task = current_task(&request.messages);
    let stage = task.iter().filter(|m| m.role == Role::Assistant).count();
    let offered = |name: &str| request.tools.iter().any(|t| t.name == name);
    // Ids stay unique across a session because the history only grows.
    let id = |n: usize| format!("demo_{}_{n}", request.messages.len());

    match stage {
        0 if offered("list_directory") => {
            let mut calls = vec![call(id(1), "list_directory", json!({ "path": "." }))];
            if offered("read_file")
                && let Some(file) = cwd.and_then(pick_file)
            {
                calls.push(call(id(2), "read_file", json!({ "file_path": file })));
            }
            tool_turn(
                "I'll start by looking around the working directory and reading the most \
                 telling file.",
                calls,
            )
        }
        0 | 1 if offered("todo_write") && !has_called(&task, "todo_write") => tool_turn(
            "Here is my plan for this task.",
            vec![call(
                id(1),
                "todo_write",
                json!({ "todos": [
                    { "id": "1", "content": "Survey the project layout", "status": "completed" },
                    { "id": "2", "content": "Check the toolchain with a harmless command", "status": "in_progress" },
                    { "id": "3", "content": "Summarise what I found", "status": "pending" },
                ]}),
            )],
        ),
        0..=2 if offered("run_shell_command") && !has_called(&task, "run_shell_command") => {
            tool_turn(
                "Let me run a harmless command to see the files with their sizes.",
                vec![call(
                    id(1),
                    "run_shell_command",
                    json!({ "command": "ls -la", "description": "List files with details" }),
                )],
            )
        }
        _ => Reply {
            text: final_answer(&task),
            calls: Vec::new(),
            finish: FinishReason::Stop,
        },
    }
}

/// The messages from the last user prompt (a user message with text) onward.
fn current_task(messages: &[Message]) -> Vec<&Message> {
    let start = messages
        .iter()
        .rposition(|m| {
            m.role == Role::User && m.parts.iter().any(|p| matches!(p, Part::Text { .. }))
        })
        .unwrap_or(0);
    messages[start..].iter().collect()
}

fn has_called(task: &[&Message], name: &str) -> bool {
    task.iter()
        .flat_map(|m| &m.parts)
        .any(|p| matches!(p, Part::ToolCall(c) if c.name == name))
}

fn call(call_id: String, name: &str, args: Value) -> ToolCall {
    ToolCall {
        call_id,
        name: name.to_owned(),
        args,
    }
}

fn tool_turn(text: &str, calls: Vec<ToolCall>) -> Reply {
    Reply {
        text: text.to_owned(),
        calls,
        finish: FinishReason::ToolCalls,
    }
}

/// `README.md` when present, else the first regular file by name; hidden files are skipped.
fn pick_file(cwd: &Path) -> Option<String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(cwd)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| !n.starts_with('.'))
        })
        .collect();
    files.sort();
    let readme = files.iter().find(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.eq_ignore_ascii_case("readme.md"))
    });
    readme
        .or(files.first())
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .map(str::to_owned)
}

/// Every tool result of the task with the call that produced it.
fn results<'a>(task: &[&'a Message]) -> Vec<(&'a ToolCall, &'a ToolResult)> {
    let calls: Vec<&ToolCall> = task
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolCall(c) => Some(c),
            _ => None,
        })
        .collect();
    task.iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolResult(r) => calls
                .iter()
                .find(|c| c.call_id == r.call_id)
                .map(|c| (*c, r)),
            _ => None,
        })
        .collect()
}

/// A markdown summary built from what the tools actually returned.
fn final_answer(task: &[&Message]) -> String {
    let mut lines = vec!["## What I found".to_owned(), String::new()];
    for (call, result) in results(task) {
        let line = match (call.name.as_str(), result.is_error) {
            ("list_directory", false) => {
                let names = entry_names(&result.output);
                let shown: Vec<String> = names.iter().take(6).map(|n| format!("`{n}`")).collect();
                let more = names.len().saturating_sub(shown.len());
                let tail = if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                };
                let noun = if names.len() == 1 { "entry" } else { "entries" };
                format!(
                    "- The working directory has {} {noun}: {}{tail}.",
                    names.len(),
                    shown.join(", ")
                )
            }
            ("read_file", false) => {
                let file = arg(call, "file_path");
                match first_line(&result.output) {
                    Some(line) => format!("- `{file}` begins with: _{line}_"),
                    None => format!("- `{file}` is empty."),
                }
            }
            ("todo_write", false) => "- I kept a three-step plan as I went.".to_owned(),
            ("run_shell_command", false) => format!(
                "- `{}` ran fine and printed {} lines.",
                arg(call, "command"),
                result.output.lines().count()
            ),
            ("run_shell_command", true) => format!(
                "- I could not run `{}`: {}.",
                arg(call, "command"),
                first_clause(&result.output)
            ),
            (name, true) => format!("- `{name}` failed: {}.", first_clause(&result.output)),
            (name, false) => format!("- `{name}` finished."),
        };
        lines.push(line);
    }
    if lines.len() == 2 {
        lines.push("- I had no tools to look with, so there is nothing to report.".to_owned());
    }
    lines.push(String::new());
    lines.push(
        "This was corvid's built-in **demo model**: a scripted stand-in that needs no key and \
         no network. Set `ANTHROPIC_API_KEY` or `OPENAI_API_KEY` to work with a real model."
            .to_owned(),
    );
    lines.join("\n")
}

fn arg<'a>(call: &'a ToolCall, key: &str) -> &'a str {
    call.args.get(key).and_then(Value::as_str).unwrap_or("?")
}

/// The first sentence or clause of an error, lowercased at the start to continue a sentence.
fn first_clause(text: &str) -> String {
    let line = first_line(text).unwrap_or("no reason was given");
    let end = line.find([';', '.']).unwrap_or(line.len());
    let clause = line[..end].trim();
    let mut chars = clause.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => "no reason was given".to_owned(),
    }
}

fn first_line(text: &str) -> Option<&str> {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| l.trim_start_matches('#').trim())
}

/// File names out of a directory listing, whatever decoration each line carries
/// (`[DIR] src`, `src/`, `file.txt (12 bytes)`).
fn entry_names(listing: &str) -> Vec<String> {
    listing
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.ends_with(':'))
        .filter_map(|l| {
            let l = l.split_once(" (").map_or(l, |(name, _)| name);
            l.split_whitespace().last()
        })
        .map(|n| n.trim_start_matches("./").to_owned())
        .filter(|n| !n.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use corvid_protocol::ToolSchema;
    use pretty_assertions::assert_eq;

    fn request(messages: Vec<Message>) -> ModelRequest {
        let tool = |name: &str| {
            std::sync::Arc::new(ToolSchema {
                name: name.into(),
                description: String::new(),
                parameters: json!({}).into(),
            })
        };
        ModelRequest {
            model: "corvid-demo".into(),
            system: String::new(),
            messages: messages.into(),
            tools: [
                "list_directory",
                "read_file",
                "todo_write",
                "run_shell_command",
            ]
            .into_iter()
            .map(tool)
            .collect(),
            max_output_tokens: None,
            temperature: None,
        }
    }

    fn assistant(calls: Vec<ToolCall>) -> Message {
        Message {
            role: Role::Assistant,
            parts: calls.into_iter().map(Part::ToolCall).collect(),
        }
    }

    fn results_msg(results: Vec<(&str, &str, &str, bool)>) -> Message {
        Message {
            role: Role::User,
            parts: results
                .into_iter()
                .map(|(id, name, output, is_error)| {
                    Part::ToolResult(ToolResult {
                        call_id: id.into(),
                        name: name.into(),
                        output: output.into(),
                        is_error,
                        images: Vec::new(),
                    })
                })
                .collect(),
        }
    }

    #[test]
    fn the_first_turn_lists_the_directory_and_reads_the_readme() {
        let dir = tempfile_dir();
        std::fs::write(dir.join("a.txt"), "a").unwrap();
        std::fs::write(dir.join("README.md"), "# Hi").unwrap();
        let r = reply(&request(vec![Message::user_text("look")]), Some(&dir));
        assert_eq!(
            r.calls,
            vec![
                call("demo_1_1".into(), "list_directory", json!({"path": "."})),
                call(
                    "demo_1_2".into(),
                    "read_file",
                    json!({"file_path": "README.md"})
                ),
            ]
        );
        assert_eq!(r.finish, FinishReason::ToolCalls);
    }

    #[test]
    fn without_a_readme_the_first_file_is_read_and_an_empty_dir_only_lists() {
        let dir = tempfile_dir();
        let r = reply(&request(vec![Message::user_text("look")]), Some(&dir));
        assert_eq!(r.calls.len(), 1);
        std::fs::write(dir.join("b.rs"), "fn main() {}").unwrap();
        std::fs::write(dir.join("a.rs"), "").unwrap();
        let r = reply(&request(vec![Message::user_text("look")]), Some(&dir));
        assert_eq!(r.calls[1].args, json!({"file_path": "a.rs"}));
    }

    #[test]
    fn later_turns_plan_then_run_a_command_then_answer_from_the_results() {
        let list = call("l".into(), "list_directory", json!({"path": "."}));
        let read = call("r".into(), "read_file", json!({"file_path": "README.md"}));
        let mut history = vec![
            Message::user_text("look"),
            assistant(vec![list, read]),
            results_msg(vec![
                (
                    "l",
                    "list_directory",
                    "[DIR] src\nREADME.md\nCargo.toml",
                    false,
                ),
                ("r", "read_file", "# corvid\n\nA terminal agent.", false),
            ]),
        ];
        let r = reply(&request(history.clone()), None);
        assert_eq!(r.calls[0].name, "todo_write");
        assert_eq!(r.calls[0].args["todos"].as_array().unwrap().len(), 3);

        history.push(assistant(r.calls.clone()));
        history.push(results_msg(vec![("demo_3_1", "todo_write", "ok", false)]));
        let r = reply(&request(history.clone()), None);
        assert_eq!(
            r.calls,
            vec![call(
                "demo_5_1".into(),
                "run_shell_command",
                json!({"command": "ls -la", "description": "List files with details"})
            )]
        );

        history.push(assistant(r.calls.clone()));
        history.push(results_msg(vec![(
            "demo_5_1",
            "run_shell_command",
            "The user rejected this call; it did not run.",
            true,
        )]));
        let r = reply(&request(history), None);
        assert_eq!(r.finish, FinishReason::Stop);
        assert_eq!(r.calls, vec![]);
        let expected_lines = [
            "- The working directory has 3 entries: `src`, `README.md`, `Cargo.toml`.",
            "- `README.md` begins with: _corvid_",
            "- I kept a three-step plan as I went.",
            "- I could not run `ls -la`: the user rejected this call.",
        ];
        for line in expected_lines {
            assert!(r.text.contains(line), "missing {line:?} in\n{}", r.text);
        }
    }

    #[test]
    fn a_new_prompt_starts_the_script_again() {
        let history = vec![
            Message::user_text("first"),
            assistant(vec![call(
                "x".into(),
                "list_directory",
                json!({"path": "."}),
            )]),
            results_msg(vec![("x", "list_directory", "a", false)]),
            Message {
                role: Role::Assistant,
                parts: vec![Part::Text {
                    text: "done".into(),
                }],
            },
            Message::user_text("again"),
        ];
        let r = reply(&request(history), None);
        assert_eq!(r.calls[0].name, "list_directory");
        assert_eq!(r.calls[0].call_id, "demo_5_1");
    }

    #[test]
    fn without_tools_the_demo_answers_at_once() {
        let mut req = request(vec![Message::user_text("hi")]);
        req.tools.clear();
        let r = reply(&req, None);
        assert_eq!(r.finish, FinishReason::Stop);
    }

    /// A fresh directory per test (this crate has no tempfile dev-dependency).
    fn tempfile_dir() -> PathBuf {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("corvid-demo-test-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
