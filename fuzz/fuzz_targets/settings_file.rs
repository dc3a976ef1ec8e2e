//! The settings reader (JSON with comments, validated key by key): never panics.
#![no_main]

use std::sync::OnceLock;

use corvid_core::settings::{Overrides, SettingsFiles, Trust, load_from};
use libfuzzer_sys::fuzz_target;

fn dir() -> &'static tempfile::TempDir {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("a temporary folder"))
}

fuzz_target!(|data: &[u8]| {
    let path = dir().path().join("settings.json");
    std::fs::write(&path, data).expect("writing the settings file");
    let files = SettingsFiles {
        user: Some(path),
        project: None,
    };
    let _ = load_from(&files, Trust::Untrusted, |_| None, &Overrides::default());
});
