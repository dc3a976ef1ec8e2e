//! `corvid sessions show ID` (SPEC §1.1, §9; `sessions list` is `sessions_list`): a recorded
//! session as plain text, so people can read what happened.
//!
//! It writes to any `Write`, so it is tested by comparing the whole rendered text (the listing
//! too, through `sessions_list`).

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::Path;

use corvid_core::session::{Record, SessionStore, UNSTARTED_CALL, utc_minutes};
use corvid_protocol::{HostedStep, Message, Part, Role, ToolCall, ToolResult, Usage};

/// Longest single line of a transcript detail (tool arguments, result line, thought).
pub(crate) const DETAIL_WIDTH: usize = 80;

/// Prints one session (by id or unique id prefix) as a readable transcript: a header line, then
/// prompts (`> `), assistant text, thoughts, tool calls with their outcome and first output line,
/// tool-use summaries (`● `), model changes and total usage; load warnings come last.
pub fn show_session(
    store: &SessionStore,
    cwd: &Path,
    id: &str,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let session = store.load(cwd, id)?;
    let header = &session.header;
    writeln!(
        out,
        "Session {} · {} · started {} UTC · {}",
        header.session_id,
        one_line(&header.model, DETAIL_WIDTH),
        utc_minutes(header.started_at_ms),
        header.cwd.display()
    )?;

    // Results arrive in the message after their calls; each call line shows its outcome.
    // The history also answers calls a crash left open, with what the model is told.
    let history = session.whole_history();
    let results: HashMap<&str, &ToolResult> = history
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolResult(result) => Some((result.call_id.as_str(), result)),
            _ => None,
        })
        .collect();
    let child_results = subagent_results(&session.records);
    let mut child_called = HashSet::new();
    let mut called = HashSet::new();
    let mut usage = Usage::default();
    let mut saw_usage = false;
    for record in &session.records {
        match record {
            Record::SubagentMessage {
                parent_call_id,
                message,
            } => {
                let results = child_results.get(parent_call_id.as_str());
                let mut text = Vec::new();
                write_message(
                    &mut text,
                    message,
                    results.unwrap_or(&HashMap::new()),
                    &mut child_called,
                )?;
                for line in String::from_utf8_lossy(&text).lines() {
                    if !line.is_empty() {
                        writeln!(out, "  │ {line}")?;
                    }
                }
            }
            Record::Message { message } => {
                write_message(out, message, &results, &mut called)?;
            }
            Record::ToolUseSummary { summary, .. } => {
                writeln!(out, "● {}", one_line(summary, usize::MAX))?;
            }
            Record::ModelChange { from, to } => {
                writeln!(
                    out,
                    "(model changed: {} → {})",
                    one_line(from, DETAIL_WIDTH),
                    one_line(to, DETAIL_WIDTH)
                )?;
            }
            Record::ApprovalModeChange { mode } => {
                writeln!(out, "(approval mode set to {})", mode.as_str())?;
            }
            Record::ReasoningEffortChange { effort } => {
                writeln!(out, "(reasoning effort set to {})", effort.as_str())?;
            }
            Record::Usage { usage: u, .. } => {
                usage.add(u);
                saw_usage = true;
            }
            Record::HistoryCleared => writeln!(out, "(history cleared: /clear)")?,
            Record::Title { title } => {
                writeln!(
                    out,
                    "(titled: {})",
                    one_line(title, crate::sessions_list::PROMPT_WIDTH)
                )?;
            }
            Record::HistoryRewound { .. } => writeln!(
                out,
                "(conversation rewound: the turns undone here are left out)"
            )?,
            Record::Compacted {
                tokens_before,
                tokens_after,
                kept_messages,
                ..
            } => writeln!(
                out,
                "(conversation compacted here: {tokens_before} → {tokens_after} tokens, the last \
                 {kept_messages} messages kept verbatim)"
            )?,
            // The result text already says the user rejected the call.
            Record::Header(_) | Record::CallStarted { .. } | Record::CallRejected { .. } => {}
        }
    }
    if saw_usage {
        writeln!(
            out,
            "\nTokens: {} in ({} cached) · {} out",
            usage.input_tokens, usage.cached_input_tokens, usage.output_tokens
        )?;
    }
    for warning in &session.warnings {
        writeln!(out, "warning: {}", one_line(warning, usize::MAX))?;
    }
    Ok(())
}

/// The results of each subagent's calls, by the `task` call that ran it, so its transcript
/// shows every call with its outcome like the session's own.
fn subagent_results(records: &[Record]) -> HashMap<&str, HashMap<&str, &ToolResult>> {
    let mut by_task: HashMap<&str, HashMap<&str, &ToolResult>> = HashMap::new();
    for record in records {
        if let Record::SubagentMessage {
            parent_call_id,
            message,
        } = record
        {
            let results = by_task.entry(parent_call_id.as_str()).or_default();
            for part in &message.parts {
                if let Part::ToolResult(result) = part {
                    results.insert(result.call_id.as_str(), result);
                }
            }
        }
    }
    by_task
}

fn write_message<'a>(
    out: &mut impl Write,
    message: &'a Message,
    results: &HashMap<&str, &ToolResult>,
    called: &mut HashSet<&'a str>,
) -> std::io::Result<()> {
    let is_prompt =
        message.role == Role::User && message.parts.iter().any(|p| matches!(p, Part::Text { .. }));
    if is_prompt {
        writeln!(out)?;
    }
    for part in &message.parts {
        match part {
            Part::Text { text } if message.role == Role::User => {
                for line in clean_block(text).lines() {
                    writeln!(out, "> {line}")?;
                }
            }
            Part::Text { text } => {
                let text = clean_block(text);
                if !text.trim().is_empty() {
                    writeln!(out, "{}", text.trim_end())?;
                }
            }
            Part::Thought { text, .. } => {
                if !text.trim().is_empty() {
                    writeln!(out, "(thinking) {}", one_line(text, DETAIL_WIDTH))?;
                }
            }
            Part::ToolCall(call) => {
                called.insert(call.call_id.as_str());
                write_call(out, call, results.get(call.call_id.as_str()).copied())?;
            }
            // A result whose call was not recorded still shows, in its own place.
            Part::ToolResult(result) if !called.contains(result.call_id.as_str()) => {
                write_outcome(out, &result.name, None, result.is_error, &result.output)?;
                write_result_images(out, result)?;
            }
            Part::ToolResult(_) => {}
            Part::Image(image) => writeln!(out, "> [image, {}]", image.media_type)?,
            // The API's own search: its query, then its results, as the card showed them.
            Part::Hosted(block) => match &block.step {
                HostedStep::Call { title, .. } => {
                    writeln!(out, "  ↗ {}", one_line(title, DETAIL_WIDTH))?
                }
                HostedStep::Result { text, is_error } => {
                    write_outcome(out, &block.tool_name, None, *is_error, text)?
                }
            },
        }
    }
    Ok(())
}

fn write_call(
    out: &mut impl Write,
    call: &ToolCall,
    result: Option<&ToolResult>,
) -> std::io::Result<()> {
    let args = serde_json::to_string(&call.args).unwrap_or_default();
    let (is_error, output) = match result {
        Some(r) => (r.is_error, r.output.as_str()),
        None => (true, UNSTARTED_CALL),
    };
    write_outcome(out, &call.name, Some(&args), is_error, output)?;
    match result {
        Some(r) => write_result_images(out, r),
        None => Ok(()),
    }
}

/// One line per image a tool returned to the model.
fn write_result_images(out: &mut impl Write, result: &ToolResult) -> std::io::Result<()> {
    for image in &result.images {
        writeln!(out, "    [image, {}]", image.media_type)?;
    }
    Ok(())
}

/// `  ✓ name args` and, below it, the first line of the output and how many lines were left out.
fn write_outcome(
    out: &mut impl Write,
    name: &str,
    args: Option<&str>,
    is_error: bool,
    output: &str,
) -> std::io::Result<()> {
    let mark = if is_error { '✗' } else { '✓' };
    let head = match args {
        Some(args) => format!("{name} {args}"),
        None => name.to_owned(),
    };
    writeln!(out, "  {mark} {}", one_line(&head, DETAIL_WIDTH))?;
    let mut lines = output.lines().filter(|l| !l.trim().is_empty());
    match lines.next() {
        None => writeln!(out, "    (no output)"),
        Some(first) => {
            let rest = lines.count();
            let more = match rest {
                0 => String::new(),
                1 => " (+1 line)".to_owned(),
                n => format!(" (+{n} lines)"),
            };
            writeln!(out, "    {}{more}", one_line(first, DETAIL_WIDTH))
        }
    }
}

/// Text squeezed onto one line and cut to `max` characters (with `…`), with control
/// characters removed so recorded content cannot drive the terminal.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let joined: String = words
        .join(" ")
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    if joined.chars().count() <= max {
        return joined;
    }
    let mut cut: String = joined.chars().take(max.saturating_sub(1)).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    cut
}

/// Multi-line text with control characters other than newlines and tabs removed.
fn clean_block(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .collect()
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::PathBuf;

    use crate::args::ReportFormat;
    use corvid_core::session::{RECORD_VERSION, RecordHeader};
    use pretty_assertions::assert_eq;

    use super::*;

    /// A store in a temporary home and a project directory for it.
    struct Fixture {
        _home: tempfile::TempDir,
        store: SessionStore,
        cwd: PathBuf,
    }

    fn fixture() -> Fixture {
        let home = tempfile::tempdir().unwrap();
        let store = SessionStore::new(home.path());
        Fixture {
            cwd: PathBuf::from("/work/project"),
            _home: home,
            store,
        }
    }

    /// Writes a session file with a chosen start time (the recorder always stamps "now").
    fn write_session(f: &Fixture, id: &str, started_at_ms: u64, model: &str, records: &[Record]) {
        let dir = f.store.project_dir(&f.cwd);
        fs::create_dir_all(&dir).unwrap();
        let header = Record::Header(RecordHeader {
            version: RECORD_VERSION,
            session_id: id.to_owned(),
            cwd: f.cwd.clone(),
            model: model.to_owned(),
            started_at_ms,
            forked_from: None,
        });
        let mut text = String::new();
        for record in std::iter::once(&header).chain(records) {
            text.push_str(&serde_json::to_string(record).unwrap());
            text.push('\n');
        }
        fs::write(dir.join(format!("{id}.jsonl")), text).unwrap();
    }

    fn list(f: &Fixture) -> String {
        let mut out = Vec::new();
        crate::sessions_list::list_sessions(&f.store, &f.cwd, ReportFormat::Text, &mut out)
            .unwrap();
        String::from_utf8(out).unwrap()
    }

    fn show(f: &Fixture, id: &str) -> String {
        let mut out = Vec::new();
        show_session(&f.store, &f.cwd, id, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn user(text: &str) -> Record {
        Record::Message {
            message: Message::user_text(text),
        }
    }

    fn assistant(parts: Vec<Part>) -> Record {
        Record::Message {
            message: Message {
                role: Role::Assistant,
                parts,
            },
        }
    }

    fn call(id: &str, name: &str, args: serde_json::Value) -> Part {
        Part::ToolCall(ToolCall {
            call_id: id.into(),
            name: name.into(),
            args,
        })
    }

    fn results(results: &[(&str, &str, &str, bool)]) -> Record {
        Record::Message {
            message: Message {
                role: Role::User,
                parts: results
                    .iter()
                    .map(|(id, name, output, is_error)| {
                        Part::ToolResult(ToolResult {
                            call_id: (*id).into(),
                            name: (*name).into(),
                            output: (*output).into(),
                            is_error: *is_error,
                            images: Vec::new(),
                        })
                    })
                    .collect(),
            },
        }
    }

    #[test]
    fn a_project_without_sessions_gets_a_friendly_line() {
        let f = fixture();
        assert_eq!(
            list(&f),
            "No recorded sessions for /work/project yet; sessions are recorded as you work.\n"
        );
    }

    #[test]
    fn sessions_are_listed_newest_first_with_the_first_prompt_on_one_short_line() {
        let f = fixture();
        write_session(
            &f,
            "older",
            1_709_251_140_000,
            "gpt-4.1",
            &[user("fix the\nflaky   test")],
        );
        write_session(
            &f,
            "newer-session",
            1_796_028_300_000,
            "claude-sonnet-4-5",
            &[user(
                "please refactor the settings loader so that every source is merged in one place and documented",
            )],
        );
        // Opened and left without a prompt: not worth listing.
        write_session(&f, "empty", 951_868_800_000, "gpt-4.1", &[]);
        assert_eq!(
            list(&f),
            "\
ID             STARTED (UTC)     MODEL              TITLE OR FIRST PROMPT
newer-session  2026-11-30 08:45  claude-sonnet-4-5  please refactor the settings loader so that every source is…
older          2024-02-29 23:59  gpt-4.1            fix the flaky test
"
        );
    }

    #[test]
    fn a_titled_session_is_listed_by_its_last_title_without_control_characters() {
        let f = fixture();
        write_session(
            &f,
            "titled",
            1_796_028_300_000,
            "gpt-4.1",
            &[
                user("the parser test fails now and then"),
                Record::Title {
                    title: "First try".into(),
                },
                Record::Title {
                    title: "Fix the flaky\x1b[2J parser test".into(),
                },
            ],
        );
        assert_eq!(
            list(&f),
            "\
ID      STARTED (UTC)     MODEL    TITLE OR FIRST PROMPT
titled  2026-11-30 08:45  gpt-4.1  Fix the flaky[2J parser test
"
        );
    }

    #[test]
    fn a_session_shows_as_a_readable_transcript() {
        let f = fixture();
        write_session(
            &f,
            "s1",
            1_796_028_300_000,
            "claude-sonnet-4-5",
            &[
                user("read a.txt and run the tests"),
                assistant(vec![
                    Part::Thought {
                        text: "The user wants two things.\nFirst I read the file, then I run cargo test in the workspace root.".into(),
                        signature: Some("sig".into()),
                        provider_data: None,
                    },
                    Part::Text {
                        text: "Reading it first.".into(),
                    },
                    call("c1", "read_file", serde_json::json!({"file_path": "a.txt"})),
                    call("c2", "shell", serde_json::json!({"command": "cargo test"})),
                ]),
                results(&[
                    ("c1", "read_file", "hello\nworld\n", false),
                    ("c2", "shell", "error[E0425]: cannot find value `x`\n  --> src/lib.rs:3:5\n", true),
                ]),
                Record::ToolUseSummary {
                    summary: "Read a.txt and ran the tests".into(),
                    preceding_tool_use_ids: vec!["c1".into(), "c2".into()],
                },
                Record::ModelChange {
                    from: "claude-sonnet-4-5".into(),
                    to: "claude-haiku-4-5".into(),
                },
                assistant(vec![Part::Text {
                    text: "The tests fail:\n\n- `x` is undefined in src/lib.rs\n".into(),
                }]),
                Record::Usage {
                    prompt_id: "main".into(),
                    usage: Usage {
                        input_tokens: 1200,
                        output_tokens: 80,
                        total_tokens: 1280,
                        cached_input_tokens: 1000,
                        reasoning_tokens: 0,
                    },
                },
                user("thanks\nthat is all"),
                assistant(vec![Part::Text { text: "You're welcome.".into() }]),
                Record::Usage {
                    prompt_id: "tool_use_summary_generation".into(),
                    usage: Usage {
                        input_tokens: 30,
                        output_tokens: 7,
                        total_tokens: 37,
                        cached_input_tokens: 0,
                        reasoning_tokens: 0,
                    },
                },
            ],
        );
        assert_eq!(
            show(&f, "s1"),
            "\
Session s1 · claude-sonnet-4-5 · started 2026-11-30 08:45 UTC · /work/project

> read a.txt and run the tests
(thinking) The user wants two things. First I read the file, then I run cargo test in the…
Reading it first.
  ✓ read_file {\"file_path\":\"a.txt\"}
    hello (+1 line)
  ✗ shell {\"command\":\"cargo test\"}
    error[E0425]: cannot find value `x` (+1 line)
● Read a.txt and ran the tests
(model changed: claude-sonnet-4-5 → claude-haiku-4-5)
The tests fail:

- `x` is undefined in src/lib.rs

> thanks
> that is all
You're welcome.

Tokens: 1230 in (1000 cached) · 87 out
"
        );
    }

    #[test]
    fn a_tool_results_images_show_under_its_call() {
        let f = fixture();
        let mut shot = results(&[("c1", "mcp__s__shot", "a screenshot", false)]);
        if let Record::Message { message } = &mut shot
            && let Part::ToolResult(result) = &mut message.parts[0]
        {
            result.images = vec![corvid_protocol::ImageData {
                media_type: "image/png".into(),
                data_base64: "iVBORw==".into(),
            }];
        }
        write_session(
            &f,
            "s1",
            1_796_028_300_000,
            "gpt-4.1",
            &[
                user("take a screenshot"),
                assistant(vec![call("c1", "mcp__s__shot", serde_json::json!({}))]),
                shot,
            ],
        );
        assert_eq!(
            show(&f, "s1"),
            "\
Session s1 · gpt-4.1 · started 2026-11-30 08:45 UTC · /work/project

> take a screenshot
  ✓ mcp__s__shot {}
    a screenshot
    [image, image/png]
"
        );
    }

    #[test]
    fn an_interrupted_session_shows_its_unfinished_call_and_the_torn_line_warning_last() {
        let f = fixture();
        write_session(
            &f,
            "crashed",
            0,
            "gpt-4.1",
            &[
                user("list files"),
                assistant(vec![
                    call("c1", "list_dir", serde_json::json!({})),
                    call("c2", "list_dir", serde_json::json!({"dir": "src"})),
                ]),
                Record::CallStarted {
                    call_id: "c1".into(),
                },
            ],
        );
        let path = f.store.project_dir(&f.cwd).join("crashed.jsonl");
        let mut text = fs::read_to_string(&path).unwrap();
        text.push_str(r#"{"record":"message","message":{"role":"us"#);
        fs::write(&path, text).unwrap();
        let warning = format!(
            "warning: {}: skipped the torn last line 5 (the session was interrupted mid-write): \
             EOF while parsing a string at line 1 column 41",
            path.display()
        );
        assert_eq!(
            show(&f, "cra"),
            format!(
                "\
Session crashed · gpt-4.1 · started 1970-01-01 00:00 UTC · /work/project

> list files
  ✗ list_dir {{}}
    The call was interrupted when corvid stopped; it may have run partly. Check its…
  ✗ list_dir {{\"dir\":\"src\"}}
    This call was not run: corvid stopped before it started.
{warning}
"
            )
        );
    }

    #[test]
    fn damaged_and_unreadable_sessions_are_listed_with_a_marker() {
        let f = fixture();
        write_session(&f, "whole", 120_000, "m", &[user("fine")]);
        write_session(&f, "torn", 60_000, "m", &[user("half written")]);
        let dir = f.store.project_dir(&f.cwd);
        let mut text = fs::read_to_string(dir.join("torn.jsonl")).unwrap();
        text.push_str("{\"record\":\"mess\n");
        fs::write(dir.join("torn.jsonl"), text).unwrap();
        fs::write(dir.join("broken.jsonl"), "garbage\n").unwrap();
        let listed = list(&f);
        let lines: Vec<&str> = listed.lines().collect();
        assert_eq!(lines.len(), 4, "{listed}");
        // An unreadable file has no start time: its modification time (now) stands in.
        assert!(
            lines[1].starts_with("broken  ") && lines[1].contains("[unreadable: session file "),
            "{listed}"
        );
        assert_eq!(
            lines[2..],
            [
                "whole   1970-01-01 00:02  m      fine",
                "torn    1970-01-01 00:01  m      [damaged: 1 line skipped] half written",
            ]
        );
    }

    #[test]
    fn a_tool_that_printed_nothing_says_so_and_control_characters_are_dropped() {
        let f = fixture();
        write_session(
            &f,
            "quiet",
            0,
            "gpt-4.1",
            &[
                user("touch it"),
                assistant(vec![
                    Part::Text {
                        text: "\u{1b}[2JDone".into(),
                    },
                    call("c1", "shell", serde_json::json!({"command": "touch x"})),
                ]),
                results(&[("c1", "shell", "\n", false)]),
            ],
        );
        assert_eq!(
            show(&f, "quiet"),
            "\
Session quiet · gpt-4.1 · started 1970-01-01 00:00 UTC · /work/project

> touch it
[2JDone
  ✓ shell {\"command\":\"touch x\"}
    (no output)
"
        );
    }

    #[test]
    fn an_unknown_id_is_an_error_pointing_at_the_listing() {
        let f = fixture();
        let mut out = Vec::new();
        let error = show_session(&f.store, &f.cwd, "nope", &mut out).unwrap_err();
        assert_eq!(
            error.to_string(),
            "no session nope for /work/project; `corvid sessions list` shows the recorded ones"
        );
        assert_eq!(out, Vec::<u8>::new());
    }
}
