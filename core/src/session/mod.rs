//! Session recording and resuming (SPEC §9): one JSONL file per session under
//! `$CORVID_HOME/sessions/<project-key>/<session-id>.jsonl`, flushed per record.
//!
//! Only complete content is recorded (messages, summaries, usage, model changes);
//! stream-only events such as tool preparation never are.

mod fork;
mod launch;
mod load;
mod observe;
mod record;
mod recorder;
mod replay;
mod rewound;
mod secrets;
mod store;
mod time;
mod titled;

pub use fork::{ForkAt, ForkError, Forked, fork_session};
pub use launch::{Recorded, Resumed, Titling, spawn_recorded, spawn_resumed};
pub use load::{INTERRUPTED_CALL, LoadedSession, UNSTARTED_CALL};
pub use record::{ForkedFrom, RECORD_VERSION, Record, RecordHeader};
pub use recorder::SessionRecorder;
pub use replay::replay_events;
pub use secrets::RecordedSecrets;
pub use store::{SessionError, SessionHealth, SessionStore, SessionSummary, is_session_id};
pub use time::{utc_iso8601, utc_minutes};
pub use titled::TitledRecorder;
