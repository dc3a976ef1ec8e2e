//! Where session files live, how they are written, listed and loaded.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use corvid_protocol::{Message, Role};

use super::record::{RECORD_VERSION, Record, RecordHeader};

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
    #[error("no session {id} for {cwd}; `corvid sessions list` shows the recorded ones")]
    NotFound { id: String, cwd: PathBuf },
    #[error("session id {id} is ambiguous: it matches {matches}")]
    Ambiguous { id: String, matches: String },
}

/// The session files of all projects, under `$CORVID_HOME/sessions`.
#[derive(Debug, Clone)]
pub struct SessionStore {
    root: PathBuf,
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
}

/// A session read back from disk.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSession {
    pub header: RecordHeader,
    pub path: PathBuf,
    /// Every record after the header, in order (for transcript replay).
    pub records: Vec<Record>,
    /// Problems that were skipped (torn last line, unknown record types).
    pub warnings: Vec<String>,
    /// Length in bytes of the valid prefix; a torn tail is cut off before appending.
    valid_len: u64,
}

impl LoadedSession {
    /// The model history exactly as it was recorded.
    pub fn history(&self) -> Vec<Message> {
        self.records
            .iter()
            .filter_map(|r| match r {
                Record::Message { message } => Some(message.clone()),
                _ => None,
            })
            .collect()
    }
}

/// Appends records to one session file, flushing each one.
#[derive(Debug)]
pub struct SessionRecorder {
    path: PathBuf,
    file: Mutex<File>,
}

impl SessionRecorder {
    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record as a line and flushes it.
    pub fn append(&self, record: &Record) -> Result<(), SessionError> {
        let mut line = serde_json::to_vec(record).map_err(|e| SessionError::Io {
            path: self.path.clone(),
            source: io::Error::other(e),
        })?;
        line.push(b'\n');
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        file.write_all(&line)
            .and_then(|()| file.flush())
            .map_err(|source| SessionError::Io {
                path: self.path.clone(),
                source,
            })
    }
}

impl SessionStore {
    /// The store under `corvid_home` (normally `~/.corvid`).
    pub fn new(corvid_home: &Path) -> Self {
        Self {
            root: corvid_home.join("sessions"),
        }
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

    /// Starts a new session file with its header.
    pub fn create(
        &self,
        cwd: &Path,
        session_id: &str,
        model: &str,
    ) -> Result<SessionRecorder, SessionError> {
        let dir = self.project_dir(cwd);
        let path = dir.join(format!("{session_id}.jsonl"));
        fs::create_dir_all(&dir).map_err(|source| SessionError::Io {
            path: dir.clone(),
            source,
        })?;
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)
            .map_err(|source| SessionError::Io {
                path: path.clone(),
                source,
            })?;
        let recorder = SessionRecorder {
            path,
            file: Mutex::new(file),
        };
        recorder.append(&Record::Header(RecordHeader {
            version: RECORD_VERSION,
            session_id: session_id.to_owned(),
            cwd: cwd.to_path_buf(),
            model: model.to_owned(),
            started_at_ms: now_ms(),
        }))?;
        Ok(recorder)
    }

    /// Reopens a loaded session for appending, cutting off a torn last line first.
    pub fn reopen(&self, loaded: &LoadedSession) -> Result<SessionRecorder, SessionError> {
        let io_err = |source| SessionError::Io {
            path: loaded.path.clone(),
            source,
        };
        let file = OpenOptions::new()
            .write(true)
            .open(&loaded.path)
            .map_err(io_err)?;
        file.set_len(loaded.valid_len).map_err(io_err)?;
        drop(file);
        let file = OpenOptions::new()
            .append(true)
            .open(&loaded.path)
            .map_err(io_err)?;
        Ok(SessionRecorder {
            path: loaded.path.clone(),
            file: Mutex::new(file),
        })
    }

    /// This project's sessions with content, newest first. Unreadable files are skipped.
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
            .filter_map(|p| load_file(&p).ok())
            // A session that never got a prompt (opened, then left or resumed elsewhere) is noise.
            .filter(|s| !s.records.is_empty())
            .map(|s| summarize(&s))
            .collect();
        sessions.sort_by(|a, b| {
            b.started_at_ms
                .cmp(&a.started_at_ms)
                .then_with(|| b.id.cmp(&a.id))
        });
        Ok(sessions)
    }

    /// Loads a session of this project by id or unique id prefix.
    pub fn load(&self, cwd: &Path, id: &str) -> Result<LoadedSession, SessionError> {
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

    /// The most recent session of this project, if any.
    pub fn latest(&self, cwd: &Path) -> Result<Option<LoadedSession>, SessionError> {
        match self.list(cwd)?.first() {
            Some(s) => load_file(&s.path).map(Some),
            None => Ok(None),
        }
    }
}

/// Reads a session file: a torn last line and unknown record types become warnings; anything
/// else that does not parse is an error naming the line.
fn load_file(path: &Path) -> Result<LoadedSession, SessionError> {
    let bytes = fs::read(path).map_err(|source| SessionError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let corrupt = |line: usize, reason: String| SessionError::Corrupt {
        path: path.to_path_buf(),
        line,
        reason,
    };
    let mut header = None;
    let mut records = Vec::new();
    let mut warnings = Vec::new();
    let mut offset = 0usize;
    let mut valid_len = 0u64;
    for (index, raw) in bytes.split_inclusive(|b| *b == b'\n').enumerate() {
        let line_no = index + 1;
        offset += raw.len();
        let terminated = raw.ends_with(b"\n");
        let text = String::from_utf8_lossy(raw);
        let text = text.trim();
        if text.is_empty() {
            valid_len = offset as u64;
            continue;
        }
        let value: serde_json::Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) if !terminated => {
                warnings.push(format!(
                    "{}: skipped the torn last line {line_no} (the session was interrupted mid-write): {e}",
                    path.display()
                ));
                break;
            }
            Err(e) => return Err(corrupt(line_no, e.to_string())),
        };
        let kind = value
            .get("record")
            .and_then(|k| k.as_str())
            .unwrap_or_default()
            .to_owned();
        match serde_json::from_value::<Record>(value) {
            Ok(Record::Header(h)) if header.is_none() => header = Some(h),
            Ok(Record::Header(_)) => return Err(corrupt(line_no, "a second header".into())),
            Ok(_) if header.is_none() => return Err(corrupt(line_no, "the file does not start with a header".into())),
            Ok(record) => records.push(record),
            Err(_) if !KNOWN_RECORDS.contains(&kind.as_str()) => warnings.push(format!(
                "{}:{line_no}: skipped a record of unknown type {kind:?} (written by a newer corvid?)",
                path.display()
            )),
            Err(e) => return Err(corrupt(line_no, e.to_string())),
        }
        valid_len = offset as u64;
    }
    let header = header.ok_or_else(|| corrupt(1, "the file has no header".into()))?;
    Ok(LoadedSession {
        header,
        path: path.to_path_buf(),
        records,
        warnings,
        valid_len,
    })
}

const KNOWN_RECORDS: &[&str] = &[
    "header",
    "message",
    "tool_use_summary",
    "usage",
    "model_change",
];

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
    SessionSummary {
        id: session.header.session_id.clone(),
        path: session.path.clone(),
        started_at_ms: session.header.started_at_ms,
        model: session.header.model.clone(),
        first_prompt,
    }
}

fn now_ms() -> u64 {
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
