//! History shaping both APIs need: one message per role turn, and every tool call answered by
//! exactly one result, in call order, in the message right after it.

use std::collections::HashSet;

use corvid_protocol::{Message, Part, Role, ToolResult};

/// The output sent when history has a call without a result (a cancelled or abandoned run);
/// both APIs reject a call left unanswered.
const MISSING_RESULT: &str = "This tool call was not executed.";

/// Merges consecutive same-role messages, then pairs tool results with their calls by id.
///
/// Results without a matching call just before them are dropped (both APIs reject them).
pub(crate) fn paired(messages: &[Message]) -> Vec<Message> {
    let merged = merge_roles(messages);
    let mut out: Vec<Message> = Vec::with_capacity(merged.len() + 1);
    let mut iter = merged.into_iter().peekable();
    while let Some(message) = iter.next() {
        match message.role {
            Role::Assistant => {
                let calls: Vec<(String, String)> = message
                    .parts
                    .iter()
                    .filter_map(|p| match p {
                        Part::ToolCall(c) => Some((c.call_id.clone(), c.name.clone())),
                        _ => None,
                    })
                    .collect();
                out.push(message);
                if calls.is_empty() {
                    continue;
                }
                let next = iter.next_if(|m| m.role == Role::User);
                out.push(answer_calls(&calls, next));
            }
            Role::User => {
                let parts: Vec<Part> = message
                    .parts
                    .into_iter()
                    .filter(|p| {
                        let orphan = matches!(p, Part::ToolResult(_));
                        if orphan {
                            tracing::warn!("dropping a tool result that answers no preceding call");
                        }
                        !orphan
                    })
                    .collect();
                if !parts.is_empty() {
                    out.push(Message {
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
fn answer_calls(calls: &[(String, String)], next: Option<Message>) -> Message {
    let (mut results, rest): (Vec<Part>, Vec<Part>) = next
        .map(|m| m.parts)
        .unwrap_or_default()
        .into_iter()
        .partition(|p| matches!(p, Part::ToolResult(_)));
    let mut parts = Vec::with_capacity(calls.len() + rest.len());
    let mut answered = HashSet::new();
    for (id, name) in calls {
        if !answered.insert(id.as_str()) {
            continue;
        }
        let found = results
            .iter()
            .position(|p| matches!(p, Part::ToolResult(r) if &r.call_id == id));
        parts.push(match found {
            Some(pos) => results.swap_remove(pos),
            None => Part::ToolResult(ToolResult {
                call_id: id.clone(),
                name: name.clone(),
                output: MISSING_RESULT.to_owned(),
                is_error: true,
                images: Vec::new(),
            }),
        });
    }
    if !results.is_empty() {
        tracing::warn!(
            count = results.len(),
            "dropping tool results that answer no preceding call"
        );
    }
    parts.extend(rest);
    Message {
        role: Role::User,
        parts,
    }
}

fn merge_roles(messages: &[Message]) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    for message in messages {
        match out.last_mut() {
            Some(last) if last.role == message.role => {
                last.parts.extend(message.parts.iter().cloned())
            }
            _ => out.push(message.clone()),
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
        assert_eq!(paired(&history), expected);
    }

    #[test]
    fn an_orphan_result_with_no_call_before_it_is_dropped() {
        let history = vec![msg(
            Role::User,
            vec![result("x", "X"), Part::Text { text: "hi".into() }],
        )];
        assert_eq!(paired(&history), vec![Message::user_text("hi")]);
    }
}
