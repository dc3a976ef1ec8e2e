//! Settings loaded from an in-memory environment only (no settings files), for the tests of
//! provider resolution and agent wiring.

use std::collections::HashMap;

use corvid_core::settings::{Overrides, Settings, SettingsFiles, Trust, load_from};

/// An environment from `(name, value)` pairs.
pub fn env_of(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Loads with no files at all, only env and flags.
pub fn settings(env: &HashMap<String, String>, overrides: &Overrides) -> Settings {
    let files = SettingsFiles {
        user: None,
        project: None,
    };
    load_from(&files, Trust::Untrusted, |k| env.get(k).cloned(), overrides)
        .unwrap()
        .settings
}
