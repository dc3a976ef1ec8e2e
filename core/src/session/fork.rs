//! Session forks (issue 30): `/branch`, ACP `/branch` and `--fork` start a new session whose
//! recording begins with a copy of another's conversation, so another approach can be tried
//! while the original stays as it was. The parent's file is only read, never written.
//!
//! A fork from an earlier turn also puts the workspace back to how it was before that turn,
//! through the same preview, conflict rules and restore as a code rewind
//! ([`SessionCheckpoints::preview`], [`SessionCheckpoints::rewind`]).

use corvid_protocol::RewindReport;

use super::load::{LoadedSession, load_file};
use super::record::{ForkedFrom, RECORD_VERSION, Record, RecordHeader};
use super::recorder::{SessionRecorder, create_private_dir};
use super::store::{SessionError, SessionStore, now_ms};
use crate::checkpoints::{CheckpointError, RewindPreview, SessionCheckpoints};

/// Why a fork could not be made; the message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum ForkError {
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error(transparent)]
    Checkpoints(#[from] CheckpointError),
    /// The turn cannot be forked from (no checkpoints, a compacted conversation).
    #[error("cannot fork from before turn {turn}: {reason}")]
    Turn { turn: u32, reason: String },
}

/// Forking from before an earlier turn: the parent's checkpoints, the code preview the user
/// saw (`preview(turn, RewindScope::Code)`) and whether they chose to overwrite conflicts.
pub struct ForkAt<'a> {
    pub checkpoints: &'a SessionCheckpoints,
    pub preview: &'a RewindPreview,
    pub overwrite_conflicts: bool,
}

/// A fork made: the new session, loaded (ready for `spawn_resumed`), and what the file
/// restore did when it went back to an earlier turn.
#[derive(Debug)]
pub struct Forked {
    pub loaded: LoadedSession,
    pub restored: Option<RewindReport>,
}

/// Forks `parent` into the new session `new_id`: the whole conversation, or with `at` the
/// conversation and files as they were before `at.preview.turn`. The files are restored
/// first (each old or new, the restore journaled so it can be undone); the fork's recording
/// is written after, so a failed restore leaves no half-made session.
pub fn fork_session(
    store: &SessionStore,
    parent: &LoadedSession,
    new_id: &str,
    at: Option<ForkAt<'_>>,
) -> Result<Forked, ForkError> {
    let Some(at) = at else {
        let loaded = store.write_fork(parent, new_id, None)?;
        store.fork_checkpoints(parent, new_id, None);
        return Ok(Forked {
            loaded,
            restored: None,
        });
    };
    let turn = at.preview.turn;
    let keep = at.checkpoints.history_len_before(turn)?;
    let history_len = u32::try_from(parent.history().len()).unwrap_or(u32::MAX);
    if keep > history_len {
        return Err(ForkError::Turn {
            turn,
            reason: "the conversation was compacted or cleared since then; fork the whole \
                     session with `/branch` instead"
                .into(),
        });
    }
    let report = at
        .checkpoints
        .rewind(at.preview, at.overwrite_conflicts, history_len)?;
    let loaded = store.write_fork(parent, new_id, Some((turn, keep)))?;
    store.fork_checkpoints(parent, new_id, Some(turn));
    Ok(Forked {
        loaded,
        restored: Some(report),
    })
}

impl SessionStore {
    /// Starts the fork's checkpoint journal with the parent's (up to before `turn`), so the
    /// fork can undo the turns it inherited. A failure only costs that: the fork is made.
    fn fork_checkpoints(&self, parent: &LoadedSession, new_id: &str, turn: Option<u32>) {
        let Some(home) = self.corvid_home() else {
            return;
        };
        let copied = crate::checkpoints::fork_journal(
            home,
            &parent.header.cwd,
            &parent.header.session_id,
            new_id,
            turn,
        );
        if let Err(e) = copied {
            tracing::warn!(
                session = new_id,
                error = %e,
                "the fork cannot undo the turns it inherited"
            );
        }
    }

    /// Writes session `new_id`: a header naming `parent`, then the parent's records (its
    /// rewinds applied), cut back to the first `keep` history messages when forking from
    /// before `turn`. The copy is made of records already redacted when they were recorded.
    fn write_fork(
        &self,
        parent: &LoadedSession,
        new_id: &str,
        at: Option<(u32, u32)>,
    ) -> Result<LoadedSession, SessionError> {
        let cwd = &parent.header.cwd;
        let dir = self.project_dir(cwd);
        create_private_dir(&dir).map_err(|source| SessionError::Io {
            path: dir.clone(),
            source,
        })?;
        let path = dir.join(format!("{new_id}.jsonl"));
        // `create_new`: an existing file (an id taken) is refused, never overwritten.
        let recorder = SessionRecorder::create_new(path.clone(), new_id)?;
        let written = (|| {
            recorder.append(&Record::Header(RecordHeader {
                version: RECORD_VERSION,
                session_id: new_id.to_owned(),
                cwd: cwd.clone(),
                model: parent.header.model.clone(),
                started_at_ms: now_ms(),
                forked_from: Some(ForkedFrom {
                    session_id: parent.header.session_id.clone(),
                    turn: at.map(|(turn, _)| turn),
                }),
            }))?;
            for record in &parent.records {
                recorder.append(record)?;
            }
            if let Some((_, keep)) = at {
                recorder.append(&Record::HistoryRewound {
                    kept_messages: keep,
                })?;
            }
            Ok(())
        })();
        drop(recorder);
        if let Err(e) = written {
            // A half-copied fork would be listed as a session of its own.
            let _ = std::fs::remove_file(&path);
            return Err(e);
        }
        load_file(&path)
    }
}
