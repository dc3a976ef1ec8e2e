//! Protected paths (issue 15 finding 2): a change to `.git/`, `.corvid/`, `.envrc`, `.vscode/`,
//! `.idea/` or `$CORVID_HOME` is asked in every mode but `yolo`, with the reason on the
//! request, through the real `write_file` and `edit` tools in a temp workspace.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::approvals::{
    Asked, Ran, asked, completed, one_call, run, turns, workspace_config, write,
};
use common::settings_env::env_of;
use corvid_core::settings::{
    Overrides, ProviderKind, SettingsFiles, Trust, agent_config, load_from,
};
use corvid_protocol::{ApprovalDecision, ApprovalMode};
use pretty_assertions::assert_eq;
use serde_json::json;

fn protected(call_id: &str, path: &str, why: &str, scope: &str) -> Asked {
    Asked {
        call_id: call_id.to_owned(),
        reason: Some(format!("`{path}` is a protected path: {why}")),
        always_scope: Some(scope.to_owned()),
    }
}

const GIT: &str = "changes there can run commands (git hooks, `core.fsmonitor` and other config)";

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git/hooks")).unwrap();
    std::fs::write(dir.path().join(".git/config"), "[core]\n").unwrap();
    dir
}

fn read(dir: &Path, rel: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(rel)).ok()
}

#[tokio::test]
async fn auto_edit_asks_before_writing_git_config() {
    let ws = workspace();
    let provider = turns(vec![
        write(
            "w1",
            ".git/config",
            "[core]\n\tfsmonitor = touch /tmp/pwned\n",
        ),
        write("w2", "src/main.rs", "fn main() {}\n"),
    ]);
    let config = workspace_config(
        &provider,
        ws.path(),
        ApprovalMode::AutoEdit,
        &Ran::default(),
    );
    let (_h, events) = run(config, |_| ApprovalDecision::RejectOnce).await;
    assert_eq!(
        asked(&events),
        vec![protected("w1", ".git/config", GIT, ".git/config")]
    );
    assert_eq!(read(ws.path(), ".git/config").as_deref(), Some("[core]\n"));
    assert_eq!(completed(&events), vec!["w2"]);
}

#[tokio::test]
async fn auto_edit_asks_before_writing_corvid_settings() {
    let ws = workspace();
    let provider = turns(vec![write(
        "w1",
        ".corvid/settings.json",
        r#"{"tools": {"approvalMode": "yolo"}}"#,
    )]);
    let config = workspace_config(
        &provider,
        ws.path(),
        ApprovalMode::AutoEdit,
        &Ran::default(),
    );
    let (_h, events) = run(config, |_| ApprovalDecision::AllowOnce).await;
    assert_eq!(
        asked(&events),
        vec![protected(
            "w1",
            ".corvid/settings.json",
            "corvid's project settings live there and decide what runs without asking",
            ".corvid/settings.json",
        )]
    );
    // Allowed once: the write went through.
    assert_eq!(completed(&events), vec!["w1"]);
}

#[tokio::test]
async fn protected_paths_are_asked_with_a_reason() {
    let ws = workspace();
    std::fs::create_dir_all(ws.path().join("sub/.git/hooks")).unwrap();
    std::fs::write(ws.path().join(".envrc"), "export A=1\n").unwrap();
    // A symlink must not hide `.git`: `docs/config` is `.git/config`.
    std::os::unix::fs::symlink(ws.path().join(".git"), ws.path().join("docs")).unwrap();
    let provider = turns(vec![
        write("w1", "sub/.git/hooks/post-checkout", "#!/bin/sh\nid\n"),
        one_call(
            "e1",
            "edit",
            json!({"file_path": ".envrc", "old_string": "A=1", "new_string": "A=2"}),
        ),
        write("w2", ".vscode/tasks.json", "{}"),
        write("w3", ".idea/workspace.xml", "<x/>"),
        write("w4", "docs/config", "[core]\n"),
        write("w5", ".GIT/config", "[core]\n"),
    ]);
    let config = workspace_config(
        &provider,
        ws.path(),
        ApprovalMode::AutoEdit,
        &Ran::default(),
    );
    let (_h, events) = run(config, |_| ApprovalDecision::RejectOnce).await;
    assert_eq!(
        asked(&events),
        vec![
            protected(
                "w1",
                "sub/.git/hooks/post-checkout",
                GIT,
                "sub/.git/hooks/post-checkout"
            ),
            protected(
                "e1",
                ".envrc",
                "direnv runs it as a shell script when you enter the folder",
                ".envrc"
            ),
            protected(
                "w2",
                ".vscode/tasks.json",
                "the editor runs tasks and launch commands from it",
                ".vscode/tasks.json"
            ),
            protected(
                "w3",
                ".idea/workspace.xml",
                "the IDE runs run configurations from it",
                ".idea/workspace.xml"
            ),
            // The tool resolves the link: the card and the scope name the real file.
            protected("w4", ".git/config", GIT, ".git/config"),
            protected("w5", ".GIT/config", GIT, ".GIT/config"),
        ]
    );
    assert_eq!(completed(&events), Vec::<String>::new());
    assert_eq!(read(ws.path(), ".envrc").as_deref(), Some("export A=1\n"));
}

#[tokio::test]
async fn yolo_writes_protected_paths_without_asking() {
    let ws = workspace();
    let provider = turns(vec![write("w1", ".git/config", "[user]\n")]);
    let config = workspace_config(&provider, ws.path(), ApprovalMode::Yolo, &Ran::default());
    let (_h, events) = run(config, |_| ApprovalDecision::RejectOnce).await;
    assert_eq!(asked(&events), vec![]);
    assert_eq!(read(ws.path(), ".git/config").as_deref(), Some("[user]\n"));
}

#[tokio::test]
async fn allow_always_on_a_protected_file_covers_that_file_only() {
    let ws = workspace();
    let provider = turns(vec![
        write("w1", ".git/config", "[a]\n"),
        write("w2", ".git/config", "[b]\n"),
        write("w3", ".git/hooks/pre-commit", "id\n"),
    ]);
    let config = workspace_config(
        &provider,
        ws.path(),
        ApprovalMode::AutoEdit,
        &Ran::default(),
    );
    let (_h, events) = run(config, |id| match id {
        "w1" => ApprovalDecision::AllowAlways,
        _ => ApprovalDecision::RejectOnce,
    })
    .await;
    let ids: Vec<String> = asked(&events).into_iter().map(|a| a.call_id).collect();
    assert_eq!(ids, vec!["w1", "w3"]);
    assert_eq!(read(ws.path(), ".git/config").as_deref(), Some("[b]\n"));
}

#[tokio::test]
async fn tools_protected_paths_adds_patterns() {
    let ws = workspace();
    let home = ws.path().join("corvid-home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("settings.json"),
        r#"{"tools": {"protectedPaths": ["secrets/", "*.pem", "!.idea/"]}}"#,
    )
    .unwrap();
    let env = env_of(&[("CORVID_HOME", home.to_str().unwrap())]);
    let files = SettingsFiles {
        user: Some(home.join("settings.json")),
        project: None,
    };
    let overrides = Overrides {
        provider: Some(ProviderKind::Demo),
        ..Overrides::default()
    };
    let loaded = load_from(
        &files,
        Trust::Untrusted,
        |k| env.get(k).cloned(),
        &overrides,
    )
    .unwrap();
    assert_eq!(
        loaded.settings.tools.protected_paths,
        vec!["secrets/", "*.pem", "!.idea/"]
    );
    let wired = agent_config(&loaded.settings, |k| env.get(k).cloned(), ws.path(), "s").unwrap();

    let provider = turns(vec![
        write("w1", "secrets/token.txt", "x"),
        write("w2", "deploy/key.pem", "x"),
        write("w3", ".idea/workspace.xml", "<x/>"),
        write("w4", "corvid-home/settings.json", "{}"),
        write("w5", "src/lib.rs", "x"),
    ]);
    let mut config = workspace_config(
        &provider,
        ws.path(),
        ApprovalMode::AutoEdit,
        &Ran::default(),
    );
    config.policy = wired.policy;
    let (_h, events) = run(config, |_| ApprovalDecision::RejectOnce).await;
    let by_settings = |id: &str, path: &str, entry: &str| {
        protected(
            id,
            path,
            &format!("it matches `{entry}` in `tools.protectedPaths`"),
            path,
        )
    };
    assert_eq!(
        asked(&events),
        vec![
            by_settings("w1", "secrets/token.txt", "secrets/"),
            by_settings("w2", "deploy/key.pem", "*.pem"),
            protected(
                "w4",
                "corvid-home/settings.json",
                "your corvid settings and sessions live there ($CORVID_HOME)",
                "corvid-home/settings.json"
            ),
        ]
    );
    assert_eq!(completed(&events), vec!["w3", "w5"]);
}

#[test]
fn a_bad_protected_path_pattern_names_the_file_and_the_entry() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("settings.json");
    std::fs::write(&path, r#"{"tools": {"protectedPaths": ["keys/["]}}"#).unwrap();
    let files = SettingsFiles {
        user: Some(path.clone()),
        project: None,
    };
    let err = load_from(&files, Trust::Untrusted, |_| None, &Overrides::default()).unwrap_err();
    let message = err.to_string();
    assert!(
        message.starts_with(&format!(
            "{}: settings key `tools.protectedPaths` is invalid: entry `keys/[` is not a valid glob",
            path.display()
        )),
        "{message}"
    );
}

#[tokio::test]
async fn auto_edit_in_home_asks_before_writing_startup_files() {
    // A session started in the home folder itself (HOME is the workspace).
    let home = tempfile::tempdir().unwrap();
    let home_dir = home.path().canonicalize().unwrap();
    let corvid_home = tempfile::tempdir().unwrap();
    let env = env_of(&[
        ("HOME", home_dir.to_str().unwrap()),
        ("CORVID_HOME", corvid_home.path().to_str().unwrap()),
    ]);
    let files = SettingsFiles {
        user: None,
        project: None,
    };
    let overrides = Overrides {
        provider: Some(ProviderKind::Demo),
        ..Overrides::default()
    };
    let loaded = load_from(
        &files,
        Trust::Untrusted,
        |k| env.get(k).cloned(),
        &overrides,
    )
    .unwrap();
    let wired = agent_config(&loaded.settings, |k| env.get(k).cloned(), &home_dir, "s").unwrap();

    let startup = [
        ".profile",
        ".bashrc",
        ".zshenv",
        ".config/fish/config.fish",
        ".config/git/config",
        ".gitconfig",
        ".ssh/config",
        ".ssh/authorized_keys",
        ".npmrc",
        ".aws/credentials",
        ".config/systemd/user/evil.service",
    ];
    let mut script: Vec<_> = startup
        .iter()
        .enumerate()
        .map(|(i, path)| write(&format!("w{i}"), path, "touch /tmp/pwned\n"))
        .collect();
    script.push(write("ok", "notes.txt", "fine\n"));
    let provider = turns(script);
    let mut config = workspace_config(
        &provider,
        &home_dir,
        ApprovalMode::AutoEdit,
        &Ran::default(),
    );
    config.policy = wired.policy;
    let (_h, events) = run(config, |_| ApprovalDecision::RejectOnce).await;
    let asked_paths: Vec<String> = asked(&events)
        .into_iter()
        .map(|a| a.always_scope.unwrap_or_default())
        .collect();
    assert_eq!(asked_paths, startup.to_vec());
    assert_eq!(
        asked(&events)[1].reason.as_deref(),
        Some("`.bashrc` is a protected path: your shell runs it when it starts (`~/.bashrc`)")
    );
    assert_eq!(completed(&events), vec!["ok"]);
    for path in startup {
        assert_eq!(read(&home_dir, path), None, "{path} was written");
    }
}

#[tokio::test]
async fn a_repositorys_own_dotfiles_are_not_protected_outside_the_home_folder() {
    // Protected relative to $HOME only: a dotfiles repository elsewhere edits freely
    // (except `.npmrc`, which npm reads in any project).
    let home = tempfile::tempdir().unwrap();
    let ws = workspace();
    let env = env_of(&[("HOME", home.path().to_str().unwrap())]);
    let files = SettingsFiles {
        user: None,
        project: None,
    };
    let overrides = Overrides {
        provider: Some(ProviderKind::Demo),
        ..Overrides::default()
    };
    let loaded = load_from(
        &files,
        Trust::Untrusted,
        |k| env.get(k).cloned(),
        &overrides,
    )
    .unwrap();
    let wired = agent_config(&loaded.settings, |k| env.get(k).cloned(), ws.path(), "s").unwrap();
    let provider = turns(vec![
        write("w1", ".bashrc", "alias ll='ls -l'\n"),
        write("w2", "ssh/.ssh/config", "Host x\n"),
        write("w3", ".npmrc", "script-shell=/tmp/x\n"),
    ]);
    let mut config = workspace_config(
        &provider,
        ws.path(),
        ApprovalMode::AutoEdit,
        &Ran::default(),
    );
    config.policy = wired.policy;
    let (_h, events) = run(config, |_| ApprovalDecision::RejectOnce).await;
    let ids: Vec<String> = asked(&events).into_iter().map(|a| a.call_id).collect();
    assert_eq!(ids, vec!["w3"]);
    assert_eq!(completed(&events), vec!["w1", "w2"]);
}
