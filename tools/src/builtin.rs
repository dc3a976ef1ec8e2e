//! The built-in tool set offered to the model.

use std::sync::{Arc, OnceLock};

use crate::ask_user::AskUser;
use crate::edit::Edit;
use crate::enter_plan_mode::EnterPlanMode;
use crate::exit_plan_mode::ExitPlanMode;
use crate::glob::Glob;
use crate::grep::GrepSearch;
use crate::list_directory::ListDirectory;
use crate::read_file::ReadFile;
use crate::shell::RunShellCommand;
use crate::shell::background::{KillShell, ShellOutput};
use crate::todo_write::TodoWrite;
use crate::web::WebFetch;
use crate::write_file::WriteFile;
use crate::{Tool, ToolRegistry};

/// Every built-in tool, in the order of SPEC §3.2. The tools hold no state, so every session
/// gets the same objects: a tool's schema is then built once for the whole process (the core
/// keeps schemas per tool object), however many sessions offer it.
pub fn builtin_tools() -> ToolRegistry {
    static TOOLS: OnceLock<Vec<Arc<dyn Tool>>> = OnceLock::new();
    let tools = TOOLS.get_or_init(|| {
        vec![
            Arc::new(ReadFile),
            Arc::new(ListDirectory),
            Arc::new(Glob),
            Arc::new(GrepSearch),
            Arc::new(WriteFile),
            Arc::new(Edit),
            Arc::new(RunShellCommand),
            Arc::new(ShellOutput),
            Arc::new(KillShell),
            Arc::new(TodoWrite),
            // Without the user's `web.allowPrivate`; sessions get theirs from the core.
            Arc::new(WebFetch::default()),
            // Offered only in plan mode (the core filters by mode).
            Arc::new(ExitPlanMode),
            // Offered outside plan mode only.
            Arc::new(EnterPlanMode),
            // Removed by front ends that cannot answer (headless without answers).
            Arc::new(AskUser),
        ]
    });
    ToolRegistry::new(tools.clone())
}
