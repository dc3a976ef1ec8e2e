//! Session recording through the agent: complete content and summaries are written as they
//! happen, preparation never is, and a resumed agent sends the full earlier history.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::fake_tools::{ExecLog, FakeTool};
use common::scripted::*;
use common::{event_types, run_task, test_config};
use corvid_core::agent::spawn_agent_observed;
use corvid_core::session::{Record, SessionStore, spawn_resumed};
use corvid_core::summary::SummaryConfig;
use corvid_protocol::{CoreEvent, FinishReason, Part, Role, SUMMARY_PROMPT_ID};
use pretty_assertions::assert_eq;
use serde_json::json;

fn kinds(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .map(|r| match r {
            Record::Message { message } => {
                let parts: Vec<&str> = message
                    .parts
                    .iter()
                    .map(|p| match p {
                        Part::Text { .. } => "text",
                        Part::Thought { .. } => "thought",
                        Part::ToolCall(_) => "tool_call",
                        Part::ToolResult(_) => "tool_result",
                        Part::Image(_) => "image",
                        Part::Hosted(_) => "hosted",
                    })
                    .collect();
                format!("{:?} {}", message.role, parts.join("+"))
            }
            Record::ToolUseSummary {
                summary,
                preceding_tool_use_ids,
            } => {
                format!("summary {summary} {}", preceding_tool_use_ids.join(","))
            }
            Record::Usage { prompt_id, .. } => format!("usage {prompt_id}"),
            Record::ModelChange { from, to } => format!("model {from}->{to}"),
            Record::Title { title } => format!("title {title}"),
            Record::ApprovalModeChange { mode } => format!("mode {}", mode.as_str()),
            Record::ReasoningEffortChange { effort } => format!("effort {}", effort.as_str()),
            Record::CallStarted { call_id } => format!("started {call_id}"),
            Record::CallRejected { call_id } => format!("rejected {call_id}"),
            Record::HistoryCleared => "cleared".into(),
            Record::HistoryRewound { kept_messages } => format!("rewound {kept_messages}"),
            Record::SubagentMessage {
                parent_call_id,
                message,
            } => format!("subagent {parent_call_id} {:?}", message.role),
            Record::Compacted { kept_messages, .. } => format!("compacted {kept_messages}"),
            Record::Header(_) => "header".into(),
        })
        .collect()
}

#[tokio::test]
async fn a_tool_task_is_recorded_with_its_summary_and_resumes_with_the_full_history() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let log = ExecLog::default();
    let main = ScriptedProvider::new(vec![
        vec![
            thought("look first"),
            text("Reading."),
            preparing("c1", "read"),
            call("c1", "read", json!({"tag": "a"})),
            usage(10, 5),
            finish(FinishReason::ToolCalls),
        ],
        answer("All read."),
    ]);
    let fast = ScriptedProvider::new(vec![vec![
        text("Read the file"),
        usage(7, 3),
        finish(FinishReason::Stop),
    ]]);
    let mut config = test_config(
        Arc::new(main.clone()),
        vec![FakeTool::reader("read", 1, &log)],
    );
    config.summaries = Some(SummaryConfig {
        provider: Arc::new(fast),
        model: "fast".into(),
    });
    let recorder = Arc::new(store.create(cwd.path(), "rec-1", "main-model").unwrap());
    let mut handle = spawn_agent_observed(config, recorder);
    let mut events = run_task(&mut handle, "read it").await;
    while !events.iter().any(|e| {
        matches!(
            e,
            CoreEvent::ToolUseSummary { .. } | CoreEvent::SummaryDropped { .. }
        )
    }) {
        events.push(handle.next_event().await.unwrap());
    }
    // The summary's usage is emitted just before the summary, which settles its batch.
    // The recording is locked while its agent lives.
    common::shut_down(handle).await;

    let loaded = store.load(cwd.path(), "rec-1").unwrap();
    // The summary is written in the background while the next turn runs, so its two records
    // (usage, then the summary) may land anywhere after the batch's results, but together.
    let mut kinds = kinds(&loaded.records);
    let summary_usage = format!("usage {SUMMARY_PROMPT_ID}");
    let at = kinds.iter().position(|k| *k == summary_usage).unwrap();
    let summary: Vec<String> = kinds.drain(at..at + 2).collect();
    assert_eq!(
        summary,
        [summary_usage.as_str(), "summary Read the file c1"]
    );
    let results = kinds.iter().position(|k| k == "User tool_result").unwrap();
    assert!(
        at > results,
        "the summary was recorded before the results it labels"
    );
    assert_eq!(
        kinds,
        vec![
            "User text",
            "usage main",
            "Assistant thought+text+tool_call",
            "started c1",
            "User tool_result",
            "usage main",
            "Assistant text",
        ]
    );
    let raw = std::fs::read_to_string(&loaded.path).unwrap();
    assert!(
        !raw.contains("preparing"),
        "preparation must never be recorded: {raw}"
    );

    // Resume: a new agent with the recorded history sends it all with the next prompt.
    let resumed_main = ScriptedProvider::new(vec![answer("Still here.")]);
    let config = test_config(
        Arc::new(resumed_main.clone()),
        vec![FakeTool::reader("read", 1, &log)],
    );
    let resumed = spawn_resumed(config, &store, &loaded).unwrap();
    // The transcript follows the recording: the summary and its usage where they were written.
    let mut transcript = event_types(&resumed.transcript);
    let label = transcript
        .iter()
        .position(|e| e == "tool_use_summary")
        .unwrap();
    let batch = transcript
        .iter()
        .position(|e| e == "batch_completed")
        .unwrap();
    assert!(label > batch + 1 && transcript[label - 1] == "usage");
    transcript.drain(label - 1..=label);
    assert_eq!(
        transcript,
        vec![
            "task_started",
            "usage",
            "thought_delta",
            "text_delta",
            "tool_started",
            "tool_finished",
            "batch_completed",
            "usage",
            "text_delta",
            "task_finished"
        ]
    );
    let mut handle = resumed.handle;
    assert_eq!(handle.session_id(), "rec-1");
    run_task(&mut handle, "and now?").await;
    let sent = &resumed_main.requests()[0].messages;
    let roles: Vec<Role> = sent.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        vec![
            Role::User,
            Role::Assistant,
            Role::User,
            Role::Assistant,
            Role::User
        ]
    );
    assert_eq!(sent[..4], loaded.history()[..]);
    assert!(matches!(&sent[1].parts[0], Part::Thought { .. }));
    assert_eq!(store.load(cwd.path(), "rec-1").unwrap().history().len(), 6);
}
