//! Test support: a loopback mock provider server and fixture loaders.
//!
//! The server replays scripted responses chunk by chunk (with delays, gates, cut or hung
//! connections) and records every request, so end-to-end tests can assert on both what a
//! client received and what it sent.

pub mod fixtures;
mod response;
mod server;
pub mod test_layout;

pub use response::{Chunk, Gate, ScriptedResponse, sse_event};
pub use server::{MockServer, RecordedRequest};
