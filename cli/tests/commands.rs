//! Custom commands from the binary (issue 29): `corvid -p "/name args"` sends the expansion,
//! `corvid commands list` and `show` tell what a session here would offer and send, and an
//! untrusted project's commands are not offered.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Sandbox, assert_success, run, stdout, text_turn};
use corvid_testkit::MockServer;
use pretty_assertions::assert_eq;

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `corvid ARGS` with `$HOME` in the sandbox's home (so the user's own files stay out).
fn corvid(sb: &Sandbox, args: &[&str]) -> tokio::process::Command {
    let mut cmd = sb.corvid(args);
    cmd.env("HOME", sb.home.path());
    cmd
}

const REVIEW: &str =
    "---\ndescription: Review a file\nargument-hint: FILE\n---\nReview $0 for bugs.\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headless_slash_name_args_sends_the_expanded_command() {
    let server = MockServer::start().await;
    server.push(text_turn("ok"));
    let sb = Sandbox::new();
    write(&sb.home.path().join(".claude/commands/review.md"), REVIEW);
    let mut cmd = sb.against(&server, "sk-test", &["-p", "/review src/lib.rs"]);
    cmd.env("HOME", sb.home.path())
        .env("OPENAI_MODEL", "mock-model")
        .env("CORVID_EMIT_TOOL_USE_SUMMARIES", "0");
    let out = run(cmd).await;
    assert_success(&out);
    let body = &server.requests()[0].body;
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(
        messages.last().unwrap()["content"],
        "Review src/lib.rs for bugs.\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_list_names_each_source_file_and_show_expands_without_running() {
    let sb = Sandbox::new();
    let review = sb.home.path().join(".claude/commands/review.md");
    write(&review, REVIEW);
    write(
        &sb.home.path().join(".codex/prompts/explain.md"),
        "Explain $1.\n",
    );
    let out = run(corvid(&sb, &["commands", "list"])).await;
    assert_success(&out);
    let listed = stdout(&out);
    assert!(
        listed.contains(&format!(
            "/review FILE\n    Review a file\n    {} (user-claude)\n",
            review.display()
        )),
        "{listed}"
    );
    assert!(listed.contains("/explain\n    Explain $1.\n"), "{listed}");
    assert!(
        listed.contains("/init\n    Study the repository"),
        "{listed}"
    );

    let out = run(corvid(&sb, &["commands", "show", "review", "a.rs", "b.rs"])).await;
    assert_success(&out);
    assert_eq!(stdout(&out), "Review a.rs for bugs.\n\n");
    let out = run(corvid(
        &sb,
        &["commands", "show", "explain", "a.rs", "b.rs"],
    ))
    .await;
    assert_eq!(stdout(&out), "Explain a.rs.\n\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_projects_commands_are_absent_and_trust_brings_them() {
    let sb = Sandbox::new();
    write(
        &sb.project_dir().join(".claude/commands/deploy.md"),
        "Deploy now.\n",
    );
    let out = run(corvid(&sb, &["commands", "list"])).await;
    assert_success(&out);
    let listed = stdout(&out);
    assert!(!listed.contains("/deploy\n"), "{listed}");
    assert!(
        listed.contains("ignored: this folder is not trusted. Run with --trust"),
        "{listed}"
    );
    let out = run(corvid(&sb, &["--trust", ".", "commands", "list"])).await;
    assert!(
        stdout(&out).contains("/deploy\n    Deploy now."),
        "{}",
        stdout(&out)
    );
}
