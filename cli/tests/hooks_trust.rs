//! Project hooks run only in a trusted folder and only once the user approved each handler
//! (`corvid hooks trust`): planted, changed and imported handlers wait, visibly, and approved
//! ones run with the shell tool's filtered environment. On the real binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;

use common::{Sandbox, run, stderr, stdout};

/// Remembers the sandbox's project folder as trusted (as a yes in the terminal UI would).
fn trust_folder(sb: &Sandbox) {
    let folder = sb.project_dir().canonicalize().unwrap();
    std::fs::write(
        sb.home.path().join("trusted_folders.json"),
        serde_json::json!({"trustedFolders": [folder]}).to_string(),
    )
    .unwrap();
}

/// Writes a project settings file `rel` holding one Stop handler running `command`.
fn project_hook(sb: &Sandbox, rel: &str, command: &str) -> PathBuf {
    let path = sb.project_dir().join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let block = serde_json::json!({
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": command}]}]}
    });
    std::fs::write(&path, block.to_string()).unwrap();
    path
}

fn input(sb: &Sandbox) -> String {
    let path = sb.home.path().join("input.json");
    std::fs::write(&path, "{}").unwrap();
    path.to_string_lossy().into_owned()
}

/// `corvid hooks test Stop`: runs whatever Stop handlers would run in a session.
async fn fire_stop(sb: &Sandbox) -> std::process::Output {
    let file = input(sb);
    let out = run(sb.corvid(&["hooks", "test", "Stop", "--input", &file])).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    out
}

/// The hashes `corvid hooks trust --list` shows, in order.
async fn listed_hashes(sb: &Sandbox) -> Vec<String> {
    let out = run(sb.corvid(&["hooks", "trust", "--list"])).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    stdout(&out)
        .lines()
        .filter_map(|l| l.strip_prefix("  "))
        .filter(|l| !l.starts_with(' '))
        .map(|l| l.split_whitespace().next().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_hook_planted_in_a_trusted_folder_waits_for_review_and_runs_once_approved() {
    let sb = Sandbox::new();
    trust_folder(&sb);
    let settings = project_hook(&sb, ".corvid/settings.json", "touch ran");
    let out = fire_stop(&sb).await;
    assert!(!sb.project_dir().join("ran").exists());
    assert!(
        stderr(&out).contains(
            "1 project hook waits for review and will not run until you approve: run \
             `corvid hooks trust`"
        ),
        "{}",
        stderr(&out)
    );

    let out = run(sb.corvid(&["hooks", "trust"])).await;
    let shown = stdout(&out);
    assert!(
        shown.starts_with("1 project hook waits for review"),
        "{shown}"
    );
    assert!(shown.contains("  Stop  *  touch ran\n"), "{shown}");
    assert!(
        shown.contains(&format!("from {}", settings.display())),
        "{shown}"
    );
    // Listing approves nothing.
    fire_stop(&sb).await;
    assert!(!sb.project_dir().join("ran").exists());

    let hashes = listed_hashes(&sb).await;
    assert_eq!(hashes.len(), 1, "{hashes:?}");
    let out = run(sb.corvid(&["hooks", "trust", &hashes[0]])).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(stdout(&out).starts_with("approved "), "{}", stdout(&out));
    let out = fire_stop(&sb).await;
    assert!(sb.project_dir().join("ran").exists(), "{}", stdout(&out));
    assert!(!stderr(&out).contains("wait"), "{}", stderr(&out));
}

#[tokio::test]
async fn changing_one_byte_of_an_approved_command_holds_it_back_again() {
    let sb = Sandbox::new();
    trust_folder(&sb);
    project_hook(&sb, ".corvid/settings.json", "touch ran");
    let out = run(sb.corvid(&["hooks", "trust", "--all"])).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    fire_stop(&sb).await;
    assert!(sb.project_dir().join("ran").exists());

    project_hook(&sb, ".corvid/settings.json", "touch rat");
    let out = fire_stop(&sb).await;
    assert!(!sb.project_dir().join("rat").exists());
    assert!(
        stderr(&out).contains("1 project hook waits for review"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn a_hook_added_through_claude_settings_local_json_waits_for_review_too() {
    let sb = Sandbox::new();
    sb.user_settings(r#"{"hooks": {"importClaude": true}}"#);
    trust_folder(&sb);
    project_hook(&sb, ".claude/settings.local.json", "touch ran");
    let out = fire_stop(&sb).await;
    assert!(!sb.project_dir().join("ran").exists());
    assert!(
        stderr(&out).contains("1 project hook waits for review"),
        "{}",
        stderr(&out)
    );
    let out = run(sb.corvid(&["hooks", "list"])).await;
    assert!(
        stdout(&out).contains("Stop  *  touch ran  (waits for review: `corvid hooks trust`)"),
        "{}",
        stdout(&out)
    );
    run(sb.corvid(&["hooks", "trust", "--all"])).await;
    fire_stop(&sb).await;
    assert!(sb.project_dir().join("ran").exists());
}

#[tokio::test]
async fn an_approval_does_not_carry_over_to_the_same_command_in_another_folder() {
    let sb = Sandbox::new();
    trust_folder(&sb);
    project_hook(&sb, ".corvid/settings.json", "touch ran");
    run(sb.corvid(&["hooks", "trust", "--all"])).await;
    // A second project with the same handler, trusted as a folder but never reviewed.
    let other = tempfile::tempdir().unwrap();
    let block = std::fs::read(sb.project_dir().join(".corvid/settings.json")).unwrap();
    std::fs::create_dir(other.path().join(".corvid")).unwrap();
    std::fs::write(other.path().join(".corvid/settings.json"), block).unwrap();
    let folder = other.path().canonicalize().unwrap();
    let list = sb.home.path().join("trusted_folders.json");
    let mut trusted: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&list).unwrap()).unwrap();
    trusted["trustedFolders"]
        .as_array_mut()
        .unwrap()
        .push(folder.display().to_string().into());
    std::fs::write(&list, trusted.to_string()).unwrap();
    let file = input(&sb);
    let mut cmd = sb.corvid(&["hooks", "test", "Stop", "--input", &file]);
    cmd.current_dir(other.path());
    let out = run(cmd).await;
    assert!(!other.path().join("ran").exists(), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("waits for review"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn trust_for_this_run_does_not_approve_the_folders_hooks() {
    let sb = Sandbox::new();
    project_hook(&sb, ".corvid/settings.json", "touch ran");
    let project = sb.project_dir().to_string_lossy().into_owned();
    let file = input(&sb);
    let out = run(sb.corvid(&[
        "--trust", &project, "hooks", "test", "Stop", "--input", &file,
    ]))
    .await;
    assert!(!sb.project_dir().join("ran").exists(), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("corvid hooks trust"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn an_unknown_or_short_hash_approves_nothing() {
    let sb = Sandbox::new();
    trust_folder(&sb);
    project_hook(&sb, ".corvid/settings.json", "touch ran");
    for given in ["abc", "ffffffffffffffff"] {
        let out = run(sb.corvid(&["hooks", "trust", given])).await;
        assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
        assert!(
            stderr(&out).contains("nothing was approved"),
            "{}",
            stderr(&out)
        );
    }
    fire_stop(&sb).await;
    assert!(!sb.project_dir().join("ran").exists());
}

#[tokio::test]
async fn an_untrusted_folders_hooks_are_not_offered_for_review() {
    let sb = Sandbox::new();
    project_hook(&sb, ".corvid/settings.json", "touch ran");
    let out = run(sb.corvid(&["hooks", "trust", "--all"])).await;
    assert!(
        stdout(&out).starts_with("No project hooks wait for review. This folder is not trusted"),
        "{}",
        stdout(&out)
    );
    fire_stop(&sb).await;
    assert!(!sb.project_dir().join("ran").exists());
}

#[tokio::test]
async fn an_approved_project_hook_sees_no_provider_keys_while_a_users_hook_does() {
    let sb = Sandbox::new();
    trust_folder(&sb);
    let print = "env > \"$CORVID_PROJECT_DIR/env.txt\"";
    project_hook(&sb, ".corvid/settings.json", print);
    run(sb.corvid(&["hooks", "trust", "--all"])).await;
    let file = input(&sb);
    let with_keys = |sb: &Sandbox| {
        let mut cmd = sb.corvid(&["hooks", "test", "Stop", "--input", &file]);
        cmd.env("ANTHROPIC_API_KEY", "sk-ant-secret")
            .env("OPENAI_API_KEY", "sk-openai-secret");
        cmd
    };
    run(with_keys(&sb)).await;
    let env = std::fs::read_to_string(sb.project_dir().join("env.txt")).unwrap();
    assert!(env.contains("CORVID_PROJECT_DIR="), "{env}");
    assert!(!env.contains("sk-ant-secret"), "{env}");
    assert!(!env.contains("sk-openai-secret"), "{env}");
    assert!(!env.contains("ANTHROPIC_API_KEY"), "{env}");
    assert!(!env.contains("OPENAI_API_KEY"), "{env}");

    // The same handler in the user's own file runs with the user's environment.
    std::fs::remove_file(sb.project_dir().join(".corvid/settings.json")).unwrap();
    std::fs::remove_file(sb.project_dir().join("env.txt")).unwrap();
    sb.user_settings(
        &serde_json::json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": print}]}]}})
            .to_string(),
    );
    run(with_keys(&sb)).await;
    let env = std::fs::read_to_string(sb.project_dir().join("env.txt")).unwrap();
    assert!(env.contains("ANTHROPIC_API_KEY=sk-ant-secret"), "{env}");
}

#[tokio::test]
async fn a_headless_session_warns_about_waiting_hooks_and_does_not_run_them() {
    let sb = Sandbox::new();
    trust_folder(&sb);
    project_hook(&sb, ".corvid/settings.json", "touch ran");
    let out = sb.look_around(&[]).await;
    assert!(!sb.project_dir().join("ran").exists());
    assert!(
        stderr(&out).contains("1 project hook waits for review")
            && stderr(&out).contains("`corvid hooks trust`"),
        "{}",
        stderr(&out)
    );
    // The session does fire Stop: approved, the same handler runs.
    run(sb.corvid(&["hooks", "trust", "--all"])).await;
    sb.look_around(&[]).await;
    assert!(sb.project_dir().join("ran").exists());
}

#[tokio::test]
async fn a_project_file_cannot_switch_on_claude_imports_and_is_told_where() {
    let sb = Sandbox::new();
    trust_folder(&sb);
    std::fs::create_dir(sb.project_dir().join(".corvid")).unwrap();
    let path = sb.project_dir().join(".corvid/settings.json");
    std::fs::write(
        &path,
        "{\n  \"hooks\": {\n    \"importClaude\": true\n  }\n}\n",
    )
    .unwrap();
    project_hook(&sb, ".claude/settings.json", "touch ran");
    let out = fire_stop(&sb).await;
    assert!(!sb.project_dir().join("ran").exists());
    assert!(
        stderr(&out).contains(&format!(
            "{}:3:21: `hooks.importClaude` is read from your own settings file only (ignored)",
            path.display()
        )),
        "{}",
        stderr(&out)
    );
}
