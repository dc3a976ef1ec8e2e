//! User-level-only keys a trusted project's file cannot set: `web.allowPrivate` (issue 31):
//! only the user's own settings may open private hosts to `web_fetch`; and `telemetry`
//! (issue 33): a repository must not make corvid export its sessions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use corvid_core::settings::{Overrides, SettingsFiles, Trust, load_from};
use pretty_assertions::assert_eq;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn load(user: &str, project: &str) -> (Vec<String>, Vec<String>, String) {
    let dir = tempfile::tempdir().unwrap();
    let files = SettingsFiles {
        user: Some(dir.path().join("home/settings.json")),
        project: Some(dir.path().join("project/.corvid/settings.json")),
    };
    write(files.user.as_ref().unwrap(), user);
    write(files.project.as_ref().unwrap(), project);
    let loaded = load_from(&files, Trust::Trusted, |_| None, &Overrides::default()).unwrap();
    let project_path = files.project.as_ref().unwrap().display().to_string();
    (
        loaded.settings.web.allow_private,
        loaded.warnings,
        project_path,
    )
}

#[test]
fn a_project_settings_file_cannot_set_web_allow_private() {
    let (allowed, warnings, file) = load(
        r#"{"web": {"allowPrivate": ["127.0.0.1:8080"]}}"#,
        r#"{"web": {"allowPrivate": ["169.254.0.0/16", "10.0.0.0/8"]}}"#,
    );
    assert_eq!(allowed, vec!["127.0.0.1:8080".to_owned()]);
    assert_eq!(
        warnings,
        vec![format!(
            "{file}: settings key `web.allowPrivate` can only be set in your user settings, \
             not in a project file (ignored)"
        )]
    );
}

#[test]
fn an_invalid_web_allow_private_entry_is_an_error_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let files = SettingsFiles {
        user: Some(dir.path().join("settings.json")),
        project: None,
    };
    write(
        files.user.as_ref().unwrap(),
        r#"{"web": {"allowPrivate": ["http://10.0.0.1/"]}}"#,
    );
    let err = load_from(&files, Trust::Trusted, |_| None, &Overrides::default()).unwrap_err();
    assert!(err.to_string().contains("web.allowPrivate"), "{err}");
}

#[test]
fn a_project_telemetry_block_is_ignored_with_a_warning_and_the_users_is_no_unknown_key() {
    let (_, warnings, file) = load(
        r#"{"telemetry": {"enabled": false}}"#,
        r#"{"telemetry": {"enabled": true, "logPrompts": true}}"#,
    );
    assert_eq!(
        warnings,
        vec![format!(
            "{file}: settings key `telemetry` can only be set in your user settings, \
             not in a project file (ignored)"
        )]
    );
}
