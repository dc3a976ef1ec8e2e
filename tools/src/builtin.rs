//! The built-in tool set offered to the model.

use std::sync::Arc;

use crate::ToolRegistry;
use crate::edit::Edit;
use crate::exit_plan_mode::ExitPlanMode;
use crate::glob::Glob;
use crate::grep::GrepSearch;
use crate::list_directory::ListDirectory;
use crate::read_file::ReadFile;
use crate::shell::RunShellCommand;
use crate::todo_write::TodoWrite;
use crate::write_file::WriteFile;

/// Every built-in tool, in the order of SPEC §3.2.
pub fn builtin_tools() -> ToolRegistry {
    ToolRegistry::new(vec![
        Arc::new(ReadFile),
        Arc::new(ListDirectory),
        Arc::new(Glob),
        Arc::new(GrepSearch),
        Arc::new(WriteFile),
        Arc::new(Edit),
        Arc::new(RunShellCommand),
        Arc::new(TodoWrite),
        // Offered only in plan mode (the core filters by mode).
        Arc::new(ExitPlanMode),
    ])
}
