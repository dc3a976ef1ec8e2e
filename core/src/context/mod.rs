//! The model's context: how big its window is, how full a request makes it, compacting the
//! conversation before it overflows, and what goes in besides the conversation (project
//! instructions in the system prompt, tool results within a budget, repeated reads as short
//! notes).

pub mod compaction;
pub mod instructions;
pub mod meter;
pub mod read_cache;
pub mod result_budget;
pub mod tool_results;
pub mod window;

pub use meter::ContextMeter;
pub use window::ContextPolicy;
