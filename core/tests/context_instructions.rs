//! Project instructions: `AGENTS.md`-style files from `$CORVID_HOME`, the repository root and
//! every folder down to the working directory reach the model's system prompt, outermost
//! first, capped in size, and never from outside the repository.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::collect_task;
use common::scripted::*;
use corvid_core::agent::{AgentConfig, spawn_agent};
use corvid_core::context::instructions::{InstructionsFile, MAX_FILE_BYTES};
use corvid_core::settings::{
    Overrides, ProviderKind, Settings, SettingsFiles, Trust, agent_config, load_from,
};
use corvid_protocol::{CoreEvent, Op};
use pretty_assertions::assert_eq;

/// A user home with `$CORVID_HOME` in it, and a repository with a nested working directory.
struct Workspace {
    _dir: tempfile::TempDir,
    corvid_home: PathBuf,
    user_home: PathBuf,
    repo: PathBuf,
    cwd: PathBuf,
}

impl Workspace {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let user_home = root.join("home");
        let corvid_home = user_home.join(".corvid");
        let repo = root.join("work").join("repo");
        let cwd = repo.join("crates").join("app");
        for d in [&corvid_home, &cwd, &repo.join(".git")] {
            std::fs::create_dir_all(d).unwrap();
        }
        Self {
            _dir: dir,
            corvid_home,
            user_home,
            repo,
            cwd,
        }
    }

    fn write(&self, path: &Path, text: &str) -> PathBuf {
        std::fs::write(path, text).unwrap();
        path.to_owned()
    }

    fn env(&self) -> impl Fn(&str) -> Option<String> + '_ {
        move |k| match k {
            "CORVID_HOME" => Some(self.corvid_home.display().to_string()),
            "HOME" => Some(self.user_home.display().to_string()),
            _ => None,
        }
    }

    fn config(&self, settings: &Settings) -> AgentConfig {
        agent_config(settings, self.env(), &self.cwd, "s").unwrap()
    }
}

fn demo_settings() -> Settings {
    Settings {
        model: corvid_core::settings::ModelSettings {
            provider: Some(ProviderKind::Demo),
            ..Default::default()
        },
        ..Settings::default()
    }
}

/// The files named in the system prompt's instructions section, in order.
fn files_in_prompt(system: &str) -> Vec<String> {
    system
        .split("<instructions file=\"")
        .skip(1)
        .map(|rest| rest[..rest.find('"').unwrap()].to_owned())
        .collect()
}

/// The system prompt of the first request a session with `config` sends.
async fn first_system_prompt(mut config: AgentConfig) -> String {
    let provider = ScriptedProvider::new(vec![answer("ok")]);
    config.provider = Arc::new(provider.clone());
    let mut handle = spawn_agent(config);
    handle.submit(Op::user_turn("hi")).unwrap();
    collect_task(&mut handle).await;
    provider.requests()[0].system.clone()
}

#[tokio::test]
async fn nested_agents_files_are_all_in_the_first_request_outermost_first() {
    let ws = Workspace::new();
    let home = ws.write(
        &ws.corvid_home.join("AGENTS.md"),
        "Always answer in English.\n",
    );
    let root = ws.write(
        &ws.repo.join("AGENTS.md"),
        "Run cargo test before you finish.\n",
    );
    let middle = ws.write(
        &ws.repo.join("crates").join("AGENTS.md"),
        "Crates use thiserror.\n",
    );
    let own = ws.write(
        &ws.cwd.join("CORVID.md"),
        "The app crate has no unsafe code.\n",
    );
    let here = ws.write(&ws.cwd.join("AGENTS.md"), "This is the app crate.\n");
    // Above the repository root: not part of the project.
    ws.write(&ws.repo.parent().unwrap().join("AGENTS.md"), "NOT MINE\n");

    let config = ws.config(&demo_settings());
    let system = first_system_prompt(config).await;

    let expected = [&home, &root, &middle, &here, &own];
    assert_eq!(
        files_in_prompt(&system),
        expected
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
    );
    for text in [
        "Always answer in English.",
        "Run cargo test before you finish.",
        "Crates use thiserror.",
        "This is the app crate.",
        "The app crate has no unsafe code.",
    ] {
        assert!(system.contains(text), "{text:?} missing from:\n{system}");
    }
    assert!(!system.contains("NOT MINE"));
    assert!(
        system.starts_with("You are corvid"),
        "the default prompt comes first"
    );
}

#[tokio::test]
async fn a_claude_md_alone_is_used_and_one_beside_an_agents_md_is_not() {
    let ws = Workspace::new();
    let alone = ws.write(&ws.repo.join("CLAUDE.md"), "Claude-style rules.\n");
    let agents = ws.write(&ws.cwd.join("AGENTS.md"), "Agents rules.\n");
    ws.write(&ws.cwd.join("CLAUDE.md"), "SHADOWED BY AGENTS.md\n");
    ws.write(&ws.cwd.join("GEMINI.md"), "SHADOWED TOO\n");

    let config = ws.config(&demo_settings());
    assert_eq!(
        config.instructions.files,
        vec![
            InstructionsFile {
                path: alone.clone(),
                size: 20,
                included: 20
            },
            InstructionsFile {
                path: agents.clone(),
                size: 14,
                included: 14
            },
        ]
    );
    let system = first_system_prompt(config).await;
    assert!(system.contains("Claude-style rules."));
    assert!(!system.contains("SHADOWED"));
}

#[tokio::test]
async fn a_huge_file_is_capped_with_a_warning_naming_it() {
    let ws = Workspace::new();
    let line = "Prefer small modules with one job each.\n";
    let huge = ws.write(&ws.repo.join("AGENTS.md"), &line.repeat(5_000));
    let size = (line.len() * 5_000) as u64;

    let config = ws.config(&demo_settings());
    let included = config.instructions.files[0].included;
    assert!(included <= MAX_FILE_BYTES && included > MAX_FILE_BYTES - line.len());
    assert_eq!(included % line.len(), 0, "cut at a line end");
    assert_eq!(
        config.instructions.warnings,
        vec![format!(
            "{}: only the first {included} of its {size} bytes are in the model's prompt (at \
             most 16384 bytes per file and 32768 in all)",
            huge.display()
        )]
    );

    // The session tells the user before anything else.
    let provider = ScriptedProvider::new(vec![answer("ok")]);
    let mut config = config;
    config.provider = Arc::new(provider.clone());
    let mut handle = spawn_agent(config);
    let first = handle.next_event().await.unwrap();
    assert!(
        matches!(&first, CoreEvent::Warning { message } if message.contains(&huge.display().to_string())),
        "{first:?}"
    );
    handle.submit(Op::user_turn("hi")).unwrap();
    collect_task(&mut handle).await;
    let system = &provider.requests()[0].system;
    assert!(
        system.len() < 40_000,
        "the prompt holds {} bytes",
        system.len()
    );
    assert!(system.contains(&format!(
        "[... cut: the file has {size} bytes; only the first {included} are shown]"
    )));
}

#[tokio::test]
async fn a_link_out_of_the_repository_is_not_read() {
    let ws = Workspace::new();
    let secret = ws.write(&ws.user_home.join("secret.txt"), "TOP SECRET\n");
    let link = ws.repo.join("AGENTS.md");
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    // A link that stays inside the repository is fine.
    let docs = ws.repo.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    ws.write(&docs.join("agents.md"), "Inside the repo.\n");
    std::os::unix::fs::symlink(docs.join("agents.md"), ws.cwd.join("AGENTS.md")).unwrap();

    let config = ws.config(&demo_settings());
    assert_eq!(
        config.instructions.warnings,
        vec![format!(
            "{}: not read: it leads to {}, outside the repository {}",
            link.display(),
            secret.display(),
            ws.repo.display()
        )]
    );
    let system = first_system_prompt(config).await;
    assert!(!system.contains("TOP SECRET"));
    assert!(system.contains("Inside the repo."));
}

#[tokio::test]
async fn context_file_names_replaces_the_standard_names() {
    let ws = Workspace::new();
    ws.write(&ws.repo.join("AGENTS.md"), "STANDARD NAME\n");
    let rules = ws.write(&ws.repo.join("RULES.md"), "Custom rules.\n");
    let notes = ws.write(&ws.cwd.join("NOTES.md"), "Custom notes.\n");
    let user = ws.write(
        &ws.corvid_home.join("settings.json"),
        r#"{ "model": {"provider": "demo"}, "context": { "fileNames": ["RULES.md", "NOTES.md"] } }"#,
    );
    let files = SettingsFiles {
        user: Some(user),
        project: None,
    };
    let settings = load_from(&files, Trust::Untrusted, ws.env(), &Overrides::default())
        .unwrap()
        .settings;

    let config = ws.config(&settings);
    let loaded: Vec<&Path> = config
        .instructions
        .files
        .iter()
        .map(|f| f.path.as_path())
        .collect();
    assert_eq!(loaded, vec![rules.as_path(), notes.as_path()]);
    let system = first_system_prompt(config).await;
    assert!(!system.contains("STANDARD NAME"));
}

#[test]
fn a_project_file_cannot_choose_the_instructions_file_names() {
    let ws = Workspace::new();
    let project = ws.repo.join(".corvid").join("settings.json");
    std::fs::create_dir_all(project.parent().unwrap()).unwrap();
    ws.write(&project, r#"{"context": {"fileNames": ["settings.json"]}}"#);
    let files = SettingsFiles {
        user: None,
        project: Some(project.clone()),
    };
    let loaded = load_from(&files, Trust::Trusted, ws.env(), &Overrides::default()).unwrap();
    assert_eq!(loaded.settings.context.file_names, None);
    assert_eq!(
        loaded.warnings,
        vec![format!(
            "{}: settings key `context.fileNames` can only be set in your user settings, not in \
             a project file (ignored)",
            project.display()
        )]
    );
}

#[test]
fn a_context_file_name_with_a_folder_is_an_error_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("settings.json");
    std::fs::write(&user, r#"{"context": {"fileNames": ["../outside.md"]}}"#).unwrap();
    let files = SettingsFiles {
        user: Some(user.clone()),
        project: None,
    };
    let err = load_from(&files, Trust::Untrusted, |_| None, &Overrides::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: settings key `context.fileNames` is invalid: entry \"../outside.md\" must be a \
             plain file name such as \"AGENTS.md\" (no folders)",
            user.display()
        )
    );
}

#[tokio::test]
async fn without_instructions_files_the_system_prompt_is_the_default_one() {
    let ws = Workspace::new();
    let config = ws.config(&demo_settings());
    assert_eq!(config.instructions.files, vec![]);
    let system = first_system_prompt(config).await;
    assert_eq!(system, corvid_core::agent::default_system_prompt(&ws.cwd));
}
