//! Workspace checkpoints: record a folder's files so that any earlier state can be put back,
//! whatever changed them (file tools, shell commands, the user), and without ever silently
//! overwriting an edit made after the state the caller expected.
//!
//! The crate knows nothing about agents: [`Store::snapshot`] records a workspace,
//! [`Store::preview`] compares an earlier snapshot with the folder as it is now, and
//! [`Store::restore`] applies such a plan file by file (each file ends either old or new, even
//! under `kill -9`). Content is stored once per hash under
//! `$CORVID_HOME/checkpoints/<project>/`, trees of directories like git's, so a snapshot costs
//! what changed, and a stat cache (like git's index) makes an unchanged tree cheap to check.

mod beneath;
mod codec;
mod error;
mod objects;
mod plan;
mod probe;
mod restore;
mod scan;
mod stat_cache;
mod store;
mod tree;

pub use error::{Error, Result};
pub use plan::{Action, Change, RestorePlan, Unrestorable, UnrestorableReason};
pub use store::{DEFAULT_MAX_FILE_BYTES, Options, PruneReport, SnapshotId, SnapshotInfo, Store};
