//! Session forks (issue 30): a fork starts with a copy of its parent's conversation (the
//! whole of it, or up to before an earlier turn with that turn's files restored under the
//! rewind rules), names its parent in its recording, and never writes the parent's file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::scripted::*;
use common::{run_task, test_config};
use corvid_core::agent::spawn_agent_observed;
use corvid_core::checkpoints::{CheckpointSettings, SessionCheckpoints};
use corvid_core::session::{ForkAt, ForkedFrom, Record, SessionStore, fork_session, spawn_resumed};
use corvid_protocol::{FinishReason, Message, Part, RewindScope, Role};
use pretty_assertions::assert_eq;
use serde_json::json;

fn user_texts(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m.role == Role::User)
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| match p {
            Part::Text { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// A recorded session "p1" of `cwd` with checkpoints: "first" (answered), "second" (a shell
/// command writes a.txt and c.txt), then the parent's agent is shut down.
async fn parent_session(
    home: &std::path::Path,
    cwd: &std::path::Path,
) -> (SessionStore, Arc<SessionCheckpoints>) {
    std::fs::write(cwd.join("a.txt"), "a0").unwrap();
    std::fs::write(cwd.join("c.txt"), "c0").unwrap();
    let store = SessionStore::new(home);
    let recorder = Arc::new(store.create(cwd, "p1", "main-model").unwrap());
    let provider = ScriptedProvider::new(Vec::new()).answering_when_exhausted("ok");
    let cps =
        Arc::new(SessionCheckpoints::open(home, cwd, "p1", CheckpointSettings::default()).unwrap());
    let mut config = test_config(Arc::new(provider.clone()), Vec::new());
    config.tools = corvid_tools::builtin_tools();
    config.cwd = cwd.to_owned();
    config.fs = Arc::new(corvid_tools::LocalFs);
    config.policy.checkpoints = Some(cps.clone());
    let mut handle = spawn_agent_observed(config, recorder);
    run_task(&mut handle, "first").await;
    provider.push(vec![
        call(
            "c1",
            "run_shell_command",
            json!({"command": "printf a1 > a.txt && printf c1 > c.txt"}),
        ),
        finish(FinishReason::ToolCalls),
    ]);
    run_task(&mut handle, "second").await;
    common::shut_down(handle).await;
    (store, cps)
}

#[tokio::test]
async fn a_fork_copies_the_whole_conversation_names_its_parent_and_leaves_the_parent_file_alone() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let (store, _cps) = parent_session(home.path(), cwd.path()).await;
    let parent = store.load(cwd.path(), "p1").unwrap();
    let parent_bytes = std::fs::read(&parent.path).unwrap();

    let forked = fork_session(&store, &parent, "f1", None).unwrap();
    assert_eq!(std::fs::read(&parent.path).unwrap(), parent_bytes);
    assert!(forked.restored.is_none());
    assert_eq!(
        forked.loaded.header.forked_from,
        Some(ForkedFrom {
            session_id: "p1".into(),
            turn: None
        })
    );
    // The recording says so in the words.
    let first_line = std::fs::read_to_string(&forked.loaded.path).unwrap();
    let header: serde_json::Value =
        serde_json::from_str(first_line.lines().next().unwrap()).unwrap();
    assert_eq!(header["forkedFrom"], json!({"sessionId": "p1"}));
    // The fork's next model request holds the parent's turns.
    let provider = ScriptedProvider::new(vec![answer("on the fork")]);
    let resumed = spawn_resumed(
        test_config(Arc::new(provider.clone()), Vec::new()),
        &store,
        &forked.loaded,
    )
    .unwrap();
    assert_eq!(resumed.handle.session_id(), "f1");
    let mut handle = resumed.handle;
    run_task(&mut handle, "third").await;
    common::shut_down(handle).await;
    assert_eq!(
        user_texts(&provider.requests()[0].messages),
        vec!["first", "second", "third"]
    );
    assert_eq!(std::fs::read(&parent.path).unwrap(), parent_bytes);
    // Listings show the family.
    let listed = store.list(cwd.path()).unwrap();
    let child = listed.iter().find(|s| s.id == "f1").unwrap();
    assert_eq!(child.forked_from.as_ref().unwrap().session_id, "p1");
    let original = listed.iter().find(|s| s.id == "p1").unwrap();
    assert_eq!(original.forked_from, None);
}

#[tokio::test]
async fn a_fork_from_an_earlier_turn_restores_its_files_and_keeps_the_users_later_edit() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let (store, cps) = parent_session(home.path(), cwd.path()).await;
    // The user edits c.txt after the agent's turn: a conflict, kept.
    std::fs::write(cwd.path().join("c.txt"), "mine").unwrap();
    let parent = store.load(cwd.path(), "p1").unwrap();
    let parent_bytes = std::fs::read(&parent.path).unwrap();
    let second = cps.last_turn().unwrap();
    let preview = cps.preview(second, RewindScope::Code).unwrap();
    assert!(preview.has_conflicts(), "{}", preview.to_text());

    let forked = fork_session(
        &store,
        &parent,
        "f2",
        Some(ForkAt {
            checkpoints: &cps,
            preview: &preview,
            overwrite_conflicts: false,
        }),
    )
    .unwrap();
    let report = forked.restored.unwrap();
    assert_eq!(report.restored, vec![std::path::PathBuf::from("a.txt")]);
    assert_eq!(
        report.kept_conflicts,
        vec![std::path::PathBuf::from("c.txt")]
    );
    assert_eq!(std::fs::read(cwd.path().join("a.txt")).unwrap(), b"a0");
    assert_eq!(std::fs::read(cwd.path().join("c.txt")).unwrap(), b"mine");
    assert_eq!(std::fs::read(&parent.path).unwrap(), parent_bytes);
    assert_eq!(
        forked.loaded.header.forked_from,
        Some(ForkedFrom {
            session_id: "p1".into(),
            turn: Some(second)
        })
    );
    assert_eq!(user_texts(&forked.loaded.history()), vec!["first"]);
    // The parent's conversation is whole.
    assert_eq!(
        user_texts(&store.load(cwd.path(), "p1").unwrap().history()),
        vec!["first", "second"]
    );
}

#[tokio::test]
async fn a_fork_never_overwrites_an_existing_session() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let (store, _cps) = parent_session(home.path(), cwd.path()).await;
    let parent = store.load(cwd.path(), "p1").unwrap();
    let bytes = std::fs::read(&parent.path).unwrap();
    assert!(fork_session(&store, &parent, "p1", None).is_err());
    assert_eq!(std::fs::read(&parent.path).unwrap(), bytes);
}

#[test]
fn a_recording_from_before_forks_still_loads_without_a_parent() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let dir = store.project_dir(cwd.path());
    std::fs::create_dir_all(&dir).unwrap();
    let header = json!({"record": "header", "version": 1, "session_id": "old1",
        "cwd": cwd.path(), "model": "m", "started_at_ms": 5});
    let message = json!({"record": "message", "message": Message::user_text("hi")});
    std::fs::write(dir.join("old1.jsonl"), format!("{header}\n{message}\n")).unwrap();
    let loaded = store.load(cwd.path(), "old1").unwrap();
    assert_eq!(loaded.header.forked_from, None);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert!(matches!(loaded.records[0], Record::Message { .. }));
}

/// The turn numbers and prompts `cps` can still undo.
fn undoable(cps: &SessionCheckpoints) -> Vec<(u32, String)> {
    cps.turns()
        .unwrap()
        .into_iter()
        .map(|t| (t.turn, t.prompt))
        .collect()
}

#[tokio::test]
async fn a_fork_inherits_the_parents_checkpoints_up_to_the_turn_it_forked_from() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let (store, cps) = parent_session(home.path(), cwd.path()).await;
    let parent = store.load(cwd.path(), "p1").unwrap();
    let open = |id: &str| {
        SessionCheckpoints::open(home.path(), cwd.path(), id, CheckpointSettings::default())
            .unwrap()
    };

    fork_session(&store, &parent, "whole", None).unwrap();
    assert_eq!(undoable(&open("whole")), undoable(&cps));

    let second = cps.last_turn().unwrap();
    let preview = cps.preview(second, RewindScope::Code).unwrap();
    let at = ForkAt {
        checkpoints: &cps,
        preview: &preview,
        overwrite_conflicts: false,
    };
    fork_session(&store, &parent, "early", Some(at)).unwrap();
    let early = open("early");
    assert_eq!(undoable(&early), vec![(1, "first".to_owned())]);
    assert_eq!(early.last_turn().unwrap(), 1);
    // The parent keeps its turns, and the restore the fork made, which it can undo.
    let parent_turns = undoable(&cps);
    assert_eq!(parent_turns.len(), 3, "{parent_turns:?}");
    assert_eq!(parent_turns[1], (second, "second".to_owned()));
}
