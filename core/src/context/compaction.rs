//! What compaction does to a history, without I/O: where to split it (never between a call
//! and its result), what the summarizing request says, and the history that replaces it.

use corvid_protocol::{Message, Part, Role};

use super::meter::message_bytes;

/// The summarizer's instructions (the request offers no tools, so the answer is the summary).
pub const COMPACTION_SYSTEM: &str = "You summarize a coding agent's conversation so that the \
agent can continue the work from your summary alone, without the messages it replaces. Be \
specific and complete; prefer exact names, paths, commands and error messages over prose.";

/// The request that ends the summarized messages.
pub const COMPACTION_INSTRUCTION: &str = "Summarize the conversation above for the agent that \
continues it. Use these sections:\n\
1. Goal: what the user asked for, quoting their latest request verbatim.\n\
2. Decisions: what was decided and why, and the user's stated preferences and constraints.\n\
3. Files: every file read, created or changed, with its current state.\n\
4. Commands and results: what was run and what came out (errors verbatim).\n\
5. Open work: what remains to be done, and the very next step.\n\
Answer with the summary only.";

/// How the summary message starts, so the model (and a reader of the session) knows what it is.
pub const SUMMARY_HEADER: &str = "[This conversation was compacted: the messages before this \
point were replaced by the following summary of them.]\n\n";

/// Where the summarized part may end: before an assistant message or before a user prompt,
/// never before a message of tool results (its calls would be summarized away).
fn is_boundary(message: &Message) -> bool {
    match message.role {
        Role::Assistant => true,
        Role::User => !message
            .parts
            .iter()
            .any(|p| matches!(p, Part::ToolResult(_))),
    }
}

/// The index where the kept part of `history` starts: the earliest boundary whose suffix fits
/// in `keep_bytes`, or the last boundary when even the last turn is larger. `None` when
/// there is nothing before any boundary to summarize.
pub fn split_point(history: &[Message], keep_bytes: u64) -> Option<usize> {
    let mut suffix = 0u64;
    let mut best = None;
    for index in (1..history.len()).rev() {
        suffix += message_bytes(&history[index]);
        if !is_boundary(&history[index]) {
            continue;
        }
        if best.is_some() && suffix > keep_bytes {
            break;
        }
        best = Some(index);
    }
    best
}

/// The messages of the summarizing request: the part to summarize (its oldest messages left
/// out, with a note, when it alone exceeds `max_bytes`), then the instruction.
pub fn summary_request(older: &[Message], max_bytes: u64) -> Vec<Message> {
    let start = fitting_start(older, max_bytes);
    let mut messages = Vec::with_capacity(older.len() - start + 2);
    if start > 0 {
        messages.push(Message::user_text(format!(
            "({start} earlier messages are left out here: together they were too long to \
             summarize.)"
        )));
    }
    messages.extend_from_slice(&older[start..]);
    push_user_text(&mut messages, COMPACTION_INSTRUCTION);
    messages
}

/// The earliest boundary from which `messages` fit in `max_bytes` (0 when all fit).
fn fitting_start(messages: &[Message], max_bytes: u64) -> usize {
    let total: u64 = messages.iter().map(message_bytes).sum();
    if total <= max_bytes {
        return 0;
    }
    let mut dropped = 0u64;
    for (index, message) in messages.iter().enumerate() {
        if index > 0 && is_boundary(message) && total - dropped <= max_bytes {
            return index;
        }
        dropped += message_bytes(message);
    }
    // Even the last turn is too long: keep it, the server will say what it can take.
    (1..messages.len())
        .rev()
        .find(|&i| is_boundary(&messages[i]))
        .unwrap_or(0)
}

/// The history after compaction: the marked summary, then the kept messages verbatim. A kept
/// part that starts with a user prompt takes the summary as its first text, so user and
/// assistant messages still alternate.
pub fn compacted_history(summary: &str, kept: &[Message]) -> Vec<Message> {
    let summary = Part::Text {
        text: format!("{SUMMARY_HEADER}{}", summary.trim()),
    };
    let mut history = Vec::with_capacity(kept.len() + 1);
    match kept.first() {
        Some(first) if first.role == Role::User => {
            let mut merged = first.clone();
            merged.parts.insert(0, summary);
            history.push(merged);
            history.extend_from_slice(&kept[1..]);
        }
        _ => {
            history.push(Message {
                role: Role::User,
                parts: vec![summary],
            });
            history.extend_from_slice(kept);
        }
    }
    history
}

/// Adds `text` as a user message, or to the last message when that is the user's already.
fn push_user_text(messages: &mut Vec<Message>, text: &str) {
    let part = Part::Text {
        text: text.to_owned(),
    };
    match messages.last_mut() {
        Some(last) if last.role == Role::User => last.parts.push(part),
        _ => messages.push(Message {
            role: Role::User,
            parts: vec![part],
        }),
    }
}

#[cfg(test)]
mod tests {
    use corvid_protocol::{ToolCall, ToolResult};
    use serde_json::json;

    use super::*;

    fn call(id: &str) -> Message {
        Message {
            role: Role::Assistant,
            parts: vec![Part::ToolCall(ToolCall {
                call_id: id.into(),
                name: "read_file".into(),
                args: json!({}),
            })],
        }
    }

    fn result(id: &str, output: &str) -> Message {
        Message {
            role: Role::User,
            parts: vec![Part::ToolResult(ToolResult {
                call_id: id.into(),
                name: "read_file".into(),
                output: output.into(),
                is_error: false,
                images: Vec::new(),
            })],
        }
    }

    fn answer(text: &str) -> Message {
        Message {
            role: Role::Assistant,
            parts: vec![Part::Text { text: text.into() }],
        }
    }

    /// Every result in `history` follows the message holding its call.
    fn paired(history: &[Message]) -> bool {
        history.iter().enumerate().all(|(i, m)| {
            m.parts.iter().all(|p| match p {
                Part::ToolResult(r) => {
                    i > 0
                        && history[i - 1]
                            .parts
                            .iter()
                            .any(|q| matches!(q, Part::ToolCall(c) if c.call_id == r.call_id))
                }
                _ => true,
            })
        })
    }

    fn session() -> Vec<Message> {
        vec![
            Message::user_text("read the files"),
            call("a"),
            result("a", &"x".repeat(1_000)),
            call("b"),
            result("b", &"y".repeat(1_000)),
            answer("done"),
            Message::user_text("now fix it"),
            call("c"),
            result("c", "ok"),
        ]
    }

    #[test]
    fn the_split_keeps_what_fits_and_never_separates_a_call_from_its_result() {
        let history = session();
        for keep in [0, 10, 100, 1_050, 2_000, 5_000] {
            let split = split_point(&history, keep).unwrap();
            assert!(
                is_boundary(&history[split]),
                "keep {keep}: split at {split}"
            );
            let after = compacted_history("summary", &history[split..]);
            assert!(paired(&after), "keep {keep}: {after:#?}");
        }
        // Small budgets keep only the last turn; a large one keeps all but the first prompt.
        assert_eq!(split_point(&history, 10), Some(7));
        assert_eq!(split_point(&history, 5_000), Some(1));
    }

    #[test]
    fn a_history_of_one_message_has_nothing_to_compact() {
        assert_eq!(split_point(&[Message::user_text("hi")], 0), None);
    }

    #[test]
    fn the_summary_is_marked_and_merged_into_a_kept_prompt() {
        let history = session();
        let after = compacted_history("  the summary ", &history[6..]);
        assert_eq!(after.len(), 3);
        assert_eq!(after[0].role, Role::User);
        assert_eq!(
            after[0].parts[0],
            Part::Text {
                text: format!("{SUMMARY_HEADER}the summary")
            }
        );
        assert_eq!(
            after[0].parts[1],
            Part::Text {
                text: "now fix it".into()
            }
        );
        let after = compacted_history("s", &history[3..]);
        assert_eq!(after[0].role, Role::User);
        assert_eq!(after[1], call("b"));
    }

    #[test]
    fn the_summary_request_ends_with_the_instruction_after_the_last_results() {
        let history = session();
        let request = summary_request(&history[..5], u64::MAX);
        assert_eq!(request.len(), 5);
        let last = request.last().unwrap();
        assert!(matches!(last.parts[0], Part::ToolResult(_)));
        assert_eq!(
            last.parts[1],
            Part::Text {
                text: COMPACTION_INSTRUCTION.into()
            }
        );
    }

    #[test]
    fn a_part_too_long_to_summarize_loses_its_oldest_messages_with_a_note() {
        let history = session();
        let request = summary_request(&history[..6], 1_100);
        assert!(
            request[0]
                .text()
                .contains("3 earlier messages are left out")
        );
        assert_eq!(request[1], call("b"));
        assert!(paired(&request));
    }
}
