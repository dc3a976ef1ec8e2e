//! `checkpoints.*` in a settings file (issue 26).

use serde_json::Value;

use super::Validator;
use crate::checkpoints::CheckpointSettings;
use crate::settings::SettingsError;

/// The `checkpoints.*` values one file sets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(in crate::settings) struct CheckpointsPartial {
    pub enabled: Option<bool>,
    pub max_file_bytes: Option<u64>,
    pub max_bytes: Option<u64>,
}

impl CheckpointsPartial {
    /// Lets every value `higher` sets win.
    pub fn merge(&mut self, higher: CheckpointsPartial) {
        self.enabled = higher.enabled.or(self.enabled);
        self.max_file_bytes = higher.max_file_bytes.or(self.max_file_bytes);
        self.max_bytes = higher.max_bytes.or(self.max_bytes);
    }

    /// The defaults with the set values applied.
    pub fn apply(self, s: &mut CheckpointSettings) {
        if let Some(v) = self.enabled {
            s.enabled = v;
        }
        if let Some(v) = self.max_file_bytes {
            s.max_file_bytes = v;
        }
        if let Some(v) = self.max_bytes {
            s.max_bytes = v;
        }
    }
}

impl Validator<'_> {
    pub(super) fn checkpoints(&mut self, value: &Value) -> Result<(), SettingsError> {
        for (k, v) in self.section("checkpoints", value)? {
            let key = format!("checkpoints.{k}");
            match k.as_str() {
                "enabled" => self.out.checkpoints.enabled = self.boolean(&key, v)?,
                "maxFileBytes" => self.out.checkpoints.max_file_bytes = self.number(&key, v)?,
                "maxBytes" => {
                    self.out.checkpoints.max_bytes = match self.number::<u64>(&key, v)? {
                        Some(0) => return Err(self.invalid(&key, "0", "at least 1")),
                        n => n,
                    }
                }
                _ => self.unknown(&key),
            }
        }
        Ok(())
    }
}
