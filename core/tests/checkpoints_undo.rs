//! Undo of a turn, whatever changed the files (issue 26): the model's shell commands, its
//! file tools, the user's `!command`, a subagent. Each test runs a real session on a
//! temporary folder with the scripted model, then sends `Op::Rewind`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

use common::scripted::*;
use common::{collect_task, run_task, test_config};
use corvid_core::agent::{AgentHandle, spawn_agent};
use corvid_core::checkpoints::{CheckpointSettings, SessionCheckpoints};
use corvid_protocol::{CoreEvent, FinishReason, Message, Op, RewindReport, RewindScope};
use pretty_assertions::assert_eq;
use serde_json::json;
use tempfile::TempDir;

/// A session on a temporary workspace with checkpoints in a temporary corvid home.
struct Session {
    dir: TempDir,
    _home: TempDir,
    provider: ScriptedProvider,
    handle: AgentHandle,
    checkpoints: Arc<SessionCheckpoints>,
}

impl Session {
    fn start(files: &[(&str, &[u8])], settings: CheckpointSettings) -> Session {
        let dir = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        for (path, content) in files {
            write(dir.path(), path, content);
        }
        let provider = ScriptedProvider::new(Vec::new()).answering_when_exhausted("ok");
        let checkpoints =
            Arc::new(SessionCheckpoints::open(home.path(), dir.path(), "s-1", settings).unwrap());
        let mut config = test_config(Arc::new(provider.clone()), Vec::new());
        config.tools = corvid_tools::builtin_tools();
        config.cwd = dir.path().to_owned();
        config.fs = Arc::new(corvid_tools::LocalFs);
        config.policy.checkpoints = Some(checkpoints.clone());
        config.policy.subagents = corvid_core::policy::Subagents::On {
            max_turns: corvid_core::policy::MaxTurns(5),
            time_limit: std::time::Duration::from_secs(600),
            types: corvid_core::agents::AgentTypes::default_types(),
        };
        let handle = spawn_agent(config);
        Session {
            dir,
            _home: home,
            provider,
            handle,
            checkpoints,
        }
    }

    fn new(files: &[(&str, &[u8])]) -> Session {
        Session::start(files, CheckpointSettings::default())
    }

    /// A turn in which the model makes `calls` (name, arguments), then answers.
    async fn turn(&mut self, prompt: &str, calls: &[(&str, serde_json::Value)]) -> Vec<CoreEvent> {
        let mut steps: Vec<Step> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| call(&format!("c{i}-{prompt}"), name, args.clone()))
            .collect();
        steps.push(finish(FinishReason::ToolCalls));
        self.provider.push(steps);
        self.provider.push(answer("done"));
        run_task(&mut self.handle, prompt).await
    }

    async fn shell_turn(&mut self, prompt: &str, command: &str) {
        let events = self
            .turn(
                prompt,
                &[("run_shell_command", json!({ "command": command }))],
            )
            .await;
        assert_no_warning(&events);
    }

    async fn rewind(&mut self, turn: u32, scope: RewindScope, overwrite: bool) -> RewindReport {
        self.handle
            .submit(Op::Rewind {
                turn,
                scope,
                overwrite_conflicts: overwrite,
            })
            .unwrap();
        loop {
            match self.handle.next_event().await.unwrap() {
                CoreEvent::Rewound { report, error, .. } => {
                    assert_eq!(error, None);
                    return report;
                }
                CoreEvent::Warning { message } => panic!("warning: {message}"),
                _ => {}
            }
        }
    }

    async fn undo_last(&mut self) -> RewindReport {
        let last = self.checkpoints.last_turn().unwrap();
        self.rewind(last, RewindScope::Both, false).await
    }

    fn path(&self, rel: &str) -> std::path::PathBuf {
        self.dir.path().join(rel)
    }

    fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.path(rel)).unwrap()
    }
}

fn write(root: &Path, rel: &str, content: &[u8]) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn assert_no_warning(events: &[CoreEvent]) {
    for e in events {
        if let CoreEvent::Warning { message } = e {
            panic!("unexpected warning: {message}");
        }
    }
}

fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

#[tokio::test]
async fn undo_after_sed_in_place_on_a_tracked_file_restores_it() {
    let mut s = Session::new(&[("src/a.txt", b"hello world\n")]);
    git(s.dir.path(), &["init", "-q"]);
    git(s.dir.path(), &["add", "."]);
    git(s.dir.path(), &["commit", "-qm", "init"]);
    s.shell_turn("fix it", "sed -i 's/world/there/' src/a.txt")
        .await;
    assert_eq!(s.read("src/a.txt"), b"hello there\n");
    let report = s.undo_last().await;
    assert_eq!(report.restored, vec![Path::new("src/a.txt").to_path_buf()]);
    assert_eq!(s.read("src/a.txt"), b"hello world\n");
}

#[tokio::test]
async fn undo_removes_a_file_a_heredoc_created() {
    let mut s = Session::new(&[("keep.txt", b"k")]);
    s.shell_turn("make it", "cat > made.txt <<'EOF'\nnew\nEOF")
        .await;
    assert!(s.path("made.txt").exists());
    s.undo_last().await;
    assert!(!s.path("made.txt").exists());
    assert_eq!(s.read("keep.txt"), b"k");
}

#[tokio::test]
async fn undo_reverses_mv_a_b() {
    let mut s = Session::new(&[("a", b"content of a")]);
    s.shell_turn("rename", "mv a b").await;
    s.undo_last().await;
    assert_eq!(s.read("a"), b"content of a");
    assert!(!s.path("b").exists());
}

#[tokio::test]
async fn undo_recreates_a_folder_removed_by_rm_r() {
    let mut s = Session::new(&[("dir/x.txt", b"x"), ("dir/sub/y.txt", b"y")]);
    s.shell_turn("clean", "rm -r dir").await;
    assert!(!s.path("dir").exists());
    s.undo_last().await;
    assert_eq!(s.read("dir/x.txt"), b"x");
    assert_eq!(s.read("dir/sub/y.txt"), b"y");
}

#[tokio::test]
async fn undo_takes_back_chmod_plus_x() {
    let mut s = Session::new(&[("run.sh", b"echo hi\n")]);
    std::fs::set_permissions(s.path("run.sh"), std::fs::Permissions::from_mode(0o644)).unwrap();
    s.shell_turn("make it runnable", "chmod +x run.sh").await;
    s.undo_last().await;
    let mode = std::fs::metadata(s.path("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644);
}

#[tokio::test]
async fn undo_restores_a_rewritten_binary_file_byte_for_byte() {
    let original: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
    let mut s = Session::new(&[("blob.bin", &original)]);
    s.shell_turn("rewrite", "head -c 1000 /dev/urandom > blob.bin")
        .await;
    assert_ne!(s.read("blob.bin"), original);
    s.undo_last().await;
    assert_eq!(s.read("blob.bin"), original);
}

#[tokio::test]
async fn undo_covers_write_file_and_edit() {
    let mut s = Session::new(&[("a.txt", b"one\n")]);
    let events = s
        .turn(
            "edit",
            &[
                (
                    "edit",
                    json!({"file_path": "a.txt", "old_string": "one", "new_string": "two"}),
                ),
                (
                    "write_file",
                    json!({"file_path": "new.txt", "content": "fresh"}),
                ),
            ],
        )
        .await;
    assert_no_warning(&events);
    assert_eq!(s.read("a.txt"), b"two\n");
    s.undo_last().await;
    assert_eq!(s.read("a.txt"), b"one\n");
    assert!(!s.path("new.txt").exists());
}

#[tokio::test]
async fn undo_covers_the_users_own_bang_command() {
    let mut s = Session::new(&[("a.txt", b"before")]);
    s.handle
        .submit(Op::UserShell {
            command: "printf after > a.txt".into(),
        })
        .unwrap();
    assert_no_warning(&collect_task(&mut s.handle).await);
    assert_eq!(s.read("a.txt"), b"after");
    let turns = s.checkpoints.turns().unwrap();
    assert_eq!(turns.last().unwrap().prompt, "!printf after > a.txt");
    s.undo_last().await;
    assert_eq!(s.read("a.txt"), b"before");
}

#[tokio::test]
async fn undo_covers_a_subagents_edits() {
    let mut s = Session::new(&[("a.txt", b"parent")]);
    // The parent's `task` call, the child's write, the child's answer, the parent's answer.
    s.provider.push(vec![
        call(
            "t1",
            "task",
            json!({"description": "Write", "prompt": "write a.txt", "subagent_type": "general-purpose"}),
        ),
        finish(FinishReason::ToolCalls),
    ]);
    s.provider.push(vec![
        call(
            "w1",
            "write_file",
            json!({"file_path": "a.txt", "content": "child"}),
        ),
        finish(FinishReason::ToolCalls),
    ]);
    s.provider.push(answer("child done"));
    s.provider.push(answer("parent done"));
    let events = run_task(&mut s.handle, "delegate").await;
    assert_eq!(s.read("a.txt"), b"child", "{events:#?}");
    s.undo_last().await;
    assert_eq!(s.read("a.txt"), b"parent");
}

#[tokio::test]
async fn a_folder_that_is_not_a_git_repository_is_undone_too() {
    let mut s = Session::new(&[("notes.md", b"# notes\n")]);
    assert!(!s.path(".git").exists());
    s.shell_turn("append", "echo more >> notes.md").await;
    s.undo_last().await;
    assert_eq!(s.read("notes.md"), b"# notes\n");
}

#[tokio::test]
async fn a_user_edit_after_the_turn_is_a_conflict_and_is_kept() {
    let mut s = Session::new(&[("a.txt", b"a0"), ("b.txt", b"b0")]);
    s.shell_turn("both", "printf a1 > a.txt; printf b1 > b.txt")
        .await;
    // The user edits b.txt after the agent's turn.
    std::fs::write(s.path("b.txt"), b"mine").unwrap();
    let last = s.checkpoints.last_turn().unwrap();
    let preview = s.checkpoints.preview(last, RewindScope::Code).unwrap();
    let conflicts: Vec<_> = preview.changes.iter().filter(|c| c.conflict).collect();
    assert_eq!(conflicts.len(), 1);
    assert_eq!(conflicts[0].path, Path::new("b.txt"));
    assert!(preview.to_text().contains("CONFLICT"));
    let report = s.rewind(last, RewindScope::Code, false).await;
    assert_eq!(
        report.kept_conflicts,
        vec![Path::new("b.txt").to_path_buf()]
    );
    assert_eq!(s.read("a.txt"), b"a0");
    assert_eq!(s.read("b.txt"), b"mine");
}

#[tokio::test]
async fn a_user_edit_between_two_turns_is_a_conflict_when_rewinding_past_both() {
    let mut s = Session::new(&[("a.txt", b"a0"), ("u.txt", b"u0")]);
    s.shell_turn("first", "printf a1 > a.txt").await;
    std::fs::write(s.path("u.txt"), b"user").unwrap();
    s.shell_turn("second", "printf a2 > a.txt").await;
    let first = s.checkpoints.turns().unwrap()[0].turn;
    let preview = s.checkpoints.preview(first, RewindScope::Code).unwrap();
    let conflict: Vec<_> = preview
        .changes
        .iter()
        .filter(|c| c.conflict)
        .map(|c| c.path.clone())
        .collect();
    assert_eq!(conflict, vec![Path::new("u.txt").to_path_buf()]);
    s.rewind(first, RewindScope::Code, false).await;
    assert_eq!(s.read("a.txt"), b"a0");
    assert_eq!(s.read("u.txt"), b"user");
}

#[tokio::test]
async fn a_file_over_the_size_limit_is_named_in_the_preview() {
    let settings = CheckpointSettings {
        max_file_bytes: 100,
        ..CheckpointSettings::default()
    };
    let mut s = Session::start(&[("big.dat", &[7u8; 500]), ("small.txt", b"s")], settings);
    s.shell_turn("shrink", "printf x > big.dat; printf t > small.txt")
        .await;
    let last = s.checkpoints.last_turn().unwrap();
    let preview = s.checkpoints.preview(last, RewindScope::Code).unwrap();
    assert_eq!(preview.unrestorable.len(), 1);
    assert_eq!(preview.unrestorable[0].path, Path::new("big.dat"));
    let text = preview.to_text();
    assert!(text.contains("cannot restore big.dat"), "{text}");
    assert!(text.contains("checkpoints.maxFileBytes"), "{text}");
    assert!(
        text.contains("git commits"),
        "the preview says what is never undone: {text}"
    );
}

#[tokio::test]
async fn a_conversation_rewind_drops_the_undone_turn_from_the_next_request() {
    let mut s = Session::new(&[("a.txt", b"a0")]);
    s.shell_turn("first", "printf a1 > a.txt").await;
    s.shell_turn("second", "printf a2 > a.txt").await;
    let second = s.checkpoints.last_turn().unwrap();
    let report = s.rewind(second, RewindScope::Both, false).await;
    assert_eq!(report.restored, vec![Path::new("a.txt").to_path_buf()]);
    assert_eq!(s.read("a.txt"), b"a1");
    let before = s.provider.requests().len();
    run_task(&mut s.handle, "third").await;
    let request = &s.provider.requests()[before];
    let texts: Vec<String> = request
        .messages
        .iter()
        .filter(|m| m.role == corvid_protocol::Role::User)
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| match p {
            corvid_protocol::Part::Text { text } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, vec!["first".to_owned(), "third".to_owned()]);
    // The rewound turn is gone from the list; the rewind is a turn of its own, undoable.
    let prompts: Vec<String> = s
        .checkpoints
        .turns()
        .unwrap()
        .into_iter()
        .map(|t| t.prompt)
        .collect();
    assert_eq!(prompts[0], "first");
    assert!(prompts.iter().all(|p| p != "second"), "{prompts:?}");
}

#[tokio::test]
async fn a_code_only_rewind_tells_the_model_which_files_were_restored() {
    let mut s = Session::new(&[("a.txt", b"a0")]);
    s.shell_turn("change", "printf a1 > a.txt").await;
    let last = s.checkpoints.last_turn().unwrap();
    s.rewind(last, RewindScope::Code, false).await;
    let before = s.provider.requests().len();
    run_task(&mut s.handle, "next").await;
    let request = &s.provider.requests()[before];
    let note = request.messages.iter().rev().nth(1).cloned().unwrap();
    let Message { parts, .. } = note;
    let text = format!("{parts:?}");
    assert!(
        text.contains("rewound these files") && text.contains("a.txt"),
        "{text}"
    );
}

#[tokio::test]
async fn a_rewind_can_itself_be_undone() {
    let mut s = Session::new(&[("a.txt", b"a0")]);
    s.shell_turn("change", "printf a1 > a.txt").await;
    let last = s.checkpoints.last_turn().unwrap();
    s.rewind(last, RewindScope::Code, false).await;
    assert_eq!(s.read("a.txt"), b"a0");
    let rewind_turn = s.checkpoints.turns().unwrap().pop().unwrap();
    assert_eq!(rewind_turn.rewind_of, Some(last));
    s.rewind(rewind_turn.turn, RewindScope::Code, false).await;
    assert_eq!(s.read("a.txt"), b"a1");
}
