//! `glob` and `grep_search`.

mod common;

use common::Workspace;
use corvid_protocol::{Location, ToolDisplay, ToolKind};
use corvid_tools::{Glob, GrepSearch, Tool};
use pretty_assertions::assert_eq;
use serde_json::json;

fn project() -> Workspace {
    let ws = Workspace::new();
    ws.file(".gitignore", "target/\n*.log\n")
        .file("src/main.rs", "fn main() {\n    login();\n}\n")
        .file(
            "src/auth/login.rs",
            "pub fn login() {}\n// TODO: login retries\n",
        )
        .file("build.rs", "fn main() {}\n")
        .file("README.md", "Call login to start.\n")
        .file("target/debug/gen.rs", "fn login() {}\n")
        .file("debug.log", "login failed\n")
        .file(".github/ci.yml", "login: true\n");
    ws
}

#[tokio::test]
async fn glob_finds_matching_files_sorted_and_skips_ignored_ones() {
    let ws = project();

    let out = ws.run_ok(&Glob, json!({"pattern": "**/*.rs"})).await;

    assert_eq!(
        out.text,
        "3 files match `**/*.rs`:\nbuild.rs\nsrc/auth/login.rs\nsrc/main.rs"
    );
    assert_eq!(
        out.raw,
        json!({"root": ws.root, "files": ["build.rs", "src/auth/login.rs", "src/main.rs"], "total": 3})
    );
}

#[tokio::test]
async fn a_single_star_does_not_cross_directories_and_path_narrows_the_search() {
    let ws = project();

    let top = ws.run_ok(&Glob, json!({"pattern": "*.rs"})).await;
    let in_src = ws
        .run_ok(&Glob, json!({"pattern": "*.rs", "path": "src"}))
        .await;
    let none = ws.run_ok(&Glob, json!({"pattern": "*.py"})).await;

    assert_eq!(top.text, "1 file matches `*.rs`:\nbuild.rs");
    assert_eq!(in_src.text, "1 file matches `*.rs`:\nsrc/main.rs");
    assert_eq!(none.text, "No files match `*.py`.");
    let absolute = format!("{}/src/*.rs", ws.root.display());
    let spelled_absolute = ws.run_ok(&Glob, json!({"pattern": absolute})).await;
    assert_eq!(spelled_absolute.raw["files"], json!(["src/main.rs"]));
}

#[tokio::test]
async fn glob_results_are_capped_with_a_note() {
    let ws = Workspace::new();
    for i in 0..520 {
        ws.file(&format!("f/{i:04}.txt"), "");
    }

    let out = ws.run_ok(&Glob, json!({"pattern": "f/*.txt"})).await;

    let lines: Vec<&str> = out.text.lines().collect();
    assert_eq!(lines.len(), 502);
    assert_eq!(lines[0], "520 files match `f/*.txt`:");
    assert_eq!(lines[500], "f/0499.txt");
    assert_eq!(
        lines[501],
        "[20 more files not shown; use a more specific pattern.]"
    );
}

#[tokio::test]
async fn glob_errors_name_the_problem() {
    let ws = project();
    assert!(
        ws.run_err(&Glob, json!({"pattern": "a[b"}))
            .await
            .starts_with("invalid glob pattern `a[b`:")
    );
    assert!(
        ws.run_err(&Glob, json!({"pattern": "*", "path": "../"}))
            .await
            .contains("is outside the working directory")
    );
    assert_eq!(
        ws.run_err(&Glob, json!({"pattern": "*", "path": "build.rs"}))
            .await,
        "build.rs is not a directory"
    );
    assert_eq!(
        ws.run_err(&Glob, json!({"pattern": 3})).await,
        "invalid arguments for glob: invalid type: integer `3`, expected a string"
    );
}

#[tokio::test]
async fn grep_reports_path_line_and_text_and_skips_ignored_files() {
    let ws = project();

    let out = ws.run_ok(&GrepSearch, json!({"pattern": "login"})).await;

    assert_eq!(
        out.text,
        ".github/ci.yml:1:login: true\n\
         README.md:1:Call login to start.\n\
         src/auth/login.rs:1:pub fn login() {}\n\
         src/auth/login.rs:2:// TODO: login retries\n\
         src/main.rs:2:    login();"
    );
    assert_eq!(
        out.raw,
        json!({"root": ws.root, "matches": 5, "capped": false})
    );
}

#[tokio::test]
async fn grep_can_be_limited_to_a_glob_or_a_path() {
    let ws = project();

    let rust = ws
        .run_ok(&GrepSearch, json!({"pattern": "login\\(", "glob": "*.rs"}))
        .await;
    let one_file = ws
        .run_ok(
            &GrepSearch,
            json!({"pattern": "TODO", "path": "src/auth/login.rs"}),
        )
        .await;
    let none = ws
        .run_ok(&GrepSearch, json!({"pattern": "nothing-here"}))
        .await;

    assert_eq!(
        rust.text,
        "src/auth/login.rs:1:pub fn login() {}\nsrc/main.rs:2:    login();"
    );
    assert_eq!(one_file.text, "src/auth/login.rs:2:// TODO: login retries");
    assert_eq!(none.text, "No matches for `nothing-here`.");
}

#[tokio::test]
async fn grep_skips_binary_files() {
    let ws = Workspace::new();
    ws.file("data.bin", b"needle\0\x01\x02needle")
        .file("text.txt", "needle\n");

    let out = ws.run_ok(&GrepSearch, json!({"pattern": "needle"})).await;

    assert_eq!(out.text, "text.txt:1:needle");
}

#[tokio::test]
async fn grep_output_is_capped_with_a_note() {
    let ws = Workspace::new();
    ws.file("many.txt", "hit\n".repeat(300));

    let out = ws.run_ok(&GrepSearch, json!({"pattern": "hit"})).await;

    let lines: Vec<&str> = out.text.lines().collect();
    assert_eq!(lines.len(), 201);
    assert_eq!(lines[199], "many.txt:200:hit");
    assert_eq!(
        lines[200],
        "[Stopped after 200 matches; narrow the pattern, path or glob to see the rest.]"
    );
    assert_eq!(out.raw["capped"], json!(true));
}

#[tokio::test]
async fn grep_errors_name_the_problem() {
    let ws = project();
    assert!(
        ws.run_err(&GrepSearch, json!({"pattern": "("}))
            .await
            .starts_with("invalid regular expression `(`:")
    );
    assert_eq!(
        ws.run_err(&GrepSearch, json!({"pattern": "x", "path": "nope"}))
            .await,
        "nope does not exist"
    );
    assert!(
        ws.run_err(&GrepSearch, json!({"pattern": "x", "path": "/etc"}))
            .await
            .contains("is outside the working directory")
    );
    assert_eq!(
        ws.run_err(&GrepSearch, json!({"path": "src"})).await,
        "invalid arguments for grep_search: missing field `pattern`"
    );
}

#[tokio::test]
async fn searches_are_displayed_with_the_pattern_in_the_title() {
    let ws = Workspace::new();
    let ctx = ws.ctx();
    assert_eq!(
        GrepSearch.display(&json!({"pattern": "login"}), &ctx),
        ToolDisplay {
            title: "Search \"login\"".to_owned(),
            kind: ToolKind::Search,
            locations: vec![Location {
                path: ws.root.clone(),
                line: None
            }],
        }
    );
    assert_eq!(
        GrepSearch
            .display(&json!({"pattern": "login", "path": "src"}), &ctx)
            .title,
        "Search \"login\" in src"
    );
    assert_eq!(
        Glob.display(&json!({"pattern": "*.rs"}), &ctx),
        ToolDisplay {
            title: "Find *.rs".to_owned(),
            kind: ToolKind::Search,
            locations: vec![Location {
                path: ws.root.clone(),
                line: None
            }],
        }
    );
}
