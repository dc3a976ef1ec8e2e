//! The model's context: how big its window is, how full a request makes it, and compacting
//! the conversation before it overflows.

pub mod compaction;
pub mod meter;
pub mod window;

pub use meter::ContextMeter;
pub use window::ContextPolicy;
