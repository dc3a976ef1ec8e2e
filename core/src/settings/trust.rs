//! Trusted folders: a folder's own configuration (its `.corvid/settings.json` with its MCP
//! servers, its agent files; later its hooks and commands) applies only where the user said
//! so. A cloned repository is someone else's code, and its settings must not run or redirect
//! anything unasked.
//!
//! Trusting a folder is not a blank cheque for whatever appears in it later: a sandboxed
//! command may write `.corvid/settings.json` into a trusted folder that had none. So the
//! record of a trusted folder pins the content (SHA-256) of each project configuration file
//! the user accepted, and a file that is new or changed since is ignored, with a warning,
//! until the user accepts it again (the terminal UI asks; elsewhere `--trust` applies it for
//! one run). A `--trust` run pins the files its folders hold when corvid starts the same way.
//!
//! A project's hooks are pinned finer still: each handler the user approved (`corvid hooks
//! trust`) is listed by its pin (see `corvid_core::hooks::review`), so a trusted folder's new
//! or changed hook runs only once the user has seen that exact command.
//!
//! The list lives in `$CORVID_HOME/trusted_folders.json`, separate from the hand-edited
//! `settings.json` so corvid can rewrite it (atomically, `0600`) without touching comments.
//! A list written before the pins existed still loads; its folders stay trusted but none of
//! their files is accepted, so each is asked about (or warned about) once.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::Digest;

use super::SettingsError;

/// The file in `$CORVID_HOME` listing the folders the user trusts.
pub const TRUSTED_FOLDERS_FILE: &str = "trusted_folders.json";

/// Whether a folder's own configuration may apply. Code loading any project-provided
/// configuration asks [`ProjectTrust::verdict`] before using it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Trust {
    /// The folder or a parent is trusted, or this run was started with `--trust`.
    Trusted,
    /// Project configuration is ignored (with a warning naming the file).
    #[default]
    Untrusted,
}

/// What this run grants beyond the folders the user trusted before.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum TrustGrant {
    /// Only the remembered folders are trusted.
    #[default]
    Remembered,
    /// `--trust` for a run that reads its configuration once, at start: the working folder
    /// is trusted with what it holds now (nothing is remembered).
    ThisRun,
    /// `--trust [DIR]...` for a run that reads configuration again later (`--acp` opens
    /// sessions for as long as it runs): these project folders are trusted with the files
    /// they held when corvid started; a file appearing or changing later is not.
    Folders(GrantedFolders),
}

/// The project folders of a `--trust` run and the configuration files they held at start.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GrantedFolders {
    folders: Vec<PathBuf>,
    accepted: BTreeMap<PathBuf, String>,
}

impl GrantedFolders {
    /// Grants `folders` (canonical project folders) with `files` as accepted.
    pub(super) fn new(folders: Vec<PathBuf>, files: &[ConfigFile]) -> Self {
        Self {
            folders,
            accepted: files
                .iter()
                .map(|f| (config_key(&f.path), f.digest.clone()))
                .collect(),
        }
    }
}

/// One of a project's own configuration files and the digest of its content as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigFile {
    pub path: PathBuf,
    /// Lower-case hex SHA-256 of the content.
    pub digest: String,
}

impl ConfigFile {
    /// The file at `path` with `content`.
    pub fn new(path: &Path, content: &[u8]) -> Self {
        Self {
            path: path.to_owned(),
            digest: digest(content),
        }
    }
}

/// Lower-case hex SHA-256 of `bytes`.
pub(crate) fn digest(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The key a file is accepted under: its folder canonical (so `..` and linked spellings of
/// the folder agree), its own name as is (a link is accepted as that link, by content).
fn config_key(path: &Path) -> PathBuf {
    match (path.parent().map(Path::canonicalize), path.file_name()) {
        (Some(Ok(dir)), Some(name)) => dir.join(name),
        _ => path.to_owned(),
    }
}

/// Which project configuration files of one session apply.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProjectTrust {
    /// The folder whose `.corvid/` holds the project's configuration.
    pub folder: Option<PathBuf>,
    /// The folder-level decision.
    pub trust: Trust,
    accepted: Accepted,
    /// The pins of the project hook handlers the user approved (`corvid hooks trust`), each
    /// a digest that includes its folder; `--trust` approves none of them.
    hook_pins: BTreeSet<String>,
}

/// The files of a trusted folder that apply.
#[derive(Debug, Clone, PartialEq)]
enum Accepted {
    /// Every file: the caller decided (tests, or `--trust` read once at start).
    All,
    /// Files whose content digest is listed under their key.
    Only(BTreeMap<PathBuf, String>),
}

impl Default for Accepted {
    fn default() -> Self {
        Self::Only(BTreeMap::new())
    }
}

/// What may be done with one project configuration file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It applies.
    Apply,
    /// Its folder is not trusted.
    NotTrusted,
    /// Its folder is trusted but this content was never accepted (new or changed since).
    Unreviewed,
}

impl ProjectTrust {
    /// `trust` for every file of `folder`, for callers that decided themselves.
    pub fn vouched(folder: Option<PathBuf>, trust: Trust) -> Self {
        Self {
            folder,
            trust,
            accepted: Accepted::All,
            hook_pins: BTreeSet::new(),
        }
    }

    /// The project `folder` trusted with exactly `files` (as they were when the user said
    /// yes to them).
    pub fn accepting(folder: &Path, files: &[ConfigFile]) -> Self {
        Self {
            folder: Some(folder.to_owned()),
            trust: Trust::Trusted,
            accepted: Accepted::Only(
                files
                    .iter()
                    .map(|f| (config_key(&f.path), f.digest.clone()))
                    .collect(),
            ),
            hook_pins: BTreeSet::new(),
        }
    }

    /// The same trust with the project hook handlers pinned as `pins` approved as well.
    pub fn approving_hooks(mut self, pins: impl IntoIterator<Item = String>) -> Self {
        self.hook_pins.extend(pins);
        self
    }

    /// Whether the project hook handler pinned as `pin` may run: its folder is trusted and
    /// the user approved exactly this handler.
    pub fn hook_approved(&self, pin: &str) -> bool {
        self.trust == Trust::Trusted && self.hook_pins.contains(pin)
    }

    /// Whether the file at `path`, holding `content`, applies.
    pub fn verdict(&self, path: &Path, content: &[u8]) -> Verdict {
        self.verdict_of(path, &digest(content))
    }

    fn verdict_of(&self, path: &Path, digest: &str) -> Verdict {
        if self.trust == Trust::Untrusted {
            return Verdict::NotTrusted;
        }
        match &self.accepted {
            Accepted::All => Verdict::Apply,
            Accepted::Only(files)
                if files.get(&config_key(path)).map(String::as_str) == Some(digest) =>
            {
                Verdict::Apply
            }
            Accepted::Only(_) => Verdict::Unreviewed,
        }
    }

    /// The files of `files` that would not apply, with why.
    pub fn unreviewed<'a>(&self, files: &'a [ConfigFile]) -> Vec<(&'a ConfigFile, Verdict)> {
        files
            .iter()
            .filter_map(|f| {
                let verdict = self.verdict_of(&f.path, &f.digest);
                (verdict != Verdict::Apply).then_some((f, verdict))
            })
            .collect()
    }

    /// The warning for `path` (a file of kind `what`, e.g. "project settings") not applied
    /// because of `verdict`; `None` when it applies.
    pub fn ignored_warning(path: &Path, what: &str, verdict: Verdict) -> Option<String> {
        match verdict {
            Verdict::Apply => None,
            Verdict::NotTrusted => Some(format!(
                "{}: {what} ignored: this folder is not trusted. Run with --trust to apply \
                 them for this run, or start corvid here in a terminal and answer yes to trust \
                 the folder",
                path.display()
            )),
            Verdict::Unreviewed => Some(format!(
                "{}: {what} ignored: the file is new or changed since this folder was trusted \
                 (a command may have written it). Review it, then start corvid here in a \
                 terminal and answer yes to accept it, or run with --trust to apply it for \
                 this run",
                path.display()
            )),
        }
    }
}

/// The user's trusted folders, as read from `$CORVID_HOME/trusted_folders.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct TrustedFolders {
    path: PathBuf,
    folders: Vec<PathBuf>,
    /// Project configuration files the user accepted: key -> digest of the content seen.
    accepted: BTreeMap<PathBuf, String>,
    /// Pins of the project hook handlers the user approved.
    hooks: BTreeSet<String>,
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
                    accepted: BTreeMap::new(),
                    hooks: BTreeSet::new(),
                });
            }
            Err(source) => return Err(SettingsError::Read { path, source }),
        };
        let (folders, accepted, hooks) = super::trust_list::parse(&path, &text)?;
        Ok(Self {
            path,
            folders,
            accepted,
            hooks,
        })
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

    /// Adds `folder` (made absolute and canonical) unless it or a parent is trusted already,
    /// accepts `files` with the content they had when the user reviewed them (a later change
    /// is asked about again), and rewrites the list atomically, `0600`.
    pub fn accept(&mut self, folder: &Path, files: &[ConfigFile]) -> Result<(), SettingsError> {
        let folder = canonical(folder);
        if !folder.is_absolute() {
            return Err(SettingsError::InvalidValue {
                origin: self.path.display().to_string(),
                key: "trustedFolders".into(),
                message: format!("cannot hold the relative path {}", folder.display()),
            });
        }
        if !self.trusts(&folder) && !self.folders.contains(&folder) {
            self.folders.push(folder);
        }
        for file in files {
            self.accepted
                .insert(config_key(&file.path), file.digest.clone());
        }
        self.write()
    }

    /// Approves the project hook handlers pinned as `pins` (see `corvid_core::hooks::review`)
    /// and rewrites the list.
    pub fn approve_hooks(&mut self, pins: &[String]) -> Result<(), SettingsError> {
        self.hooks.extend(pins.iter().cloned());
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
        let mut root = serde_json::json!({ "trustedFolders": folders });
        if !self.accepted.is_empty() {
            root["acceptedFiles"] = self
                .accepted
                .iter()
                .map(|(path, digest)| {
                    (
                        path.display().to_string(),
                        serde_json::Value::String(format!("sha256:{digest}")),
                    )
                })
                .collect::<serde_json::Map<_, _>>()
                .into();
        }
        if !self.hooks.is_empty() {
            root["acceptedHooks"] = self
                .hooks
                .iter()
                .map(|pin| serde_json::Value::String(format!("sha256:{pin}")))
                .collect::<Vec<_>>()
                .into();
        }
        let mut text = serde_json::to_string_pretty(&root).unwrap_or_default();
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

/// The trust of the project `folder` in this run: remembered, granted by `grant`, or none.
pub(super) fn decide(
    folder: &Path,
    grant: &TrustGrant,
    corvid_home: Option<&Path>,
) -> Result<ProjectTrust, SettingsError> {
    let untrusted = ProjectTrust {
        folder: Some(folder.to_owned()),
        ..ProjectTrust::default()
    };
    let remembered = match corvid_home {
        Some(home) => Some(TrustedFolders::load(home)?),
        None => None,
    };
    let hook_pins = remembered
        .as_ref()
        .map(|r| r.hooks.clone())
        .unwrap_or_default();
    if *grant == TrustGrant::ThisRun {
        return Ok(
            ProjectTrust::vouched(Some(folder.to_owned()), Trust::Trusted)
                .approving_hooks(hook_pins),
        );
    }
    let mut trusted = false;
    let mut accepted = BTreeMap::new();
    if let TrustGrant::Folders(granted) = grant
        && let Ok(real) = folder.canonicalize()
        && granted.folders.iter().any(|g| real.starts_with(g))
    {
        trusted = true;
        accepted.extend(granted.accepted.clone());
    }
    if let Some(remembered) = remembered
        && remembered.trusts(folder)
    {
        trusted = true;
        accepted.extend(remembered.accepted);
    }
    Ok(if trusted {
        ProjectTrust {
            folder: Some(folder.to_owned()),
            trust: Trust::Trusted,
            accepted: Accepted::Only(accepted),
            hook_pins,
        }
    } else {
        untrusted
    })
}

/// The canonical form when the folder exists, so symlinked and `..` spellings compare equal.
pub(super) fn canonical(folder: &Path) -> PathBuf {
    folder
        .canonicalize()
        .unwrap_or_else(|_| folder.to_path_buf())
}
