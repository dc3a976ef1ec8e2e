//! History shaping both APIs need: one message per role turn, and every tool call answered by
//! exactly one result, in call order, in the message right after it.

use std::borrow::Cow;
use std::collections::HashSet;
use std::hash::{DefaultHasher, Hasher};
use std::io;

use corvid_protocol::{Message, Part, Role, ToolResult};

/// The output sent when history has a call without a result (a cancelled or abandoned run);
/// both APIs reject a call left unanswered.
const MISSING_RESULT: &str = "This tool call was not executed.";

/// One message as sent: its parts borrowed from the history (a body builder copies them into
/// the body once; cloning the history here cost a copy of every text and image per request),
/// owned only for the results answering a call left without one.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Turn<'a> {
    pub role: Role,
    pub parts: Vec<Cow<'a, Part>>,
}

/// Merges consecutive same-role messages, then pairs tool results with their calls by id.
///
/// Results without a matching call just before them are dropped (both APIs reject them).
pub(crate) fn paired(messages: &[Message]) -> Vec<Turn<'_>> {
    let merged = merge_roles(messages);
    let mut out: Vec<Turn<'_>> = Vec::with_capacity(merged.len() + 1);
    let mut iter = merged.into_iter().peekable();
    while let Some(turn) = iter.next() {
        match turn.role {
            Role::Assistant => {
                // A merged turn borrows all its parts.
                let calls: Vec<(&str, &str)> = turn
                    .parts
                    .iter()
                    .filter_map(|p| match p {
                        Cow::Borrowed(Part::ToolCall(c)) => {
                            Some((c.call_id.as_str(), c.name.as_str()))
                        }
                        _ => None,
                    })
                    .collect();
                out.push(turn);
                if calls.is_empty() {
                    continue;
                }
                let next = iter.next_if(|t| t.role == Role::User);
                out.push(answer_calls(&calls, next));
            }
            Role::User => {
                let parts: Vec<Cow<'_, Part>> = turn
                    .parts
                    .into_iter()
                    .filter(|p| {
                        let orphan = matches!(**p, Part::ToolResult(_));
                        if orphan {
                            tracing::warn!("dropping a tool result that answers no preceding call");
                        }
                        !orphan
                    })
                    .collect();
                if !parts.is_empty() {
                    out.push(Turn {
                        role: Role::User,
                        parts,
                    });
                }
            }
        }
    }
    out
}

/// The user message answering `calls`: their results in call order, then the rest of `next`.
fn answer_calls<'a>(calls: &[(&str, &str)], next: Option<Turn<'a>>) -> Turn<'a> {
    let (mut results, rest): (Vec<Cow<'a, Part>>, Vec<Cow<'a, Part>>) = next
        .map(|t| t.parts)
        .unwrap_or_default()
        .into_iter()
        .partition(|p| matches!(**p, Part::ToolResult(_)));
    let mut parts = Vec::with_capacity(calls.len() + rest.len());
    let mut answered = HashSet::new();
    for &(id, name) in calls {
        if !answered.insert(id) {
            continue;
        }
        let found = results
            .iter()
            .position(|p| matches!(&**p, Part::ToolResult(r) if r.call_id == id));
        parts.push(match found {
            Some(pos) => results.swap_remove(pos),
            None => Cow::Owned(Part::ToolResult(ToolResult {
                call_id: id.to_owned(),
                name: name.to_owned(),
                output: MISSING_RESULT.to_owned(),
                is_error: true,
                images: Vec::new(),
            })),
        });
    }
    if !results.is_empty() {
        tracing::warn!(
            count = results.len(),
            "dropping tool results that answer no preceding call"
        );
    }
    parts.extend(rest);
    Turn {
        role: Role::User,
        parts,
    }
}

/// A message's fingerprint: SipHash of its JSON form (to recognise a history seen before
/// without holding on to it).
pub(crate) fn fingerprint(message: &Message) -> u64 {
    struct Feed(DefaultHasher);
    impl io::Write for Feed {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.write(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut feed = Feed(DefaultHasher::new());
    // Writing a message cannot fail (string keys, finite numbers, an infallible writer); a
    // failure would only make the fingerprint differ (the history then reads as new).
    let _ = serde_json::to_writer(&mut feed, message);
    feed.0.finish()
}

fn merge_roles(messages: &[Message]) -> Vec<Turn<'_>> {
    let mut out: Vec<Turn<'_>> = Vec::with_capacity(messages.len());
    for message in messages {
        let parts = message.parts.iter().map(Cow::Borrowed);
        match out.last_mut() {
            Some(last) if last.role == message.role => last.parts.extend(parts),
            _ => out.push(Turn {
                role: message.role,
                parts: parts.collect(),
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use corvid_protocol::ToolCall;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn call(id: &str) -> Part {
        Part::ToolCall(ToolCall {
            call_id: id.into(),
            name: "read_file".into(),
            args: json!({}),
        })
    }

    fn result(id: &str, output: &str) -> Part {
        Part::ToolResult(ToolResult {
            call_id: id.into(),
            name: "read_file".into(),
            output: output.into(),
            is_error: false,
            images: Vec::new(),
        })
    }

    fn msg(role: Role, parts: Vec<Part>) -> Message {
        Message { role, parts }
    }

    /// The turns as owned messages, to compare with whole expected values.
    fn owned(turns: Vec<Turn<'_>>) -> Vec<Message> {
        turns
            .into_iter()
            .map(|t| Message {
                role: t.role,
                parts: t.parts.into_iter().map(Cow::into_owned).collect(),
            })
            .collect()
    }

    #[test]
    fn results_are_reordered_to_call_order_and_missing_ones_are_answered() {
        let history = vec![
            Message::user_text("go"),
            msg(Role::Assistant, vec![call("a")]),
            msg(Role::Assistant, vec![call("b"), call("c")]),
            msg(
                Role::User,
                vec![result("c", "C"), result("a", "A"), result("zzz", "orphan")],
            ),
            Message::user_text("next"),
        ];
        let missing = Part::ToolResult(ToolResult {
            call_id: "b".into(),
            name: "read_file".into(),
            output: MISSING_RESULT.into(),
            is_error: true,
            images: Vec::new(),
        });
        let expected = vec![
            Message::user_text("go"),
            msg(Role::Assistant, vec![call("a"), call("b"), call("c")]),
            msg(
                Role::User,
                vec![
                    result("a", "A"),
                    missing,
                    result("c", "C"),
                    Part::Text {
                        text: "next".into(),
                    },
                ],
            ),
        ];
        assert_eq!(owned(paired(&history)), expected);
    }

    #[test]
    fn an_orphan_result_with_no_call_before_it_is_dropped() {
        let history = vec![msg(
            Role::User,
            vec![result("x", "X"), Part::Text { text: "hi".into() }],
        )];
        assert_eq!(owned(paired(&history)), vec![Message::user_text("hi")]);
    }
}
