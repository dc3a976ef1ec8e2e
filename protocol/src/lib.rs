//! corvid's protocol types. Serde only, no I/O: every other crate speaks in these types.
//!
//! Data flows one way: bytes → [`StreamEvent`] (providers) → [`CoreEvent`] (core) → front-end frames.

pub mod core_event;
pub mod error;
pub mod image;
pub mod message;
pub mod op;
pub mod question;
pub mod rewind;
pub mod stream;
pub mod tool;

pub use core_event::*;
pub use error::*;
pub use image::*;
pub use message::*;
pub use op::*;
pub use question::*;
pub use rewind::*;
pub use stream::*;
pub use tool::*;

/// The prompt id under which the main session's model usage is counted.
pub const MAIN_PROMPT_ID: &str = "main";
/// The prompt id under which tool-use summary calls are counted (SPEC §7.2).
pub const SUMMARY_PROMPT_ID: &str = "tool_use_summary_generation";
/// The prompt id of the main model's calls that compact the conversation.
pub const COMPACTION_PROMPT_ID: &str = "compaction";
/// The prompt id under which the child agents of `task` calls are counted.
pub const SUBAGENT_PROMPT_ID: &str = "subagent";
