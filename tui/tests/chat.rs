//! Transcript state rules (SPEC §7.4, §5): what is committed when, from core events alone.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use common::*;
use corvid_protocol::{
    CoreEvent, DiscardReason, Provenance, StopReason, Todo, TodoStatus, ToolStatus,
};
use corvid_tui::cells::{HistoryCell, NoticeKind};
use corvid_tui::chat::ChatState;
use pretty_assertions::assert_eq;

fn feed(chat: &mut ChatState, events: &[CoreEvent]) {
    for ev in events {
        chat.on_event(ev);
    }
}

/// The transcript as short tags, to compare whole sequences.
fn tags(chat: &ChatState) -> Vec<String> {
    chat.transcript()
        .iter()
        .map(|c| match c {
            HistoryCell::UserPrompt(p) => format!("prompt {p}"),
            HistoryCell::Assistant(t) => format!("text {t}"),
            HistoryCell::Thought(_) => "thought".into(),
            HistoryCell::Tools(g) => format!(
                "tools{} {}",
                if g.compact { " compact" } else { "" },
                g.calls()
                    .map(|c| c.call_id.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            HistoryCell::Summary(s) => format!("● {s}"),
            HistoryCell::Notice(k, t) => format!("{k:?} {t}"),
            HistoryCell::Plan(t) => format!("plan {}", t.len()),
        })
        .collect()
}

#[test]
fn a_plan_only_batch_does_not_make_the_previous_label_stale() {
    let mut chat = ChatState::new(false);
    feed(&mut chat, &[task_started("go")]);
    feed(&mut chat, &read_batch("a", "a.rs"));
    feed(
        &mut chat,
        &[
            CoreEvent::Plan {
                todos: vec![Todo {
                    id: "1".into(),
                    content: "x".into(),
                    status: TodoStatus::Pending,
                }],
            },
            batch(&["todo"]),
            summary("Read a.rs", &["a"]),
        ],
    );
    assert_eq!(
        tags(&chat),
        vec!["prompt go", "tools a", "plan 1", "● Read a.rs"]
    );
}

#[test]
fn compact_mode_never_merges_a_batch_with_a_failure() {
    let mut chat = ChatState::new(true);
    feed(&mut chat, &[task_started("go")]);
    feed(&mut chat, &read_batch("a", "a.rs"));
    feed(
        &mut chat,
        &[
            started("b", "run_shell_command", "Run false"),
            finished(
                "b",
                "run_shell_command",
                ToolStatus::Failed,
                output("exit 1"),
            ),
            batch(&["b"]),
        ],
    );
    feed(&mut chat, &read_batch("c", "c.rs"));
    feed(&mut chat, &[text("done"), task_finished(0)]);
    assert_eq!(
        tags(&chat),
        vec![
            "prompt go",
            "tools compact a",
            "tools compact b",
            "tools compact c",
            "text done"
        ]
    );
}

#[test]
fn compact_mode_keeps_the_last_group_live_until_its_pending_label_arrives() {
    let mut chat = ChatState::new(true);
    feed(&mut chat, &[task_started("go")]);
    feed(&mut chat, &read_batch("a", "a.rs"));
    feed(&mut chat, &[task_finished(1)]);
    assert_eq!(tags(&chat), vec!["prompt go"]);
    feed(&mut chat, &[summary("Read a.rs", &["a"])]);
    assert_eq!(tags(&chat), vec!["prompt go", "tools compact a"]);
    let Some(HistoryCell::Tools(g)) = chat.transcript().last() else {
        panic!()
    };
    assert_eq!(g.label(), Some("Read a.rs"));
}

#[test]
fn cancelling_removes_preparing_rows_and_ends_the_task_with_a_notice() {
    let mut chat = ChatState::new(false);
    feed(
        &mut chat,
        &[
            task_started("go"),
            text("Looking."),
            preparing("p", "read_file", "ReadFile"),
            CoreEvent::PreparationDiscarded {
                call_id: "p".into(),
                tool_name: "read_file".into(),
                reason: DiscardReason::Cancelled,
                provenance: Provenance::Builtin,
            },
            CoreEvent::TaskFinished {
                task_id: "t1".into(),
                stop_reason: StopReason::Cancelled,
                error: None,
                pending_summaries: 0,
            },
        ],
    );
    assert!(chat.group.is_none());
    assert!(!chat.is_running());
    assert_eq!(
        tags(&chat),
        vec![
            "prompt go",
            "text Looking.",
            &format!("{:?} Cancelled", NoticeKind::Cancelled)
        ]
    );
}

#[test]
fn a_thought_is_committed_before_the_answer_it_preceded() {
    let mut chat = ChatState::new(false);
    feed(
        &mut chat,
        &[
            task_started("go"),
            CoreEvent::ThoughtDelta {
                text: "thinking hard".into(),
            },
            text("Answer."),
            task_finished(0),
        ],
    );
    assert_eq!(tags(&chat), vec!["prompt go", "thought", "text Answer."]);
}

#[test]
fn compact_mode_lets_a_label_reach_the_header_while_the_next_answer_block_streams() {
    let mut chat = ChatState::new(true);
    feed(&mut chat, &[task_started("go")]);
    feed(&mut chat, &read_batch("a", "a.rs"));
    feed(&mut chat, &[text("The file says")]);
    assert_eq!(tags(&chat), vec!["prompt go"], "the group is still live");
    feed(
        &mut chat,
        &[summary("Read a.rs", &["a"]), text(" hello.\n\nMore.")],
    );
    assert_eq!(
        tags(&chat),
        vec!["prompt go", "tools compact a", "text The file says hello."]
    );
    let Some(HistoryCell::Tools(g)) = chat.transcript().get(1) else {
        panic!()
    };
    assert_eq!(g.label(), Some("Read a.rs"));
}

#[test]
fn the_token_counter_rises_while_text_streams_and_takes_the_providers_count_when_it_arrives() {
    let mut chat = ChatState::new(false);
    feed(&mut chat, &[task_started("go"), text("twelve bytes")]);
    assert_eq!(chat.task.as_ref().unwrap().live_tokens(), 3);
    feed(
        &mut chat,
        &[
            CoreEvent::ThoughtDelta {
                text: "abcd".into(),
            },
            text("ef"),
        ],
    );
    assert_eq!(chat.task.as_ref().unwrap().live_tokens(), 5);
    feed(
        &mut chat,
        &[CoreEvent::Usage {
            prompt_id: "main".into(),
            usage: corvid_protocol::Usage {
                output_tokens: 7,
                ..Default::default()
            },
        }],
    );
    assert_eq!(
        chat.task.as_ref().unwrap().live_tokens(),
        7,
        "the estimate is replaced"
    );
    feed(&mut chat, &[text("more")]);
    assert_eq!(chat.task.as_ref().unwrap().live_tokens(), 8);
}
