//! corvid's built-in tools. Each tool describes itself (name, schema, kind, title, locations,
//! whether it mutates) so front ends never switch on tool names.

pub mod ask_user;
mod atomic_write;
mod beneath;
pub mod builtin;
mod capped;
mod common;
pub mod edit;
pub mod enter_plan_mode;
pub mod exit_plan_mode;
pub mod glob;
pub mod grep;
pub mod hooks_runner;
mod line_window;
pub mod list_directory;
pub mod live_output;
pub mod local_fs;
pub mod paths;
pub mod read_file;
pub mod registry;
pub mod regular_file;
pub mod shell;
pub mod todo_write;
mod walk;
pub mod web;
pub mod write_file;

pub use ask_user::AskUser;
pub use builtin::builtin_tools;
pub use common::type_name;
pub use edit::Edit;
pub use enter_plan_mode::EnterPlanMode;
pub use exit_plan_mode::ExitPlanMode;
pub use glob::Glob;
pub use grep::GrepSearch;
pub use list_directory::ListDirectory;
pub use live_output::LiveOutput;
pub use local_fs::LocalFs;
pub use read_file::ReadFile;
pub use registry::{ToolRegistry, ToolSource};
pub use shell::RunShellCommand;
pub use shell::background::{KillShell, ShellOutput};
pub use todo_write::TodoWrite;
pub use web::{WebFetch, WebSearch};
pub use write_file::WriteFile;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use corvid_protocol::{ApprovalPreview, Provenance, ToolDisplay, ToolKind, ToolOutput};
use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Where file tools read and write: local disk, or an editor's buffers over ACP.
pub trait FileSystem: Send + Sync {
    /// Reads a whole text file.
    fn read_text(&self, path: PathBuf) -> BoxFuture<'static, std::io::Result<String>>;
    /// Creates or replaces a text file. `path` lies inside `root`, the session's working
    /// directory: a write to local disk must land inside it even when the folders change
    /// while it runs (see `LocalFs`).
    fn write_text(
        &self,
        root: PathBuf,
        path: PathBuf,
        content: String,
    ) -> BoxFuture<'static, std::io::Result<()>>;
    /// True when reads go straight to local disk, so a tool may check and read a file in one
    /// blocking step instead of one trip to the blocking pool per step.
    fn on_local_disk(&self) -> bool {
        false
    }
}

/// Everything a tool call may use while it runs.
#[derive(Clone)]
pub struct ToolContext {
    /// The call being run (empty outside a call), so hosts can attach output to its card.
    pub call_id: String,
    /// The session's working directory; every path must resolve inside it.
    pub cwd: PathBuf,
    pub fs: Arc<dyn FileSystem>,
    /// Tripped when the task is cancelled; running commands must stop at once.
    pub cancel: CancellationToken,
    pub shell_timeout: Duration,
    /// The shell's sandbox level and environment filter.
    pub shell: shell::ShellPolicy,
    /// Where a running command reports its output as it appears (`None`: nobody watches).
    pub live_output: Option<LiveOutput>,
}

/// Why a call needs the user's approval, which decides what each approval mode allows.
#[derive(Debug, Clone, PartialEq)]
pub enum ApprovalNeed {
    /// Runs without asking.
    None,
    /// A file edit: approved automatically in `auto-edit` and `yolo`.
    Edit(ApprovalPreview),
    /// A command: approved automatically only in `yolo` (and, when the core finds it only
    /// reads, in every mode but `plan`).
    Execute(ApprovalPreview),
    /// A shell command the OS sandbox confines (writes only in the workspace and temp dirs, no
    /// network): like [`Self::Execute`], and also approved automatically in `auto` while undo
    /// can take its changes back.
    Sandboxed(ApprovalPreview),
    /// Asked in every approval mode, `yolo` included, with `reason` shown on the request
    /// (e.g. the shell sandbox could not be set up, so the command would run unconfined).
    Escalated {
        preview: ApprovalPreview,
        reason: String,
    },
    /// Planning the call failed before anything could be approved: the call fails with this
    /// error without asking and without running (never "nothing to approve").
    Refuse(ToolError),
}

/// A failed call, answered to the model as a tool error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    pub message: String,
}

impl ToolError {
    /// A tool error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// One tool the model can call.
pub trait Tool: Send + Sync {
    /// The name the model calls (`read_file`).
    fn name(&self) -> &str;
    /// The name shown on a card before the arguments are known (`ReadFile`).
    fn display_name(&self) -> &str;
    /// What the model is told the tool does.
    fn description(&self) -> &str;
    /// JSON Schema of the arguments object.
    fn parameters(&self) -> Value;
    fn kind(&self) -> ToolKind;
    /// Where the tool comes from, for cards (`_meta.provenance`): built in unless overridden.
    fn provenance(&self) -> Provenance {
        Provenance::Builtin
    }
    /// Mutating calls of a batch run in order; the others run concurrently.
    fn mutates(&self) -> bool;
    /// Whether this particular call mutates, for tools where it depends on the arguments
    /// (a `task` whose agent type only reads runs beside other read-only calls).
    fn mutates_call(&self, _args: &Value) -> bool {
        self.mutates()
    }
    /// The web host the call reaches (`docs.rs`), lower-case, for tools that reach one: the
    /// core asks, remembers "always" and matches `tool(domain:...)` rules per domain.
    fn domain(&self, _args: &Value) -> Option<String> {
        None
    }
    /// Whether plan mode offers and runs it: tools that change nothing, and planning aids.
    fn allowed_in_plan_mode(&self) -> bool {
        !self.mutates()
    }
    /// Whether the call appears as a tool card. `todo_write` does not (it shows as a plan);
    /// the core uses this one predicate for preparing and execution cards alike.
    fn shows_card(&self) -> bool {
        true
    }
    /// The title, kind and locations for complete arguments (`Read src/main.rs`).
    fn display(&self, args: &Value, ctx: &ToolContext) -> ToolDisplay;
    /// Whether and why this call needs approval.
    fn approval(&self, args: &Value, ctx: &ToolContext) -> BoxFuture<'static, ApprovalNeed>;
    /// Runs the call.
    fn execute(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>>;
}
