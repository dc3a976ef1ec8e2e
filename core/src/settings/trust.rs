//! Trusted folders: a folder's own configuration (its `.corvid/settings.json`; later its MCP
//! servers, hooks and agent files) applies only where the user said so. A cloned repository
//! is someone else's code, and its settings must not run or redirect anything unasked.
//!
//! The list lives in `$CORVID_HOME/trusted_folders.json`, separate from the hand-edited
//! `settings.json` so corvid can rewrite it (atomically, `0600`) without touching comments.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::SettingsError;

/// The file in `$CORVID_HOME` listing the folders the user trusts.
pub const TRUSTED_FOLDERS_FILE: &str = "trusted_folders.json";

/// Whether a folder's own configuration may apply. Code loading any project-provided
/// configuration asks this (through [`super::Loaded::trust`]) before reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Trust {
    /// The folder or a parent is trusted, or this run was started with `--trust`.
    Trusted,
    /// Project configuration is ignored (with a warning naming the file).
    #[default]
    Untrusted,
}

/// What this run grants beyond the folders the user trusted before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TrustGrant {
    /// Only the remembered folders are trusted.
    #[default]
    Remembered,
    /// `--trust`: the working folder is trusted for this run (nothing is remembered).
    ThisRun,
}

/// The user's trusted folders, as read from `$CORVID_HOME/trusted_folders.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct TrustedFolders {
    path: PathBuf,
    folders: Vec<PathBuf>,
}

impl TrustedFolders {
    /// Reads the list under `corvid_home`; a missing file is an empty list.
    pub fn load(corvid_home: &Path) -> Result<Self, SettingsError> {
        let path = corvid_home.join(TRUSTED_FOLDERS_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Self {
                    path,
                    folders: Vec::new(),
                });
            }
            Err(source) => return Err(SettingsError::Read { path, source }),
        };
        let folders = parse(&path, &text)?;
        Ok(Self { path, folders })
    }

    /// Whether `folder` or one of its parents is trusted. Paths are compared canonical and
    /// component by component, so trusting `/src/app` trusts neither `/src/app-evil` nor
    /// `/src/app/../app-evil`; a folder that cannot be resolved is not trusted.
    pub fn trusts(&self, folder: &Path) -> bool {
        let Ok(folder) = folder.canonicalize() else {
            return false;
        };
        self.folders
            .iter()
            .any(|trusted| folder.starts_with(trusted))
    }

    /// Adds `folder` (made absolute and canonical) and rewrites the file atomically, `0600`.
    pub fn remember(&mut self, folder: &Path) -> Result<(), SettingsError> {
        let folder = canonical(folder);
        if !folder.is_absolute() {
            return Err(SettingsError::InvalidValue {
                origin: self.path.display().to_string(),
                key: "trustedFolders".into(),
                message: format!("cannot hold the relative path {}", folder.display()),
            });
        }
        if !self.folders.contains(&folder) {
            self.folders.push(folder);
        }
        self.write()
    }

    /// The file this list is stored in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write(&self) -> Result<(), SettingsError> {
        let folders: Vec<String> = self
            .folders
            .iter()
            .map(|f| f.display().to_string())
            .collect();
        let mut text = serde_json::to_string_pretty(&serde_json::json!({
            "trustedFolders": folders,
        }))
        .unwrap_or_default();
        text.push('\n');
        let write_error = |source| SettingsError::Write {
            path: self.path.clone(),
            source,
        };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(write_error)?;
        // A temporary file in the same folder, renamed over the list: a crash leaves the old
        // list or the new one, never half of one. tempfile creates it 0600.
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(write_error)?;
        tmp.write_all(text.as_bytes()).map_err(write_error)?;
        tmp.as_file().sync_all().map_err(write_error)?;
        tmp.persist(&self.path).map_err(|e| write_error(e.error))?;
        Ok(())
    }
}

/// The trust decision for `folder` in this run.
pub fn decide(
    folder: &Path,
    grant: TrustGrant,
    corvid_home: Option<&Path>,
) -> Result<Trust, SettingsError> {
    if grant == TrustGrant::ThisRun {
        return Ok(Trust::Trusted);
    }
    let Some(home) = corvid_home else {
        return Ok(Trust::Untrusted);
    };
    Ok(if TrustedFolders::load(home)?.trusts(folder) {
        Trust::Trusted
    } else {
        Trust::Untrusted
    })
}

/// `{"trustedFolders": ["/abs", ...]}`; relative entries are an error (they would trust a
/// different folder depending on where corvid starts).
fn parse(path: &Path, text: &str) -> Result<Vec<PathBuf>, SettingsError> {
    let invalid = |message: String| SettingsError::InvalidValue {
        origin: path.display().to_string(),
        key: "trustedFolders".into(),
        message,
    };
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let root: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| invalid(format!("is not valid JSON ({e}); fix or delete the file")))?;
    let Some(list) = root.get("trustedFolders") else {
        return Ok(Vec::new());
    };
    let Some(list) = list.as_array() else {
        return Err(invalid("must be a list of absolute folder paths".into()));
    };
    list.iter()
        .map(|entry| match entry.as_str().map(PathBuf::from) {
            Some(folder) if folder.is_absolute() => Ok(canonical(&folder)),
            _ => Err(invalid(format!(
                "must hold absolute folder paths, found {entry}"
            ))),
        })
        .collect()
}

/// The canonical form when the folder exists, so symlinked and `..` spellings compare equal.
fn canonical(folder: &Path) -> PathBuf {
    folder
        .canonicalize()
        .unwrap_or_else(|_| folder.to_path_buf())
}
