//! The configured secret values a recording must never hold: the model keys, read from the
//! variables the settings name (`model.apiKeyEnv`, `fastModel.apiKeyEnv`, and the default
//! provider keys). A key pasted into a prompt or printed by a tool reaches the model as it is,
//! but the session file and everything shown from it (`sessions list`, `sessions show`, a
//! resumed transcript) hold `[REDACTED:<variable>]` instead.

use corvid_providers::Redactor;

/// Secret values by the variable they came from. Never shown by `Debug`.
#[derive(Clone, Default)]
pub struct RecordedSecrets {
    named: Vec<(String, String)>,
}

impl std::fmt::Debug for RecordedSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RecordedSecrets({} values)", self.named.len())
    }
}

impl RecordedSecrets {
    /// The values of the variables `names` in `env`, each labelled with its variable.
    pub fn from_env<'a>(
        names: impl IntoIterator<Item = &'a str>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Self {
        let mut named: Vec<(String, String)> = Vec::new();
        for name in names {
            if named.iter().any(|(n, _)| n == name) {
                continue;
            }
            if let Some(value) = env(name).filter(|v| !v.trim().is_empty()) {
                named.push((name.to_owned(), value));
            }
        }
        Self { named }
    }

    /// The redactor for a session file's lines, which are JSON: each value is looked for
    /// both as it is and as JSON writes it inside a string.
    pub(super) fn redactor(&self) -> Redactor {
        Redactor::labelled(self.named.iter().flat_map(|(name, value)| {
            let escaped = serde_json::to_string(value)
                .ok()
                .and_then(|s| Some(s.strip_prefix('"')?.strip_suffix('"')?.to_owned()));
            std::iter::once((name.as_str(), value.clone()))
                .chain(escaped.filter(|e| e != value).map(|e| (name.as_str(), e)))
        }))
    }
}
