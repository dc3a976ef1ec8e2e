//! How long checkpoints live (issue 26): as long as their session's recording. A journal whose
//! recording is gone is freed, with the content only it needed, by the next budget pass,
//! `checkpoints prune` and `SessionStore::delete`; content a live session still needs stays,
//! and a running session's journal is never taken for an orphan.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::Arc;

use common::scripted::ScriptedProvider;
use common::{run_task, test_config};
use corvid_core::checkpoints::{self, CheckpointSettings, SessionCheckpoints, SessionJournal};
use corvid_core::session::{Record, SessionError, SessionStore, spawn_resumed};
use corvid_protocol::{Message, RewindScope};
use pretty_assertions::assert_eq;

/// 20,000 bytes no compression shrinks, different for each `seed`.
fn noise(seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..20_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

fn open(home: &Path, ws: &Path, id: &str) -> Arc<SessionCheckpoints> {
    Arc::new(SessionCheckpoints::open(home, ws, id, CheckpointSettings::default()).unwrap())
}

/// A session recorded under `id` with one prompt (the recorder's lock released, as after the
/// session ended).
fn record(store: &SessionStore, ws: &Path, id: &str) {
    let recorder = store.create(ws, id, "m").unwrap();
    recorder
        .append(&Record::Message {
            message: Message::user_text("hello"),
        })
        .unwrap();
}

/// One turn of `cps` during which `change` runs.
async fn turn(cps: &Arc<SessionCheckpoints>, change: impl FnOnce()) {
    assert!(cps.turn_started("a turn", 0).await.is_empty());
    change();
    assert!(cps.turn_finished().await.is_empty());
}

fn journals(home: &Path, ws: &Path) -> Vec<SessionJournal> {
    checkpoints::describe_project(home, ws).unwrap().sessions
}

fn stored(home: &Path, ws: &Path) -> u64 {
    checkpoints::describe_project(home, ws)
        .unwrap()
        .stored_bytes
}

#[tokio::test]
async fn a_deleted_sessions_checkpoints_are_freed_by_the_next_turn_and_shared_content_stays() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let (home, ws) = (home.path(), ws.path());
    let store = SessionStore::new(home);
    std::fs::write(ws.join("shared.bin"), noise(1)).unwrap();
    record(&store, ws, "gone");
    let gone = open(home, ws, "gone");
    turn(&gone, || {
        std::fs::write(ws.join("only-gone.bin"), noise(2)).unwrap()
    })
    .await;
    drop(gone);
    std::fs::remove_file(ws.join("only-gone.bin")).unwrap();

    record(&store, ws, "kept");
    let kept = open(home, ws, "kept");
    turn(&kept, || {
        std::fs::write(ws.join("kept.txt"), "kept").unwrap()
    })
    .await;
    assert_eq!(
        journals(home, ws),
        vec![
            SessionJournal {
                id: "gone".into(),
                turns: 1,
                orphaned: false
            },
            SessionJournal {
                id: "kept".into(),
                turns: 1,
                orphaned: false
            },
        ]
    );

    // The user deletes the recording by hand: the journal is listed as orphaned...
    std::fs::remove_file(store.project_dir(ws).join("gone.jsonl")).unwrap();
    assert!(journals(home, ws)[0].orphaned);
    let before = stored(home, ws);
    // ...and the next turn's budget pass frees it and what only it needed.
    turn(&kept, || {
        std::fs::write(ws.join("kept.txt"), "kept 2").unwrap()
    })
    .await;
    assert_eq!(
        journals(home, ws),
        vec![SessionJournal {
            id: "kept".into(),
            turns: 2,
            orphaned: false
        }]
    );
    assert!(
        // Its 20,000 bytes, less what the new turn stored.
        stored(home, ws) + 19_000 <= before,
        "only-gone.bin's content is freed: {} then {}",
        before,
        stored(home, ws)
    );

    // What the live session shares with the deleted one is still there to restore.
    std::fs::remove_file(ws.join("shared.bin")).unwrap();
    let preview = kept.preview(1, RewindScope::Code).unwrap();
    kept.rewind(&preview, true, 0).unwrap();
    assert_eq!(std::fs::read(ws.join("shared.bin")).unwrap(), noise(1));
    assert!(!ws.join("kept.txt").exists());
}

#[tokio::test]
async fn a_running_sessions_journal_is_never_taken_for_an_orphan_even_without_a_recording() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let (home, ws) = (home.path(), ws.path());
    // Not recorded (the recording could not be created), but running.
    let live = open(home, ws, "live");
    turn(&live, || {
        std::fs::write(ws.join("a.bin"), noise(3)).unwrap()
    })
    .await;
    assert!(!journals(home, ws)[0].orphaned);
    let notices = checkpoints::prune_project(home, ws, u64::MAX).unwrap();
    assert!(notices.is_empty(), "{notices:?}");
    assert_eq!(live.turns().unwrap().len(), 1);

    drop(live);
    assert!(
        journals(home, ws)[0].orphaned,
        "it ended: nobody can resume it"
    );
    let notices = checkpoints::prune_project(home, ws, u64::MAX).unwrap();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(notices[0].contains("1 session(s) whose recording is gone"));
    assert!(journals(home, ws).is_empty());
}

#[tokio::test]
async fn deleting_a_session_removes_its_recording_and_checkpoints_and_refuses_what_it_must() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let (home, ws) = (home.path(), ws.path());
    let store = SessionStore::new(home);
    record(&store, ws, "abc-1");
    let cps = open(home, ws, "abc-1");
    turn(&cps, || std::fs::write(ws.join("a.bin"), noise(4)).unwrap()).await;
    drop(cps);

    let err = store.delete(ws, "abc").unwrap_err();
    assert!(matches!(err, SessionError::NotFullId { .. }), "{err}");
    assert!(matches!(
        store.delete(ws, "../abc-1").unwrap_err(),
        SessionError::InvalidId { .. }
    ));
    assert!(matches!(
        store.delete(ws, "nope").unwrap_err(),
        SessionError::NotFound { .. }
    ));
    let running = store.load(ws, "abc-1").unwrap();
    let held = store.reopen(&running).unwrap();
    assert!(matches!(
        store.delete(ws, "abc-1").unwrap_err(),
        SessionError::InUse { .. }
    ));
    drop(held);
    assert_eq!(
        journals(home, ws).len(),
        1,
        "nothing refused deleted anything"
    );

    let notice = store.delete(ws, "abc-1").unwrap().unwrap();
    assert!(notice.contains("1 session(s)"), "{notice}");
    assert!(!store.project_dir(ws).join("abc-1.jsonl").exists());
    assert!(journals(home, ws).is_empty());
}

#[test]
fn deleting_a_session_of_a_project_without_checkpoints_creates_no_store() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    record(&store, ws.path(), "s1");
    assert_eq!(store.delete(ws.path(), "s1").unwrap(), None);
    assert!(!home.path().join("checkpoints").exists());
}

#[tokio::test]
async fn a_resumed_session_goes_on_with_its_own_journal_whatever_id_its_config_was_made_with() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let (home, ws) = (home.path(), ws.path());
    let store = SessionStore::new(home);
    record(&store, ws, "r1");
    let before = open(home, ws, "r1");
    turn(&before, || {
        std::fs::write(ws.join("a.txt"), "from turn 1").unwrap()
    })
    .await;
    drop(before);

    // Front ends make the config (and open its checkpoints) before they know which recording
    // the session goes on with.
    let provider = ScriptedProvider::new(Vec::new()).answering_when_exhausted("ok");
    let mut config = test_config(Arc::new(provider), Vec::new());
    config.cwd = ws.to_owned();
    config.policy.checkpoints = Some(open(home, ws, "fresh-id"));
    let loaded = store.load(ws, "r1").unwrap();
    let mut handle = spawn_resumed(config, &store, &loaded).unwrap().handle;
    let cps = handle.checkpoints().unwrap();
    assert_eq!(
        cps.last_turn().unwrap(),
        1,
        "the turn from before the resume"
    );
    run_task(&mut handle, "after the resume").await;
    assert_eq!(cps.last_turn().unwrap(), 2, "turn numbers go on counting");
    let ids: Vec<String> = journals(home, ws).into_iter().map(|j| j.id).collect();
    assert_eq!(ids, vec!["r1"], "no journal under the config's own id");

    let preview = cps.preview(1, RewindScope::Code).unwrap();
    cps.rewind(&preview, false, 0).unwrap();
    assert!(
        !ws.join("a.txt").exists(),
        "a turn from before the resume is undone"
    );
    common::shut_down(handle).await;
}

#[tokio::test]
async fn a_running_session_whose_journal_was_pruned_away_starts_a_new_one_on_its_next_turn() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let (home, ws) = (home.path(), ws.path());
    let store = SessionStore::new(home);
    record(&store, ws, "s1");
    let cps = open(home, ws, "s1");
    turn(&cps, || std::fs::write(ws.join("a.txt"), "1").unwrap()).await;
    let journal = home
        .join("checkpoints")
        .join(checkpoints::project_key(ws))
        .join("sessions")
        .join("s1.turns");
    // What the budget does to a session left without checkpoints, while it runs.
    std::fs::remove_file(&journal).unwrap();
    turn(&cps, || std::fs::write(ws.join("a.txt"), "2").unwrap()).await;
    assert!(
        journal.exists(),
        "the held-open file was not written into the void"
    );
    assert_eq!(cps.turns().unwrap().len(), 1);
}
