//! Checkpoints and the session around them (issue 26): a conversation rewind is recorded so a
//! resumed session is the rewound one, the store keeps to its budget (oldest sessions go
//! first, with a notice), and the settings keys.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::Arc;

use common::scripted::*;
use common::{read_until, run_task, test_config};
use corvid_core::agent::spawn_agent_observed;
use corvid_core::checkpoints::{self, CheckpointSettings, SessionCheckpoints};
use corvid_core::session::{Record, SessionStore, spawn_resumed};
use corvid_protocol::{CoreEvent, FinishReason, Message, Op, Part, RewindScope, Role};
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

#[tokio::test]
async fn a_conversation_rewind_is_recorded_and_the_resumed_session_matches_it() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("a.txt"), "a0").unwrap();
    let store = SessionStore::new(home.path());
    let recorder = Arc::new(store.create(cwd.path(), "r1", "main-model").unwrap());
    let provider = ScriptedProvider::new(Vec::new()).answering_when_exhausted("ok");
    let cps = Arc::new(
        SessionCheckpoints::open(home.path(), cwd.path(), "r1", CheckpointSettings::default())
            .unwrap(),
    );
    let mut config = test_config(Arc::new(provider.clone()), Vec::new());
    config.tools = corvid_tools::builtin_tools();
    config.cwd = cwd.path().to_owned();
    config.fs = Arc::new(corvid_tools::LocalFs);
    config.policy.checkpoints = Some(cps.clone());
    let mut handle = spawn_agent_observed(config, recorder);
    run_task(&mut handle, "first").await;
    provider.push(vec![
        call(
            "c1",
            "run_shell_command",
            json!({"command": "printf a1 > a.txt"}),
        ),
        finish(FinishReason::ToolCalls),
    ]);
    run_task(&mut handle, "second").await;
    let second = cps.last_turn().unwrap();
    handle
        .submit(Op::Rewind {
            turn: second,
            scope: RewindScope::Both,
            overwrite_conflicts: false,
        })
        .unwrap();
    let seen = read_until(&mut handle, |e| matches!(e, CoreEvent::Rewound { .. })).await;
    assert!(
        matches!(seen.last(), Some(CoreEvent::Rewound { error: None, .. })),
        "{seen:?}"
    );
    let live_before = provider.requests().len();
    run_task(&mut handle, "third").await;
    let live = provider.requests()[live_before].messages.clone();
    common::shut_down(handle).await;
    assert_eq!(std::fs::read(cwd.path().join("a.txt")).unwrap(), b"a0");

    let loaded = store.load(cwd.path(), "r1").unwrap();
    assert!(
        loaded
            .records
            .iter()
            .any(|r| matches!(r, Record::HistoryRewound { kept_messages: 2 })),
        "{:?}",
        loaded.records
    );
    // The recording's history is the one the live session had before "third" was answered.
    let resumed_history = loaded.history();
    assert_eq!(user_texts(&resumed_history), vec!["first", "third"]);
    assert_eq!(user_texts(&live), vec!["first", "third"]);
    let provider2 = ScriptedProvider::new(vec![answer("four")]);
    let resumed = spawn_resumed(
        test_config(Arc::new(provider2.clone()), Vec::new()),
        &store,
        &loaded,
    )
    .unwrap();
    let transcript_prompts: Vec<String> = resumed
        .transcript
        .iter()
        .filter_map(|e| match e {
            CoreEvent::TaskStarted { prompt, .. } => Some(prompt.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(transcript_prompts, vec!["first", "third"]);
    let mut handle = resumed.handle;
    run_task(&mut handle, "fourth").await;
    assert_eq!(
        user_texts(&provider2.requests()[0].messages),
        vec!["first", "third", "fourth"]
    );
}

/// 2,000 bytes no compression shrinks, different for each `seed`.
fn noise(seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..2_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

#[tokio::test]
async fn the_oldest_sessions_checkpoints_are_pruned_first_with_a_notice() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let settings = CheckpointSettings {
        max_bytes: 5_000,
        ..CheckpointSettings::default()
    };
    let old = Arc::new(SessionCheckpoints::open(home.path(), ws.path(), "old", settings).unwrap());
    std::fs::write(ws.path().join("a.bin"), noise(1)).unwrap();
    assert!(old.turn_started("old turn", 0).await.is_empty());
    std::fs::write(ws.path().join("a.bin"), noise(2)).unwrap();
    assert!(old.turn_finished().await.is_empty());
    assert_eq!(old.turns().unwrap().len(), 1);

    let new = Arc::new(SessionCheckpoints::open(home.path(), ws.path(), "new", settings).unwrap());
    std::fs::write(ws.path().join("a.bin"), noise(3)).unwrap();
    assert!(new.turn_started("new turn", 0).await.is_empty());
    std::fs::write(ws.path().join("a.bin"), noise(4)).unwrap();
    let notices = new.turn_finished().await;
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(notices[0].contains("checkpoints.maxBytes"), "{notices:?}");
    assert!(notices[0].contains("1 session(s) entirely"), "{notices:?}");
    // The old session's turns are gone; the newest state is always kept.
    assert!(old.turns().unwrap().is_empty());
    let listed = checkpoints::describe_project(home.path(), ws.path()).unwrap();
    assert!(listed.stored_bytes <= 5_000, "{listed:?}");
    assert_eq!(
        listed
            .sessions
            .iter()
            .map(|s| s.id.as_str())
            .collect::<Vec<_>>(),
        vec!["new"]
    );
}

#[tokio::test]
async fn a_checkpoint_that_fails_warns_and_the_turn_goes_on() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let cps = Arc::new(
        SessionCheckpoints::open(home.path(), ws.path(), "f1", CheckpointSettings::default())
            .unwrap(),
    );
    // The store's folder made unusable: every snapshot fails.
    let store_dir = home.path().join("checkpoints");
    std::fs::remove_dir_all(&store_dir).unwrap();
    std::fs::write(&store_dir, "not a folder").unwrap();
    let provider = ScriptedProvider::new(vec![answer("fine")]);
    let mut config = test_config(Arc::new(provider.clone()), Vec::new());
    config.cwd = ws.path().to_owned();
    config.policy.checkpoints = Some(cps);
    let mut handle = corvid_core::agent::spawn_agent(config);
    let events = run_task(&mut handle, "go").await;
    assert!(
        events.iter().any(|e| matches!(e, CoreEvent::Warning { message } if message.contains("could not take a checkpoint"))),
        "{events:#?}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, CoreEvent::TextDelta { text } if text == "fine"))
    );
    assert_eq!(provider.requests().len(), 1);
}

#[test]
fn checkpoints_are_off_in_the_home_folder_and_when_disabled() {
    let home = tempfile::tempdir().unwrap();
    let off = CheckpointSettings {
        enabled: false,
        ..CheckpointSettings::default()
    };
    let ws = tempfile::tempdir().unwrap();
    let err = SessionCheckpoints::open(home.path(), ws.path(), "x", off).unwrap_err();
    assert!(err.to_string().contains("checkpoints.enabled"), "{err}");
    let err =
        SessionCheckpoints::open(home.path(), Path::new("/"), "x", Default::default()).unwrap_err();
    assert!(err.to_string().contains("root"), "{err}");
}

#[test]
fn the_store_folder_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let cps = SessionCheckpoints::open(home.path(), ws.path(), "p", Default::default()).unwrap();
    drop(cps);
    let mode = std::fs::metadata(home.path().join("checkpoints"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
}

#[test]
fn checkpoint_settings_come_from_the_users_file_and_a_project_cannot_change_them() {
    use corvid_core::settings::{Overrides, SettingsFiles, Trust, load_from};
    let dir = tempfile::tempdir().unwrap();
    let files = SettingsFiles {
        user: Some(dir.path().join("home").join("settings.json")),
        project: Some(dir.path().join("p").join(".corvid").join("settings.json")),
    };
    for (path, text) in [
        (
            files.user.as_ref().unwrap(),
            r#"{"checkpoints": {"maxFileBytes": 1000, "maxBytes": 5000}}"#,
        ),
        (
            files.project.as_ref().unwrap(),
            r#"{"checkpoints": {"enabled": false}}"#,
        ),
    ] {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let loaded = load_from(&files, Trust::Trusted, |_| None, &Overrides::default()).unwrap();
    assert_eq!(
        loaded.settings.checkpoints,
        CheckpointSettings {
            enabled: true,
            max_file_bytes: 1000,
            max_bytes: 5000,
        }
    );
    assert!(
        loaded.warnings.iter().any(|w| w.contains("checkpoints")),
        "{:?}",
        loaded.warnings
    );
}
