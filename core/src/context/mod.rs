//! What goes into the model's context besides the conversation itself, and how much of it:
//! project instructions in the system prompt, tool results within a budget, repeated reads
//! as short notes.

pub mod instructions;
pub mod read_cache;
pub mod result_budget;
pub mod tool_results;
