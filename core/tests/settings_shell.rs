//! The shell's settings: `tools.sandbox` and `tools.shellEnv`, read from files and wired into
//! the session policy (with the key variables the model settings name dropped).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsStr;

use corvid_core::settings::{
    FastModelSetting, FastModelSpec, Overrides, ProviderKind, Settings, SettingsFiles,
    ShellEnvSettings, Trust, agent_config, load_from,
};
use corvid_tools::shell::SandboxLevel;
use pretty_assertions::assert_eq;

fn load_user(text: &str) -> Result<Settings, String> {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("settings.json");
    std::fs::write(&user, text).unwrap();
    let files = SettingsFiles {
        user: Some(user),
        project: None,
    };
    load_from(&files, Trust::Untrusted, |_| None, &Overrides::default())
        .map(|loaded| loaded.settings)
        .map_err(|e| {
            e.to_string()
                .replace(&dir.path().display().to_string(), "<dir>")
        })
}

#[test]
fn the_sandbox_defaults_to_workspace_write_with_no_env_overrides() {
    let settings = Settings::default();
    assert_eq!(settings.tools.sandbox, SandboxLevel::WorkspaceWrite);
    assert_eq!(settings.tools.shell_env, ShellEnvSettings::default());
}

#[test]
fn the_sandbox_level_and_shell_env_are_read_from_a_file() {
    let settings = load_user(
        r#"{"tools": {
            "sandbox": "read-only",
            "shellEnv": {"include": ["SSH_AUTH_SOCK", "GPG_*"], "exclude": ["CORP_*"]}
        }}"#,
    )
    .unwrap();
    assert_eq!(settings.tools.sandbox, SandboxLevel::ReadOnly);
    assert_eq!(
        settings.tools.shell_env,
        ShellEnvSettings {
            include: vec!["SSH_AUTH_SOCK".into(), "GPG_*".into()],
            exclude: vec!["CORP_*".into()],
        }
    );
    let off = load_user(r#"{"tools": {"sandbox": "off"}}"#).unwrap();
    assert_eq!(off.tools.sandbox, SandboxLevel::Off);
}

#[test]
fn a_bad_sandbox_level_or_env_pattern_is_an_error_naming_the_key() {
    assert_eq!(
        load_user(r#"{"tools": {"sandbox": "none"}}"#).unwrap_err(),
        "<dir>/settings.json: settings key `tools.sandbox` is `none`; expected `off`, \
         `workspace-write` or `read-only`"
    );
    let err = load_user(r#"{"tools": {"shellEnv": {"include": ["["]}}}"#).unwrap_err();
    assert!(
        err.starts_with(
            "<dir>/settings.json: settings key `tools.shellEnv` is invalid: `[` is not a valid \
             name pattern"
        ),
        "{err}"
    );
    assert_eq!(
        load_user(r#"{"tools": {"shellEnv": {"include": "SSH_AUTH_SOCK"}}}"#).unwrap_err(),
        "<dir>/settings.json: settings key `tools.shellEnv.include` must be a list of strings, \
         found the string \"SSH_AUTH_SOCK\""
    );
}

#[test]
fn the_shell_policy_drops_the_key_variables_the_model_settings_name() {
    let mut settings = Settings::default();
    settings.model.provider = Some(ProviderKind::Demo);
    settings.model.api_key_env = Some("LLM_CREDENTIAL".into());
    settings.fast_model = Some(FastModelSetting::Model(FastModelSpec {
        provider: Some(ProviderKind::Demo),
        name: "fast".into(),
        base_url: None,
        api_key_env: Some("FAST_CREDENTIAL".into()),
    }));
    settings.tools.sandbox = SandboxLevel::ReadOnly;
    settings.tools.shell_env.include = vec!["SSH_AUTH_SOCK".into()];
    let dir = tempfile::tempdir().unwrap();

    let config = agent_config(&settings, |_| None, dir.path(), "s").unwrap();

    let shell = &config.policy.shell;
    assert_eq!(shell.sandbox, SandboxLevel::ReadOnly);
    let kept: Vec<&str> = [
        "PATH",
        "LLM_CREDENTIAL",
        "FAST_CREDENTIAL",
        "OPENAI_API_KEY",
        "SSH_AUTH_SOCK",
    ]
    .into_iter()
    .filter(|name| shell.env.keeps(OsStr::new(name)))
    .collect();
    assert_eq!(kept, vec!["PATH", "SSH_AUTH_SOCK"]);
}
