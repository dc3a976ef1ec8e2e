//! `read_file` and `list_directory`.

mod common;

use common::{Workspace, symlink};
use corvid_protocol::{Location, ToolDisplay, ToolKind};
use corvid_tools::{ListDirectory, ReadFile, Tool, WriteFile};
use pretty_assertions::assert_eq;
use serde_json::json;

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[tokio::test]
async fn a_small_file_is_returned_whole() {
    let ws = Workspace::new();
    ws.file("src/main.rs", "fn main() {}\n");

    let out = ws
        .run_ok(&ReadFile, json!({"file_path": "src/main.rs"}))
        .await;

    assert_eq!(out.text, "fn main() {}\n");
    assert_eq!(
        out.raw,
        json!({"path": ws.path("src/main.rs"), "start_line": 1, "end_line": 1, "total_lines": 1, "truncated": false})
    );
}

#[tokio::test]
async fn offset_and_limit_page_through_lines_with_a_note_on_how_to_go_on() {
    let ws = Workspace::new();
    ws.file("a.txt", numbered(10));

    let out = ws
        .run_ok(
            &ReadFile,
            json!({"file_path": "a.txt", "offset": 2, "limit": 3}),
        )
        .await;

    assert_eq!(
        out.text,
        "[Showing lines 3-5 of 10 of a.txt. To read more, call read_file again with offset 5.]\n\nline 3\nline 4\nline 5\n"
    );
}

#[tokio::test]
async fn a_long_file_is_paged_by_default() {
    let ws = Workspace::new();
    ws.file("big.txt", numbered(2500));

    let out = ws.run_ok(&ReadFile, json!({"file_path": "big.txt"})).await;

    assert!(out.text.starts_with(
        "[Showing lines 1-2000 of 2500 of big.txt. To read more, call read_file again with offset 2000.]\n\nline 1\n"
    ));
    assert!(out.text.ends_with("line 2000\n"));
    let last = ws
        .run_ok(&ReadFile, json!({"file_path": "big.txt", "offset": 2000}))
        .await;
    assert!(
        last.text
            .starts_with("[Showing lines 2001-2500 of 2500 of big.txt.]\n\nline 2001\n")
    );
}

#[tokio::test]
async fn very_long_lines_are_shortened_and_output_stays_bounded() {
    let ws = Workspace::new();
    let long_line = "x".repeat(5000);
    ws.file("min.js", format!("{long_line}\n").repeat(100));

    let out = ws.run_ok(&ReadFile, json!({"file_path": "min.js"})).await;

    assert!(out.text.len() < 110 * 1024, "{} bytes", out.text.len());
    assert!(out.text.contains(" … [line shortened]"));
    let note = out.text.lines().next().unwrap();
    assert!(note.starts_with("[Showing lines 1-"), "{note}");
    assert!(
        note.ends_with(" Lines longer than 2000 bytes were shortened.]"),
        "{note}"
    );
}

#[tokio::test]
async fn an_offset_past_the_end_is_an_error() {
    let ws = Workspace::new();
    ws.file("a.txt", numbered(3));
    assert_eq!(
        ws.run_err(&ReadFile, json!({"file_path": "a.txt", "offset": 3}))
            .await,
        "offset 3 is past the end of a.txt, which has 3 lines"
    );
}

#[tokio::test]
async fn binary_files_are_refused() {
    let ws = Workspace::new();
    ws.file("img.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
    ws.file("nul.txt", b"text\0more");

    assert_eq!(
        ws.run_err(&ReadFile, json!({"file_path": "img.png"})).await,
        "img.png looks binary (it is not UTF-8 text); refusing to read it"
    );
    assert_eq!(
        ws.run_err(&ReadFile, json!({"file_path": "nul.txt"})).await,
        "nul.txt looks binary (it contains NUL bytes); refusing to read it"
    );
}

#[tokio::test]
async fn missing_files_and_directories_are_clear_errors() {
    let ws = Workspace::new();
    ws.dir("src");
    assert_eq!(
        ws.run_err(&ReadFile, json!({"file_path": "nope.txt"}))
            .await,
        "nope.txt does not exist"
    );
    assert_eq!(
        ws.run_err(&ReadFile, json!({"file_path": "src"})).await,
        "src is a directory; use list_directory to see its entries"
    );
}

#[tokio::test]
async fn paths_escaping_the_working_directory_are_refused() {
    let ws = Workspace::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    symlink(outside.path(), &ws.path("link"));
    symlink(
        &outside.path().join("secret.txt"),
        &ws.path("secret-link.txt"),
    );
    let refused = |raw: &str| {
        format!(
            "`{raw}` is outside the working directory {}; only paths inside it can be used",
            ws.root.display()
        )
    };

    for raw in [
        "../secret.txt".to_owned(),
        "src/../../secret.txt".to_owned(),
        outside.path().join("secret.txt").display().to_string(),
        "link/secret.txt".to_owned(),
        "secret-link.txt".to_owned(),
    ] {
        assert_eq!(
            ws.run_err(&ReadFile, json!({"file_path": raw})).await,
            refused(&raw)
        );
    }
}

#[tokio::test]
async fn invalid_arguments_name_the_problem() {
    let ws = Workspace::new();
    assert_eq!(
        ws.run_err(&ReadFile, json!("a.txt")).await,
        "invalid arguments for read_file: expected a JSON object, got a string"
    );
    assert_eq!(
        ws.run_err(&ReadFile, json!({})).await,
        "invalid arguments for read_file: missing field `file_path`"
    );
    assert_eq!(
        ws.run_err(&ReadFile, json!({"file_path": "a", "offset": "x"}))
            .await,
        "invalid arguments for read_file: invalid type: string \"x\", expected usize"
    );
}

#[tokio::test]
async fn read_is_displayed_with_a_short_title_and_an_absolute_location() {
    let ws = Workspace::new();
    assert_eq!(
        ReadFile.display(&json!({"file_path": "src/main.rs", "offset": 9}), &ws.ctx()),
        ToolDisplay {
            title: "Read src/main.rs".to_owned(),
            kind: ToolKind::Read,
            locations: vec![Location {
                path: ws.path("src/main.rs"),
                line: Some(10)
            }],
        }
    );
}

#[tokio::test]
async fn a_directory_lists_sorted_entries_with_directories_marked() {
    let ws = Workspace::new();
    ws.file("src/lib.rs", "")
        .file("b.txt", "")
        .file("a.txt", "")
        .file(".hidden", "")
        .dir("empty");

    let out = ws.run_ok(&ListDirectory, json!({"path": "."})).await;

    assert_eq!(
        out.text,
        "Directory . (5 entries):\n.hidden\na.txt\nb.txt\nempty/\nsrc/"
    );
}

#[tokio::test]
async fn counts_of_one_are_singular() {
    let ws = Workspace::new();
    ws.file("dir/only.txt", "one line\n");
    let many: Vec<String> = (0..1001).map(|i| format!("f{i:04}")).collect();
    for name in &many {
        ws.file(&format!("many/{name}"), "");
    }

    let listed = ws.run_ok(&ListDirectory, json!({"path": "dir"})).await;
    let capped = ws.run_ok(&ListDirectory, json!({"path": "many"})).await;
    let past = ws
        .run_err(&ReadFile, json!({"file_path": "dir/only.txt", "offset": 1}))
        .await;
    let written = ws
        .run_ok(
            &WriteFile,
            json!({"file_path": "one.txt", "content": "x\n"}),
        )
        .await;

    assert_eq!(listed.text, "Directory dir (1 entry):\nonly.txt");
    assert_eq!(
        capped.text,
        format!(
            "Directory many (1001 entries):\n{}\n[1 more entry not shown; use glob to narrow down.]",
            many[..1000].join("\n")
        )
    );
    assert_eq!(
        past,
        "offset 1 is past the end of dir/only.txt, which has 1 line"
    );
    assert!(
        written.text.starts_with("Created one.txt (1 line).\n"),
        "{}",
        written.text
    );
}

#[tokio::test]
async fn listing_honours_gitignore_and_hides_the_git_directory() {
    let ws = Workspace::new();
    ws.file(".gitignore", "target/\n*.log\n")
        .file(".git/HEAD", "ref: refs/heads/main\n")
        .file("target/debug/x", "")
        .file("build.log", "")
        .file("src/main.rs", "")
        .file("src/trace.log", "");

    let root = ws.run_ok(&ListDirectory, json!({"path": "."})).await;
    let src = ws.run_ok(&ListDirectory, json!({"path": "src"})).await;

    assert_eq!(root.text, "Directory . (2 entries):\n.gitignore\nsrc/");
    assert_eq!(src.text, "Directory src (1 entry):\nmain.rs");
    assert_eq!(
        ListDirectory
            .display(&json!({"path": "src"}), &ws.ctx())
            .title,
        "List src"
    );
}

#[tokio::test]
async fn listing_a_file_or_a_missing_path_or_outside_is_an_error() {
    let ws = Workspace::new();
    ws.file("a.txt", "");
    assert_eq!(
        ws.run_err(&ListDirectory, json!({"path": "a.txt"})).await,
        "a.txt is a file, not a directory; use read_file to read it"
    );
    assert_eq!(
        ws.run_err(&ListDirectory, json!({"path": "nope"})).await,
        "nope does not exist"
    );
    assert!(
        ws.run_err(&ListDirectory, json!({"path": ".."}))
            .await
            .contains("is outside the working directory")
    );
    assert_eq!(
        ws.run_err(&ListDirectory, json!({})).await,
        "invalid arguments for list_directory: missing field `path`"
    );
}
