//! Session files under stress: a full disk, damaged lines, private permissions, a second
//! writer, and calls interrupted by a crash (issue 15, findings 6 and 10).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use common::fake_tools::{ExecLog, FakeTool};
use common::scripted::*;
use common::{collect_task, prompt, run_task, test_config};
use corvid_core::agent::spawn_agent_observed;
use corvid_core::session::{
    INTERRUPTED_CALL, Record, RecordedSecrets, SessionError, SessionHealth, SessionStore,
    UNSTARTED_CALL, spawn_recorded, spawn_resumed,
};
use corvid_protocol::{CoreEvent, FinishReason, Message, Part, Role, ToolCall, ToolResult};
use pretty_assertions::assert_eq;
use serde_json::json;

/// A small tmpfs mounted for one test, so the disk really fills up. Needs root (CI runs as
/// root); elsewhere the test fails saying so instead of passing without having run.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .expect("cannot run `mount`");
        assert!(
            status.success(),
            "this test mounts a small tmpfs to fill the disk and needs root (as in CI); \
             run it as root"
        );
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a filler file until the disk is full.
    fn fill(&self) -> PathBuf {
        let filler = self.path().join("filler");
        let mut file = std::fs::File::create(&filler).unwrap();
        let chunk = vec![b'x'; 4096];
        while file.write_all(&chunk).is_ok() {}
        filler
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

fn warnings(events: &[CoreEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            CoreEvent::Warning { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn failed_append_keeps_the_session_resumable() {
    let disk = SmallDisk::mount("256k");
    let home = disk.path().join("home");
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(&home);
    let recorder = Arc::new(store.create(cwd.path(), "full", "main-model").unwrap());
    let filler = disk.fill();
    // The prompt still fits in the file's last page; the long answer does not.
    let long_answer = "a long answer ".repeat(1000);
    let provider = ScriptedProvider::new(vec![answer(&long_answer), answer("short")]);
    let config = test_config(Arc::new(provider), Vec::new());
    let mut handle = spawn_agent_observed(config, recorder);
    prompt(&handle, "go");
    let mut events = collect_task(&mut handle).await;
    prompt(&handle, "again");
    events.extend(collect_task(&mut handle).await);

    let told = warnings(&events);
    assert_eq!(
        told.len(),
        1,
        "recording stopped is told exactly once: {told:?}"
    );
    assert!(
        told[0].starts_with("session recording stopped: cannot write session file")
            && told[0].contains("No space left on device"),
        "{}",
        told[0]
    );
    let path = store.project_dir(cwd.path()).join("full.jsonl");
    let raw = std::fs::read_to_string(&path).unwrap();
    assert!(
        raw.ends_with('\n'),
        "the file ends on a complete record: {raw:?}"
    );
    common::shut_down(handle).await;

    std::fs::remove_file(filler).unwrap();
    let loaded = store.load(cwd.path(), "full").unwrap();
    assert_eq!(loaded.warnings, Vec::<String>::new());
    assert_eq!(loaded.history(), vec![Message::user_text("go")]);
    let provider = ScriptedProvider::new(vec![answer("resumed")]);
    let resumed = spawn_resumed(
        test_config(Arc::new(provider.clone()), Vec::new()),
        &store,
        &loaded,
    )
    .unwrap();
    let mut handle = resumed.handle;
    prompt(&handle, "after");
    collect_task(&mut handle).await;
    assert_eq!(
        provider.requests()[0].messages,
        vec![Message::user_text("go"), Message::user_text("after")]
    );
}

fn record_line(record: &Record) -> String {
    format!("{}\n", serde_json::to_string(record).unwrap())
}

#[test]
fn a_bad_middle_line_is_skipped_with_a_warning() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let recorder = store.create(cwd.path(), "s-bad", "m").unwrap();
    let path = recorder.path().to_path_buf();
    drop(recorder);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&record_line(&Record::Message {
        message: Message::user_text("first"),
    }));
    // What an older corvid left after a failed append: half a record, the next one glued on.
    text.push_str(r#"{"record":"message","message":{"role":"assist"#);
    text.push_str(&record_line(&Record::Message {
        message: Message::user_text("glued"),
    }));
    text.push_str(&record_line(&Record::Message {
        message: Message::user_text("second"),
    }));
    std::fs::write(&path, text).unwrap();

    let loaded = store.load(cwd.path(), "s-bad").unwrap();
    assert_eq!(
        loaded.history(),
        vec![Message::user_text("first"), Message::user_text("second")]
    );
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    assert!(
        loaded.warnings[0].starts_with(&format!("{}:3: skipped a damaged line (", path.display())),
        "{}",
        loaded.warnings[0]
    );
}

#[test]
fn a_file_without_a_readable_header_is_an_error_naming_file_and_line() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let dir = store.project_dir(cwd.path());
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s-nohead.jsonl");
    std::fs::write(&path, "not json\n").unwrap();
    let err = store.load(cwd.path(), "s-nohead").unwrap_err();
    assert!(
        matches!(err, SessionError::Corrupt { line: 1, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains(&path.display().to_string()));
}

#[test]
fn corrupt_sessions_are_listed_with_a_marker() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let recorder = store.create(cwd.path(), "damaged", "m").unwrap();
    recorder
        .append(&Record::Message {
            message: Message::user_text("hello"),
        })
        .unwrap();
    let damaged_path = recorder.path().to_path_buf();
    drop(recorder);
    let mut text = std::fs::read_to_string(&damaged_path).unwrap();
    text.push_str("{\"record\":\"message\" garbage\n");
    std::fs::write(&damaged_path, text).unwrap();
    let unreadable_path = store.project_dir(cwd.path()).join("unreadable.jsonl");
    std::fs::write(&unreadable_path, "garbage\n").unwrap();
    // A crash before the header was written leaves an empty file: nothing to list.
    std::fs::write(store.project_dir(cwd.path()).join("empty.jsonl"), "").unwrap();

    let mut listed: Vec<(String, String)> = store
        .list(cwd.path())
        .unwrap()
        .into_iter()
        .map(|s| {
            let health = match s.health {
                SessionHealth::Intact => "intact".to_owned(),
                SessionHealth::Damaged { warnings } => format!("damaged {}", warnings.len()),
                SessionHealth::Unreadable { reason } => {
                    assert!(reason.contains("corrupt at line 1"), "{reason}");
                    "unreadable".to_owned()
                }
            };
            (s.id, health)
        })
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        vec![
            ("damaged".to_owned(), "damaged 1".to_owned()),
            ("unreadable".to_owned(), "unreadable".to_owned()),
        ]
    );
    // `--continue` considers the damaged session: it is the latest resumable one.
    let latest = store.latest(cwd.path()).unwrap().unwrap();
    assert_eq!(latest.header.session_id, "damaged");
    assert_eq!(latest.history(), vec![Message::user_text("hello")]);
}

#[cfg(unix)]
#[test]
fn session_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let recorder = store.create(cwd.path(), "private", "m").unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let project = store.project_dir(cwd.path());
    assert_eq!(
        [
            mode(&home.path().join("sessions")),
            mode(&project),
            mode(recorder.path())
        ],
        [0o700, 0o700, 0o600]
    );

    // A file and folder left readable by an older corvid are tightened when resumed.
    let path = recorder.path().to_path_buf();
    drop(recorder);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let loaded = store.load(cwd.path(), "private").unwrap();
    let _reopened = store.reopen(&loaded).unwrap();
    assert_eq!(mode(&path), 0o600);
}

#[test]
fn a_session_in_use_cannot_be_appended_by_a_second_process() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let first = store.create(cwd.path(), "busy", "m").unwrap();
    first
        .append(&Record::Message {
            message: Message::user_text("hi"),
        })
        .unwrap();
    let loaded = store.load(cwd.path(), "busy").unwrap();
    // The lock is on the open file, as another process would take it (flock).
    let err = store.reopen(&loaded).unwrap_err();
    assert!(matches!(err, SessionError::InUse { .. }), "{err:?}");
    assert!(
        err.to_string()
            .starts_with("the session busy is in use by another corvid process"),
        "{err}"
    );
    let resumed = spawn_resumed(
        test_config(Arc::new(ScriptedProvider::new(Vec::new())), Vec::new()),
        &store,
        &loaded,
    );
    assert!(matches!(resumed, Err(SessionError::InUse { .. })));
    // Once the first writer is gone the session can be resumed.
    drop(first);
    store.reopen(&loaded).unwrap();
}

fn assistant_calling(ids: &[&str]) -> Message {
    Message {
        role: Role::Assistant,
        parts: ids
            .iter()
            .map(|id| {
                Part::ToolCall(ToolCall {
                    call_id: (*id).into(),
                    name: "run".into(),
                    args: json!({}),
                })
            })
            .collect(),
    }
}

#[tokio::test]
async fn a_call_interrupted_by_a_crash_is_told_to_the_model_as_interrupted_on_resume() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let recorder = store.create(cwd.path(), "killed", "main-model").unwrap();
    // What `kill -9` during a batch leaves: the calls, one of them started, no results.
    for record in [
        Record::Message {
            message: Message::user_text("deploy"),
        },
        Record::Message {
            message: assistant_calling(&["ran", "queued"]),
        },
        Record::CallStarted {
            call_id: "ran".into(),
        },
    ] {
        recorder.append(&record).unwrap();
    }
    drop(recorder);

    let loaded = store.load(cwd.path(), "killed").unwrap();
    let provider = ScriptedProvider::new(vec![answer("ok")]);
    let log = ExecLog::default();
    let config = test_config(
        Arc::new(provider.clone()),
        vec![FakeTool::writer("run", 1, &log)],
    );
    let resumed = spawn_resumed(config, &store, &loaded).unwrap();
    let mut handle = resumed.handle;
    prompt(&handle, "what happened?");
    collect_task(&mut handle).await;
    let result = |id: &str, output: &str| {
        Part::ToolResult(ToolResult {
            call_id: id.into(),
            name: "run".into(),
            output: output.into(),
            is_error: true,
            images: Vec::new(),
        })
    };
    assert_eq!(
        provider.requests()[0].messages,
        vec![
            Message::user_text("deploy"),
            assistant_calling(&["ran", "queued"]),
            Message {
                role: Role::User,
                parts: vec![
                    result("ran", INTERRUPTED_CALL),
                    result("queued", UNSTARTED_CALL)
                ],
            },
            Message::user_text("what happened?"),
        ]
    );
    assert!(log.all().is_empty(), "nothing is re-run on resume");
    // The replayed cards say the same.
    let finished: Vec<String> = resumed
        .transcript
        .iter()
        .filter_map(|e| match e {
            CoreEvent::ToolFinished { output, .. } => Some(output.text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(finished, vec![INTERRUPTED_CALL, UNSTARTED_CALL]);
}

#[tokio::test]
async fn a_started_call_is_recorded_before_it_finishes() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let recorder = Arc::new(store.create(cwd.path(), "live", "main-model").unwrap());
    let provider = ScriptedProvider::new(vec![
        vec![
            call("c1", "run", json!({"tag": "a"})),
            finish(FinishReason::ToolCalls),
        ],
        answer("done"),
    ]);
    let log = ExecLog::default();
    let config = test_config(Arc::new(provider), vec![FakeTool::writer("run", 1, &log)]);
    let mut handle = spawn_agent_observed(config, recorder);
    prompt(&handle, "go");
    collect_task(&mut handle).await;
    let loaded = store.load(cwd.path(), "live").unwrap();
    let started: Vec<usize> = loaded
        .records
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r, Record::CallStarted { call_id } if call_id == "c1"))
        .map(|(i, _)| i)
        .collect();
    let result_at = loaded
        .records
        .iter()
        .position(|r| matches!(r, Record::Message { message } if message.role == Role::User && matches!(message.parts[0], Part::ToolResult(_))))
        .unwrap();
    assert_eq!(started.len(), 1);
    assert!(started[0] < result_at);
}

#[test]
fn a_path_shaped_session_id_is_refused_before_the_disk_is_touched() {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let cwd = home.path().join("project");
    // A file outside the store, shaped like a session file with a secret inside.
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.jsonl");
    std::fs::write(&secret, "{\"password\": \"hunter2-secret\"}\n").unwrap();
    let from_store = format!("../../../..{}", outside.path().join("secret").display());
    let absolute = outside.path().join("secret").display().to_string();
    for id in [
        from_store.as_str(),
        absolute.as_str(),
        "..",
        "a/b",
        "a.b",
        "",
    ] {
        let err = store.load(&cwd, id).unwrap_err();
        assert!(
            matches!(err, SessionError::InvalidId { .. }),
            "{id}: {err:?}"
        );
        let message = err.to_string();
        assert!(
            !message.contains("hunter2") && message.contains("is not a session id"),
            "{message}"
        );
    }
    // corvid's own ids and their prefixes still load (here: are merely not found).
    for id in ["0b5c3a9e-1f2d-4c6b-9a8e-7d6f5e4c3b2a", "0b5c", "s1"] {
        assert!(
            matches!(store.load(&cwd, id), Err(SessionError::NotFound { .. })),
            "{id}"
        );
    }
}

#[tokio::test]
async fn a_configured_key_in_a_prompt_or_tool_output_is_not_recorded() {
    const KEY: &str = "sk-proj-Zx81kQ-secret-value";
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let log = ExecLog::default();
    let model = ScriptedProvider::new(vec![
        vec![
            call("c1", "read", json!({ "tag": KEY })),
            finish(FinishReason::ToolCalls),
        ],
        answer(&format!("Your key {KEY} works.")),
    ]);
    let mut config = test_config(Arc::new(model), vec![FakeTool::reader("read", 1, &log)]);
    let cwd = tempfile::tempdir().unwrap();
    config.cwd = cwd.path().to_owned();
    config.session_id = "0b5c3a9e-key".into();
    config.policy.recorded_secrets =
        RecordedSecrets::from_env(["OPENAI_API_KEY", "ANTHROPIC_API_KEY"], |name| {
            (name == "OPENAI_API_KEY").then(|| KEY.to_owned())
        });
    let recorded = spawn_recorded(config, &store);
    assert!(recorded.not_recorded.is_none());
    let mut handle = recorded.handle;
    run_task(&mut handle, &format!("here is my key: {KEY}")).await;
    common::shut_down(handle).await;

    let listed = store.list(cwd.path()).unwrap();
    assert_eq!(
        listed[0].first_prompt,
        "here is my key: [REDACTED:OPENAI_API_KEY]"
    );
    let raw = std::fs::read_to_string(&listed[0].path).unwrap();
    assert!(!raw.contains(KEY), "{raw}");
    // The prompt, the call's arguments, its output and the model's answer.
    assert_eq!(raw.matches("[REDACTED:OPENAI_API_KEY]").count(), 4, "{raw}");
}

#[tokio::test]
async fn the_keys_a_sessions_settings_name_are_redacted_from_its_recording() {
    const CONFIGURED: &str = "llm-credential-0123456789";
    const DEFAULT: &str = "sk-default-0123456789";
    let mut settings = corvid_core::settings::Settings::default();
    settings.model.provider = Some(corvid_core::settings::ProviderKind::Demo);
    settings.model.api_key_env = Some("LLM_CREDENTIAL".into());
    let env = |name: &str| match name {
        "LLM_CREDENTIAL" => Some(CONFIGURED.to_owned()),
        "OPENAI_API_KEY" => Some(DEFAULT.to_owned()),
        corvid_core::settings::DEMO_PACING_ENV => Some("0".to_owned()),
        _ => None,
    };
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let mut config =
        corvid_core::settings::agent_config(&settings, env, cwd.path(), "0b5c3a9e-wired").unwrap();
    // The demo model would explore with tools (and ask); the prompt is what matters here.
    config.tools = corvid_tools::ToolRegistry::new(Vec::new());
    let mut handle = spawn_recorded(config, &store).handle;
    run_task(&mut handle, &format!("keys: {CONFIGURED} and {DEFAULT}")).await;
    common::shut_down(handle).await;
    let listed = store.list(cwd.path()).unwrap();
    assert_eq!(
        listed[0].first_prompt,
        "keys: [REDACTED:LLM_CREDENTIAL] and [REDACTED:OPENAI_API_KEY]"
    );
    let raw = std::fs::read_to_string(&listed[0].path).unwrap();
    assert!(!raw.contains(CONFIGURED) && !raw.contains(DEFAULT), "{raw}");
}
