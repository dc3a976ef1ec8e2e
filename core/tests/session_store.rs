//! Session files: recording, listing, loading, torn lines, and transcript replay.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::event_types;
use common::fake_tools::NoFs;
use corvid_core::session::{Record, SessionError, SessionStore, replay_events};
use corvid_protocol::{
    CoreEvent, ImageData, Message, Part, Role, StopReason, ToolCall, ToolResult, Usage,
};
use corvid_tools::{ToolContext, ToolRegistry};
use pretty_assertions::assert_eq;
use tokio_util::sync::CancellationToken;

fn ctx(cwd: &std::path::Path) -> ToolContext {
    ToolContext {
        call_id: String::new(),
        cwd: cwd.to_path_buf(),
        fs: Arc::new(NoFs),
        cancel: CancellationToken::new(),
        shell_timeout: Duration::from_secs(1),
        shell: Default::default(),
        live_output: None,
    }
}

fn tool_task() -> Vec<Record> {
    let call = ToolCall {
        call_id: "c1".into(),
        name: "read_file".into(),
        args: serde_json::json!({"file_path": "a.txt"}),
    };
    vec![
        Record::Message {
            message: Message::user_text("read a.txt"),
        },
        Record::Message {
            message: Message {
                role: Role::Assistant,
                parts: vec![
                    Part::Thought {
                        text: "let me look".into(),
                        signature: Some("sig".into()),
                        provider_data: None,
                    },
                    Part::Text {
                        text: "Reading.".into(),
                    },
                    Part::ToolCall(call),
                ],
            },
        },
        Record::Message {
            message: Message {
                role: Role::User,
                parts: vec![Part::ToolResult(ToolResult {
                    call_id: "c1".into(),
                    name: "read_file".into(),
                    output: "hello".into(),
                    is_error: false,
                    images: Vec::new(),
                })],
            },
        },
        Record::ToolUseSummary {
            summary: "Read a.txt".into(),
            preceding_tool_use_ids: vec!["c1".into()],
        },
        Record::Usage {
            prompt_id: "main".into(),
            usage: Usage {
                input_tokens: 3,
                output_tokens: 4,
                total_tokens: 7,
                ..Usage::default()
            },
        },
        Record::Message {
            message: Message {
                role: Role::Assistant,
                parts: vec![Part::Text {
                    text: "It says hello.".into(),
                }],
            },
        },
    ]
}

#[test]
fn a_recorded_session_loads_back_with_its_history_intact() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let recorder = store.create(cwd.path(), "s-1", "gpt-test").unwrap();
    for record in tool_task() {
        recorder.append(&record).unwrap();
    }
    let loaded = store.load(cwd.path(), "s-1").unwrap();
    assert_eq!(loaded.records, tool_task());
    assert_eq!(loaded.header.model, "gpt-test");
    assert!(loaded.warnings.is_empty());
    let history = loaded.history();
    assert_eq!(history.len(), 4);
    assert_eq!(
        history[1].parts[0],
        Part::Thought {
            text: "let me look".into(),
            signature: Some("sig".into()),
            provider_data: None,
        }
    );
}

#[test]
fn a_torn_last_line_is_skipped_with_a_warning_and_cut_before_appending() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let recorder = store.create(cwd.path(), "s-torn", "m").unwrap();
    recorder
        .append(&Record::Message {
            message: Message::user_text("first"),
        })
        .unwrap();
    let path = recorder.path().to_path_buf();
    drop(recorder);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(br#"{"record":"message","message":{"role":"assis"#);
    std::fs::write(&path, bytes).unwrap();

    let loaded = store.load(cwd.path(), "s-torn").unwrap();
    assert_eq!(
        loaded.records,
        vec![Record::Message {
            message: Message::user_text("first")
        }]
    );
    assert_eq!(loaded.warnings.len(), 1);
    assert!(
        loaded.warnings[0].contains("torn last line 3"),
        "{}",
        loaded.warnings[0]
    );

    let recorder = store.reopen(&loaded).unwrap();
    recorder
        .append(&Record::Message {
            message: Message::user_text("second"),
        })
        .unwrap();
    let again = store.load(cwd.path(), "s-torn").unwrap();
    assert!(again.warnings.is_empty(), "{:?}", again.warnings);
    assert_eq!(
        again.history(),
        vec![Message::user_text("first"), Message::user_text("second")]
    );
}

#[test]
fn an_unknown_record_type_from_a_newer_version_is_skipped_with_a_warning() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let recorder = store.create(cwd.path(), "s-new", "m").unwrap();
    let path = recorder.path().to_path_buf();
    drop(recorder);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("{\"record\":\"hologram\",\"x\":1}\n");
    std::fs::write(&path, text).unwrap();
    let loaded = store.load(cwd.path(), "s-new").unwrap();
    assert!(loaded.records.is_empty());
    assert!(loaded.warnings[0].contains("hologram"));
}

#[test]
fn sessions_are_listed_newest_first_with_their_first_prompt_and_found_by_prefix() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    for (id, prompt) in [("aaa-1", "first task"), ("bbb-2", "second task")] {
        let r = store.create(cwd.path(), id, "m").unwrap();
        r.append(&Record::Message {
            message: Message::user_text(prompt),
        })
        .unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
    let listed = store.list(cwd.path()).unwrap();
    let ids: Vec<_> = listed
        .iter()
        .map(|s| (s.id.as_str(), s.first_prompt.as_str()))
        .collect();
    assert_eq!(ids, vec![("bbb-2", "second task"), ("aaa-1", "first task")]);
    assert_eq!(
        store.load(cwd.path(), "aaa").unwrap().header.session_id,
        "aaa-1"
    );
    assert_eq!(
        store.latest(cwd.path()).unwrap().unwrap().header.session_id,
        "bbb-2"
    );
    store.create(cwd.path(), "ccc-empty", "m").unwrap();
    let listed_again: Vec<_> = store
        .list(cwd.path())
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(
        listed_again,
        vec!["bbb-2", "aaa-1"],
        "a session without records is not listed"
    );
    let other = tempfile::tempdir().unwrap();
    assert!(store.list(other.path()).unwrap().is_empty());
    assert!(matches!(
        store.load(other.path(), "aaa"),
        Err(SessionError::NotFound { .. })
    ));
}

#[test]
fn replay_turns_a_recording_into_finished_cards_summaries_and_task_boundaries() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let recorder = store.create(cwd.path(), "s-replay", "m").unwrap();
    for record in tool_task() {
        recorder.append(&record).unwrap();
    }
    let loaded = store.load(cwd.path(), "s-replay").unwrap();
    let events = replay_events(&loaded, &ToolRegistry::default(), &ctx(cwd.path()));
    let kinds = event_types(&events);
    assert_eq!(
        kinds,
        vec![
            "task_started",
            "thought_delta",
            "text_delta",
            "tool_started",
            "tool_finished",
            "batch_completed",
            "tool_use_summary",
            "usage",
            "text_delta",
            "task_finished"
        ]
    );
    assert!(matches!(
        events.last(),
        Some(CoreEvent::TaskFinished {
            stop_reason: StopReason::EndTurn,
            ..
        })
    ));
    assert!(
        events
            .iter()
            .all(|e| !matches!(e, CoreEvent::ToolPreparing { .. }))
    );
}

#[test]
fn a_tool_results_images_are_recorded_replayed_on_its_card_and_old_records_still_load() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let recorder = store.create(cwd.path(), "s-images", "m").unwrap();
    let image = ImageData {
        media_type: "image/png".into(),
        data_base64: "iVBORw==".into(),
    };
    let mut records = tool_task();
    let Record::Message { message } = &mut records[2] else {
        panic!("the third record is the tool result");
    };
    let Part::ToolResult(result) = &mut message.parts[0] else {
        panic!("the third record is the tool result");
    };
    result.images = vec![image.clone()];
    for record in &records {
        recorder.append(record).unwrap();
    }
    let loaded = store.load(cwd.path(), "s-images").unwrap();
    let kept = loaded.history().iter().find_map(|m| match &m.parts[0] {
        Part::ToolResult(r) => Some(r.images.clone()),
        _ => None,
    });
    assert_eq!(kept, Some(vec![image.clone()]));
    let shown: Vec<Vec<ImageData>> =
        replay_events(&loaded, &ToolRegistry::default(), &ctx(cwd.path()))
            .into_iter()
            .filter_map(|e| match e {
                CoreEvent::ToolFinished { output, .. } => Some(output.images),
                _ => None,
            })
            .collect();
    assert_eq!(shown, vec![vec![image]]);

    let old: ToolResult = serde_json::from_value(serde_json::json!(
        {"call_id": "c1", "name": "read_file", "output": "hello"}
    ))
    .unwrap();
    assert_eq!(old.images, Vec::new());
}
