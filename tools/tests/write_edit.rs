//! `write_file` and `edit`.

mod common;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use common::{Workspace, symlink};
use corvid_protocol::{ApprovalPreview, FileDiff, Location, ToolDisplay, ToolKind};
use corvid_tools::{ApprovalNeed, Edit, FileSystem, LocalFs, Tool, ToolError, WriteFile};
use futures::FutureExt;
use futures::future::BoxFuture;
use pretty_assertions::assert_eq;
use serde_json::json;

#[tokio::test]
async fn writing_a_new_file_creates_it_with_parents_and_reports_a_diff() {
    let ws = Workspace::new();

    let out = ws
        .run_ok(
            &WriteFile,
            json!({"file_path": "src/a.rs", "content": "one\ntwo\n"}),
        )
        .await;

    assert_eq!(ws.read("src/a.rs"), "one\ntwo\n");
    assert_eq!(
        out.text,
        "Created src/a.rs (2 lines).\n\n--- /dev/null\n+++ b/src/a.rs\n@@ -0,0 +1,2 @@\n+one\n+two\n"
    );
    assert_eq!(
        out.diffs,
        vec![FileDiff {
            path: ws.path("src/a.rs"),
            old_text: None,
            new_text: "one\ntwo\n".to_owned()
        }]
    );
    assert_eq!(
        out.raw,
        json!({"path": ws.path("src/a.rs"), "created": true, "changed": true, "lines": 2})
    );
}

#[tokio::test]
async fn overwriting_a_file_shows_the_change_and_asks_for_an_edit_approval() {
    let ws = Workspace::new();
    ws.file("a.txt", "one\ntwo\n");
    let args = json!({"file_path": "a.txt", "content": "one\nthree\n"});

    let need = WriteFile.approval(&args, &ws.ctx()).await;
    let out = ws.run_ok(&WriteFile, args).await;

    let diff = FileDiff {
        path: ws.path("a.txt"),
        old_text: Some("one\ntwo\n".to_owned()),
        new_text: "one\nthree\n".to_owned(),
    };
    assert_eq!(
        need,
        ApprovalNeed::Edit(ApprovalPreview::Diff(diff.clone()))
    );
    assert_eq!(out.diffs, vec![diff]);
    assert_eq!(
        out.text,
        "Wrote a.txt (2 lines).\n\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+three\n"
    );
    assert_eq!(ws.read("a.txt"), "one\nthree\n");
}

#[tokio::test]
async fn writing_outside_the_working_directory_is_refused_without_asking() {
    let ws = Workspace::new();
    let outside = tempfile::tempdir().unwrap();
    symlink(outside.path(), &ws.path("out"));

    for raw in ["../evil.txt", "out/evil.txt"] {
        let args = json!({"file_path": raw, "content": "x"});
        assert!(matches!(
            WriteFile.approval(&args, &ws.ctx()).await,
            ApprovalNeed::Refuse(_)
        ));
        assert!(
            ws.run_err(&WriteFile, args)
                .await
                .contains("is outside the working directory")
        );
    }
    assert!(!outside.path().join("evil.txt").exists());
}

#[tokio::test]
async fn write_needs_its_arguments() {
    let ws = Workspace::new();
    assert_eq!(
        ws.run_err(&WriteFile, json!({"file_path": "a.txt"})).await,
        "invalid arguments for write_file: missing field `content`"
    );
    assert_eq!(
        ws.run_err(&WriteFile, json!({"file_path": "a.txt", "content": 5}))
            .await,
        "invalid arguments for write_file: invalid type: integer `5`, expected a string"
    );
}

#[tokio::test]
async fn an_exact_single_match_is_replaced_and_diffed() {
    let ws = Workspace::new();
    ws.file("src/a.rs", "fn a() {\n    1\n}\n");
    let args = json!({"file_path": "src/a.rs", "old_string": "    1\n", "new_string": "    2\n"});

    let need = Edit.approval(&args, &ws.ctx()).await;
    let out = ws.run_ok(&Edit, args).await;

    let diff = FileDiff {
        path: ws.path("src/a.rs"),
        old_text: Some("fn a() {\n    1\n}\n".to_owned()),
        new_text: "fn a() {\n    2\n}\n".to_owned(),
    };
    assert_eq!(
        need,
        ApprovalNeed::Edit(ApprovalPreview::Diff(diff.clone()))
    );
    assert_eq!(out.diffs, vec![diff]);
    assert_eq!(ws.read("src/a.rs"), "fn a() {\n    2\n}\n");
    assert_eq!(
        out.text,
        "Edited src/a.rs: replaced 1 occurrence.\n\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,3 +1,3 @@\n fn a() {\n-    1\n+    2\n }\n"
    );
    assert_eq!(
        out.raw,
        json!({"path": ws.path("src/a.rs"), "replacements": 1, "first_line": 2})
    );
}

#[tokio::test]
async fn zero_matches_is_an_error_that_leaves_the_file_alone() {
    let ws = Workspace::new();
    ws.file("a.txt", "hello\n");
    let args = json!({"file_path": "a.txt", "old_string": "bye", "new_string": "x"});

    assert!(matches!(
        Edit.approval(&args, &ws.ctx()).await,
        ApprovalNeed::Refuse(_)
    ));
    assert_eq!(
        ws.run_err(&Edit, args).await,
        "old_string was not found in a.txt; it must match the file exactly, including \
         whitespace and indentation (read the file again to copy the current text)"
    );
    assert_eq!(ws.read("a.txt"), "hello\n");
}

#[tokio::test]
async fn multiple_matches_need_replace_all() {
    let ws = Workspace::new();
    ws.file("a.txt", "x = 1\nx = 1\nx = 1\n");

    assert_eq!(
        ws.run_err(
            &Edit,
            json!({"file_path": "a.txt", "old_string": "x = 1", "new_string": "x = 2"})
        )
        .await,
        "old_string matches 3 places in a.txt; include more surrounding lines to make it \
         unique, or set replace_all to true to replace every occurrence"
    );
    assert_eq!(ws.read("a.txt"), "x = 1\nx = 1\nx = 1\n");

    let out = ws
        .run_ok(
            &Edit,
            json!({"file_path": "a.txt", "old_string": "x = 1", "new_string": "x = 2", "replace_all": true}),
        )
        .await;
    assert_eq!(ws.read("a.txt"), "x = 2\nx = 2\nx = 2\n");
    assert!(
        out.text
            .starts_with("Edited a.txt: replaced 3 occurrences.\n")
    );
}

#[tokio::test]
async fn edit_errors_are_specific() {
    let ws = Workspace::new();
    ws.file("a.txt", "hello\n");
    assert_eq!(
        ws.run_err(
            &Edit,
            json!({"file_path": "missing.txt", "old_string": "a", "new_string": "b"})
        )
        .await,
        "missing.txt does not exist; use write_file to create a new file"
    );
    assert_eq!(
        ws.run_err(
            &Edit,
            json!({"file_path": "a.txt", "old_string": "hello", "new_string": "hello"})
        )
        .await,
        "old_string and new_string are identical; there is nothing to change"
    );
    assert_eq!(
        ws.run_err(
            &Edit,
            json!({"file_path": "a.txt", "old_string": "", "new_string": "b"})
        )
        .await,
        "old_string is empty but a.txt already exists; give the exact text to replace"
    );
    assert_eq!(
        ws.run_err(&Edit, json!({"file_path": "a.txt", "new_string": "b"}))
            .await,
        "invalid arguments for edit: missing field `old_string`"
    );
    assert!(
        ws.run_err(
            &Edit,
            json!({"file_path": "../a.txt", "old_string": "a", "new_string": "b"})
        )
        .await
        .contains("is outside the working directory")
    );
}

#[tokio::test]
async fn an_empty_old_string_creates_a_missing_file() {
    let ws = Workspace::new();
    let out = ws
        .run_ok(
            &Edit,
            json!({"file_path": "new.txt", "old_string": "", "new_string": "hi\n"}),
        )
        .await;
    assert_eq!(ws.read("new.txt"), "hi\n");
    assert!(out.text.starts_with("Edited new.txt: created the file.\n"));
}

#[tokio::test]
async fn edits_are_displayed_with_short_titles_and_absolute_locations() {
    let ws = Workspace::new();
    let ctx = ws.ctx();
    assert_eq!(
        Edit.display(&json!({"file_path": "./src/a.rs"}), &ctx),
        ToolDisplay {
            title: "Edit src/a.rs".to_owned(),
            kind: ToolKind::Edit,
            locations: vec![Location {
                path: ws.path("src/a.rs"),
                line: None
            }],
        }
    );
    assert_eq!(
        WriteFile
            .display(&json!({"file_path": "src/a.rs", "content": ""}), &ctx)
            .title,
        "Write src/a.rs"
    );
}

#[tokio::test]
async fn edits_written_with_plain_newlines_apply_to_crlf_files() {
    let ws = Workspace::new();
    ws.file("win.txt", "a\r\nb\r\nc\r\n");

    ws.run_ok(
        &Edit,
        json!({"file_path": "win.txt", "old_string": "a\nb\n", "new_string": "a\nB\n"}),
    )
    .await;

    assert_eq!(ws.read("win.txt"), "a\r\nB\r\nc\r\n");
}

/// Local disk whose first read fails, as a busy network disk or editor might once.
#[derive(Default)]
struct FlakyFs {
    failed_once: AtomicBool,
    writes: AtomicUsize,
}

impl FileSystem for FlakyFs {
    fn read_text(&self, path: PathBuf) -> BoxFuture<'static, std::io::Result<String>> {
        if !self.failed_once.swap(true, Ordering::SeqCst) {
            let busy = std::io::Error::new(std::io::ErrorKind::ResourceBusy, "device busy");
            return futures::future::ready(Err(busy)).boxed();
        }
        LocalFs.read_text(path)
    }

    fn write_text(
        &self,
        root: PathBuf,
        path: PathBuf,
        content: String,
    ) -> BoxFuture<'static, std::io::Result<()>> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        LocalFs.write_text(root, path, content)
    }
}

#[tokio::test]
async fn a_failed_plan_fails_the_call_instead_of_skipping_the_approval() {
    let ws = Workspace::new();
    ws.file("a.txt", "one\n");
    let calls: [(&dyn Tool, serde_json::Value, &str); 2] = [
        (
            &WriteFile,
            json!({"file_path": "a.txt", "content": "two\n"}),
            "cannot read a.txt: device busy",
        ),
        (
            &Edit,
            json!({"file_path": "a.txt", "old_string": "one", "new_string": "two"}),
            "cannot edit a.txt: device busy",
        ),
    ];

    for (tool, args, error) in calls {
        let fs = Arc::new(FlakyFs::default());
        let ctx = ws.ctx_with(fs.clone());

        // The transient failure refuses the call: the core never runs `execute`, whose
        // second (successful) plan would otherwise write without the user's say.
        assert_eq!(
            tool.approval(&args, &ctx).await,
            ApprovalNeed::Refuse(ToolError::new(error)),
            "{}",
            tool.name()
        );
        assert_eq!(fs.writes.load(Ordering::SeqCst), 0);
        assert_eq!(ws.read("a.txt"), "one\n");
    }
}
