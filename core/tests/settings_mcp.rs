//! `mcpServers` and `mcp.*` across the user and project files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use corvid_core::settings::{Loaded, Overrides, SettingsFiles, Trust, load_from};
use pretty_assertions::assert_eq;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Loads a user file and a trusted project file with these texts.
fn load(user: &str, project: &str) -> Result<Loaded, String> {
    let dir = tempfile::tempdir().unwrap();
    let files = SettingsFiles {
        user: Some(dir.path().join("home/settings.json")),
        project: Some(dir.path().join("project/.corvid/settings.json")),
    };
    write(files.user.as_ref().unwrap(), user);
    write(files.project.as_ref().unwrap(), project);
    let tmp = dir.path().display().to_string();
    let mut loaded = load_from(&files, Trust::Trusted, |_| None, &Overrides::default())
        .map_err(|e| e.to_string().replace(&tmp, "<tmp>"))?;
    for warning in &mut loaded.warnings {
        *warning = warning.replace(&tmp, "<tmp>");
    }
    Ok(loaded)
}

#[test]
fn project_servers_join_the_users_and_replace_those_of_the_same_name() {
    let loaded = load(
        r#"{"mcpServers": {"a": {"command": "user-a"}, "b": {"command": "user-b"}},
            "mcp": {"startupTimeoutMs": 500}}"#,
        r#"{"mcpServers": {"b": {"command": "project-b"}, "c": {"url": "http://127.0.0.1:1/mcp"}}}"#,
    )
    .unwrap();
    let servers: Vec<(String, String)> = loaded
        .settings
        .mcp
        .servers
        .iter()
        .map(|s| (s.name.clone(), format!("{:?}", s.transport)))
        .collect();
    assert_eq!(servers.len(), 3);
    assert!(servers[1].1.contains("project-b"), "{servers:?}");
    assert_eq!(loaded.settings.mcp.startup_wait, Duration::from_millis(500));
}

#[test]
fn a_project_file_may_not_trust_its_servers() {
    let loaded = load(
        "{}",
        r#"{"mcpServers": {"p": {"command": "srv", "trust": true}}}"#,
    )
    .unwrap();
    assert!(!loaded.settings.mcp.servers[0].trust);
    assert_eq!(
        loaded.warnings,
        [
            "<tmp>/project/.corvid/settings.json: settings key `mcpServers.*.trust` can only be set \
          in your user settings, not in a project file (ignored)"
        ]
    );
}

#[test]
fn a_project_server_that_names_a_model_key_is_dropped_and_one_naming_its_own_token_is_kept() {
    let loaded = load(
        "{}",
        r#"{"mcpServers": {
              "leak": {"command": "srv", "env": {"K": "${OPENAI_API_KEY}"}},
              "bare": {"httpUrl": "http://127.0.0.1:9/mcp",
                       "headers": {"Authorization": "Bearer $ANTHROPIC_API_KEY"}},
              "gh": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}}
           }}"#,
    )
    .unwrap();
    let names: Vec<&str> = loaded
        .settings
        .mcp
        .servers
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(names, ["gh"]);
    assert_eq!(
        loaded.warnings,
        [
            "<tmp>/project/.corvid/settings.json: settings key `mcpServers.* naming \
             OPENAI_API_KEY or ANTHROPIC_API_KEY` can only be set in your user settings, not in \
             a project file (ignored)"
        ]
    );
    // The user's own settings may hand a server a model key.
    let loaded = load(
        r#"{"mcpServers": {"mine": {"command": "srv", "env": {"K": "${OPENAI_API_KEY}"}}}}"#,
        "{}",
    )
    .unwrap();
    assert_eq!(loaded.settings.mcp.servers.len(), 1);
}

#[test]
fn a_bad_server_entry_names_its_file_and_key() {
    let err = load(r#"{"mcpServers": {"x": {"command": 5}}}"#, "{}").unwrap_err();
    assert_eq!(
        err,
        "<tmp>/home/settings.json: settings key `mcpServers.x.command` must be a string, found a number"
    );
}

#[test]
fn a_project_file_may_not_make_corvid_believe_its_servers_hints() {
    let loaded = load(
        r#"{"mcpServers": {"mine": {"command": "srv", "trustHints": true}}}"#,
        r#"{"mcpServers": {"p": {"command": "srv", "trustHints": true}}}"#,
    )
    .unwrap();
    let hints: Vec<(&str, bool)> = loaded
        .settings
        .mcp
        .servers
        .iter()
        .map(|s| (s.name.as_str(), s.trust_hints))
        .collect();
    assert_eq!(hints, [("mine", true), ("p", false)]);
    assert_eq!(
        loaded.warnings,
        [
            "<tmp>/project/.corvid/settings.json: settings key `mcpServers.*.trustHints` can only \
             be set in your user settings, not in a project file (ignored)"
        ]
    );
}

#[test]
fn mcp_tool_caps_default_to_100_per_server_and_300_in_all_and_can_be_set() {
    let loaded = load("{}", "{}").unwrap();
    assert_eq!(
        loaded.settings.mcp.tool_limits,
        corvid_mcp::ToolLimits {
            per_server: 100,
            total: 300
        }
    );
    let loaded = load(
        r#"{"mcp": {"maxToolsPerServer": 20, "maxTools": 50}}"#,
        "{}",
    )
    .unwrap();
    assert_eq!(
        loaded.settings.mcp.tool_limits,
        corvid_mcp::ToolLimits {
            per_server: 20,
            total: 50
        }
    );
}
