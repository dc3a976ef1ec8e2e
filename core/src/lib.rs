//! corvid's agent core: settings, the task/turn loop, retry/fallback/cancel, tools and
//! approvals, tool-use summaries, usage stats. Every front end consumes its core events.

pub mod agent;
pub mod agents;
pub mod attach;
pub mod checkpoints;
pub mod commands;
pub mod context;
pub mod hooks;
pub mod images;
pub mod models;
pub mod policy;
pub mod retry;
pub mod session;
pub mod settings;
pub mod summary;
pub mod telemetry;
pub mod usage;
pub mod web_prompt;
