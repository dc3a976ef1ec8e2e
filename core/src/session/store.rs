//! Where session files live, how they are listed and found, created and reopened.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use corvid_protocol::Role;

use super::load::{LoadedSession, load_file};
use super::record::{ForkedFrom, RECORD_VERSION, Record, RecordHeader};
use super::recorder::{SessionRecorder, create_private_dir};

/// A failure to read or write a session, naming the file (and line) involved.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("cannot access session file {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("session file {path} is corrupt at line {line}: {reason}")]
    Corrupt {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    #[error(
        "{shown} is not a session id: corvid's ids are letters, digits and `-` (as `corvid \
         sessions list` shows them)",
        shown = shown_id(id)
    )]
    InvalidId { id: String },
    #[error("no session {id} for {cwd}; `corvid sessions list` shows the recorded ones")]
    NotFound { id: String, cwd: PathBuf },
    #[error("{id} is only the start of session {full}'s id; pass the full id to delete it")]
    NotFullId { id: String, full: String },
    #[error("session id {id} is ambiguous: it matches {matches}")]
    Ambiguous { id: String, matches: String },
    #[error(
        "the session {id} is in use by another corvid process ({path}); finish it there, \
         or start a new session"
    )]
    InUse { id: String, path: PathBuf },
    #[error(
        "cannot write session file {path}: {source}{}",
        match cut_back {
            None => String::new(),
            Some(e) => format!(" (and cutting it back to its last complete record failed: {e})"),
        }
    )]
    WriteFailed {
        path: PathBuf,
        source: io::Error,
        /// Why the file could not be cut back to its last complete record, when it could not.
        cut_back: Option<String>,
    },
    #[error("recording of {path} stopped after an earlier write failed ({cause})")]
    RecordingStopped { path: PathBuf, cause: String },
}

/// The session files of all projects, under `$CORVID_HOME/sessions`.
#[derive(Debug, Clone)]
pub struct SessionStore {
    root: PathBuf,
    titling: super::launch::Titling,
}

/// One recorded session, as listed.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSummary {
    pub id: String,
    pub path: PathBuf,
    pub started_at_ms: u64,
    pub model: String,
    /// The first user prompt, for pickers and listings.
    pub first_prompt: String,
    /// The title the fast model gave the session (the last recorded); pickers show the
    /// first prompt without one.
    pub title: Option<String>,
    /// Whether the file is whole, so listings can mark damaged sessions instead of hiding them.
    pub health: SessionHealth,
    /// The session it was forked from, so listings can show the family.
    pub forked_from: Option<ForkedFrom>,
}

/// The state of a listed session's file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum SessionHealth {
    /// Every line was read.
    #[default]
    Intact,
    /// Resumable, but lines were skipped (a torn end, damaged lines); the warnings say which.
    Damaged { warnings: Vec<String> },
    /// Cannot be resumed (no readable header, unreadable file); the reason says why.
    Unreadable { reason: String },
}

impl SessionStore {
    /// The store under `corvid_home` (normally `~/.corvid`).
    pub fn new(corvid_home: &Path) -> Self {
        Self {
            root: corvid_home.join("sessions"),
            titling: super::launch::Titling::Off,
        }
    }

    /// The same store, whose sessions started or resumed through it get a title from the fast
    /// model when they have none (interactive front ends; off by default).
    pub fn titling(self, titling: super::launch::Titling) -> Self {
        Self { titling, ..self }
    }

    /// The `$CORVID_HOME` the store is under (where checkpoints live too).
    pub(crate) fn corvid_home(&self) -> Option<&Path> {
        self.root.parent()
    }

    /// Whether sessions started through this store are titled.
    pub(crate) fn titles(&self) -> super::launch::Titling {
        self.titling
    }

    /// A stable, readable folder name for a working directory.
    pub fn project_key(cwd: &Path) -> String {
        let text = cwd.to_string_lossy();
        let readable: String = text
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let readable = readable.trim_matches('-');
        let tail: String = readable
            .chars()
            .rev()
            .take(48)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        format!("{}-{:08x}", tail, fnv1a(text.as_bytes()) as u32)
    }

    /// The folder holding this project's sessions.
    pub fn project_dir(&self, cwd: &Path) -> PathBuf {
        self.root.join(Self::project_key(cwd))
    }

    /// Starts a new session file with its header: private to the user (`0600` in `0700`
    /// folders) and locked against a second writer.
    pub fn create(
        &self,
        cwd: &Path,
        session_id: &str,
        model: &str,
    ) -> Result<SessionRecorder, SessionError> {
        let dir = self.project_dir(cwd);
        for folder in [&self.root, &dir] {
            create_private_dir(folder).map_err(|source| SessionError::Io {
                path: folder.clone(),
                source,
            })?;
        }
        let path = dir.join(format!("{session_id}.jsonl"));
        let recorder = SessionRecorder::create_new(path.clone(), session_id)?;
        let header = recorder.append(&Record::Header(RecordHeader {
            version: RECORD_VERSION,
            session_id: session_id.to_owned(),
            cwd: cwd.to_path_buf(),
            model: model.to_owned(),
            started_at_ms: now_ms(),
            forked_from: None,
        }));
        if let Err(e) = header {
            // A file without its header could never be resumed; it would only clutter listings.
            drop(recorder);
            let _ = fs::remove_file(&path);
            return Err(e);
        }
        Ok(recorder)
    }

    /// Reopens a loaded session for appending, cutting off a torn last line first. Fails with
    /// [`SessionError::InUse`] while another process records the same session.
    pub fn reopen(&self, loaded: &LoadedSession) -> Result<SessionRecorder, SessionError> {
        SessionRecorder::reopen(&loaded.path, &loaded.header.session_id, loaded.valid_len)
    }

    /// This project's sessions with content, newest first. Damaged and unreadable files are
    /// listed too, marked by their [`SessionHealth`].
    pub fn list(&self, cwd: &Path) -> Result<Vec<SessionSummary>, SessionError> {
        let dir = self.project_dir(cwd);
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(SessionError::Io { path: dir, source }),
        };
        let mut sessions: Vec<SessionSummary> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            // A file a crash left before its header was written holds nothing to list.
            .filter(|p| fs::metadata(p).is_ok_and(|m| m.len() > 0))
            .filter_map(|p| match load_file(&p) {
                // A session that never got a prompt (opened, then left) is noise.
                Ok(s) if s.records.is_empty() => None,
                Ok(s) => Some(summarize(&s)),
                Err(e) => Some(unreadable(&p, &e)),
            })
            .collect();
        sessions.sort_by(|a, b| {
            b.started_at_ms
                .cmp(&a.started_at_ms)
                .then_with(|| b.id.cmp(&a.id))
        });
        Ok(sessions)
    }

    /// Loads a session of this project by id or unique id prefix. An id that is not corvid's
    /// shape (a path, `..`) is refused before anything on disk is touched.
    pub fn load(&self, cwd: &Path, id: &str) -> Result<LoadedSession, SessionError> {
        if !is_session_id(id) {
            return Err(SessionError::InvalidId { id: id.to_owned() });
        }
        let exact = self.project_dir(cwd).join(format!("{id}.jsonl"));
        if exact.is_file() {
            return load_file(&exact);
        }
        let matches: Vec<SessionSummary> = self
            .list(cwd)?
            .into_iter()
            .filter(|s| s.id.starts_with(id))
            .collect();
        match matches.as_slice() {
            [one] => load_file(&one.path),
            [] => Err(SessionError::NotFound {
                id: id.to_owned(),
                cwd: cwd.to_path_buf(),
            }),
            many => Err(SessionError::Ambiguous {
                id: id.to_owned(),
                matches: many
                    .iter()
                    .map(|s| s.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }

    /// Deletes session `id` of this project (the full id: a prefix is refused, so a
    /// destructive command never picks a session the user did not name), then frees the
    /// checkpoints only it needed. Refused while a corvid process records the session.
    /// Returns the notice of what the checkpoints freed, if they held anything of it.
    pub fn delete(&self, cwd: &Path, id: &str) -> Result<Option<String>, SessionError> {
        let loaded = self.load(cwd, id)?;
        if loaded.header.session_id != id || loaded.path.file_stem().is_none_or(|stem| stem != id) {
            return Err(SessionError::NotFullId {
                id: id.to_owned(),
                full: loaded.header.session_id,
            });
        }
        // Held while the file goes: no corvid can start recording it meanwhile.
        let recorder = self.reopen(&loaded)?;
        fs::remove_file(&loaded.path).map_err(|source| SessionError::Io {
            path: loaded.path.clone(),
            source,
        })?;
        drop(recorder);
        let Some(home) = self.corvid_home() else {
            return Ok(None);
        };
        // The recording is gone whatever happens here; a failure leaves the checkpoints to
        // the next prune, which finds them orphaned.
        match crate::checkpoints::free_deleted_sessions(home, &loaded.header.cwd) {
            Ok(notice) => Ok(notice),
            Err(e) => Ok(Some(format!(
                "its checkpoints were not freed now ({e}); the next `corvid checkpoints prune` \
                 frees them"
            ))),
        }
    }

    /// The most recent resumable session of this project, if any: a damaged one counts (its
    /// readable records go on), an unreadable one cannot (`sessions list` still shows it).
    pub fn latest(&self, cwd: &Path) -> Result<Option<LoadedSession>, SessionError> {
        let newest = self
            .list(cwd)?
            .into_iter()
            .find(|s| !matches!(s.health, SessionHealth::Unreadable { .. }));
        match newest {
            Some(s) => load_file(&s.path).map(Some),
            None => Ok(None),
        }
    }
}

/// The longest id (or id prefix) taken: corvid's UUIDs have 36 characters.
const MAX_ID_LEN: usize = 64;

/// Whether `id` has the shape of a session id or a prefix of one: corvid's are UUIDs, so
/// letters, digits, `-` and `_` only; nothing that could name a path (`/`, `.`, `\`).
pub fn is_session_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
}

/// An id as an error shows it: escaped, and cut when long (it came from outside).
fn shown_id(id: &str) -> String {
    let cut: String = id.chars().take(MAX_ID_LEN).collect();
    let more = if cut.len() < id.len() { "…" } else { "" };
    format!("{cut:?}{more}")
}

fn summarize(session: &LoadedSession) -> SessionSummary {
    let first_prompt = session
        .records
        .iter()
        .find_map(|r| match r {
            Record::Message { message }
                if message.role == Role::User && !message.text().is_empty() =>
            {
                Some(message.text())
            }
            _ => None,
        })
        .unwrap_or_default();
    let title = session.records.iter().rev().find_map(|r| match r {
        Record::Title { title } => Some(title.clone()),
        _ => None,
    });
    SessionSummary {
        id: session.header.session_id.clone(),
        path: session.path.clone(),
        started_at_ms: session.header.started_at_ms,
        model: session.header.model.clone(),
        first_prompt,
        forked_from: session.header.forked_from.clone(),
        title,
        health: if session.warnings.is_empty() {
            SessionHealth::Intact
        } else {
            SessionHealth::Damaged {
                warnings: session.warnings.clone(),
            }
        },
    }
}

/// A file that cannot be loaded still shows up, under its file name and modification time.
fn unreadable(path: &Path, error: &SessionError) -> SessionSummary {
    let modified_ms = fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default();
    SessionSummary {
        id: path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        path: path.to_path_buf(),
        started_at_ms: modified_ms,
        model: String::new(),
        first_prompt: String::new(),
        title: None,
        health: SessionHealth::Unreadable {
            reason: error.to_string(),
        },
        forked_from: None,
    }
}

pub(super) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default()
}

/// FNV-1a: a hash that stays the same across Rust versions, so project keys never move.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}
