//! Reading `$CORVID_HOME/trusted_folders.json`: the folders the user trusts, the project
//! configuration files and the project hook handlers accepted in them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::SettingsError;
use super::trust::canonical;

pub(super) type Parsed = (Vec<PathBuf>, BTreeMap<PathBuf, String>, BTreeSet<String>);

/// `{"trustedFolders": ["/abs", ...], "acceptedFiles": {"/abs/file": "sha256:hex"},
/// "acceptedHooks": ["sha256:hex"]}`; relative entries are an error (they would trust a
/// different folder depending on where corvid starts). `acceptedFiles` and `acceptedHooks`
/// are missing from lists written before they existed.
pub(super) fn parse(path: &Path, text: &str) -> Result<Parsed, SettingsError> {
    let invalid = |key: &str, message: String| SettingsError::InvalidValue {
        origin: path.display().to_string(),
        key: key.into(),
        message,
    };
    if text.trim().is_empty() {
        return Ok((Vec::new(), BTreeMap::new(), BTreeSet::new()));
    }
    let root: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        invalid(
            "trustedFolders",
            format!("is not valid JSON ({e}); fix or delete the file"),
        )
    })?;
    let folders = match root.get("trustedFolders") {
        None => Vec::new(),
        Some(serde_json::Value::Array(list)) => list
            .iter()
            .map(|entry| match entry.as_str().map(PathBuf::from) {
                Some(folder) if folder.is_absolute() => Ok(canonical(&folder)),
                _ => Err(invalid(
                    "trustedFolders",
                    format!("must hold absolute folder paths, found {entry}"),
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(invalid(
                "trustedFolders",
                "must be a list of absolute folder paths".into(),
            ));
        }
    };
    let accepted = match root.get("acceptedFiles") {
        None => BTreeMap::new(),
        Some(serde_json::Value::Object(map)) => map
            .iter()
            .map(|(file, digest)| {
                let digest = digest
                    .as_str()
                    .and_then(|d| d.strip_prefix("sha256:"))
                    .filter(|d| d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit()));
                match digest {
                    Some(digest) if Path::new(file).is_absolute() => {
                        Ok((PathBuf::from(file), digest.to_ascii_lowercase()))
                    }
                    _ => Err(invalid(
                        "acceptedFiles",
                        format!(
                            "must map absolute file paths to \"sha256:<64 hex digits>\", \
                             found {file:?}"
                        ),
                    )),
                }
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(invalid(
                "acceptedFiles",
                "must be an object of file paths and digests".into(),
            ));
        }
    };
    let hooks = match root.get("acceptedHooks") {
        None => BTreeSet::new(),
        Some(serde_json::Value::Array(list)) => list
            .iter()
            .map(|pin| {
                pin.as_str()
                    .and_then(|p| p.strip_prefix("sha256:"))
                    .filter(|d| d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit()))
                    .map(str::to_ascii_lowercase)
                    .ok_or_else(|| {
                        invalid(
                            "acceptedHooks",
                            format!("must hold \"sha256:<64 hex digits>\" pins, found {pin}"),
                        )
                    })
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(invalid(
                "acceptedHooks",
                "must be a list of \"sha256:<64 hex digits>\" pins".into(),
            ));
        }
    };
    Ok((folders, accepted, hooks))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn approved_hook_pins_are_read_and_malformed_ones_are_an_error() {
        let pin = "ab".repeat(32);
        let text = format!(r#"{{"trustedFolders": [], "acceptedHooks": ["sha256:{pin}"]}}"#);
        let (_, _, hooks) = parse(Path::new("/h/trusted_folders.json"), &text).unwrap();
        assert!(hooks.contains(&pin));
        let err = parse(
            Path::new("/h/trusted_folders.json"),
            r#"{"acceptedHooks": ["sha256:abc"]}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("acceptedHooks"), "{err}");
    }
}
