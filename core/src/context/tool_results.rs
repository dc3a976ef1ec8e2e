//! The one place a tool's output becomes the text the history keeps for the model.

use std::sync::{Mutex, PoisonError};

use corvid_protocol::{ToolCall, ToolOutput};

use super::read_cache::ReadCache;
use super::result_budget::ResultBudget;

/// The text the history keeps for `call`'s `output`: a repeated read of unchanged content
/// becomes a short note, and a result over `budget` is cut with a note on what was left out.
/// Front ends still get the whole output; only the model's copy is shaped.
pub fn history_text(
    budget: ResultBudget,
    reads: &Mutex<ReadCache>,
    call: &ToolCall,
    output: &ToolOutput,
    succeeded: bool,
) -> String {
    if succeeded {
        // Every critical section is one map operation: a panicking holder left it consistent.
        let mut reads = reads.lock().unwrap_or_else(PoisonError::into_inner);
        if call.name == "read_file" {
            if let Some(note) =
                reads.repeat_note(&call.call_id, &call.args, &output.raw, &output.text)
            {
                return note;
            }
        } else {
            reads.file_changed(&output.raw);
        }
    }
    budget.fit(&call.name, &call.args, &output.raw, output.text.clone())
}
