//! corvid's terminal UI: append-only transcript above an inline live area.
//!
//! Finished items ([`cells::HistoryCell`]) are printed once into the terminal's scrollback;
//! only the live area (streaming text, running tools, composer) is redrawn. The state
//! ([`app::App`], [`chat::ChatState`]) is a pure function of core events and key presses, so
//! it is tested without an agent or a terminal.

pub mod app;
pub mod backend;
pub mod cells;
pub mod chat;
pub mod composer;
mod highlight;
pub mod history;
mod input;
pub mod live;
pub mod markdown;
mod md_table;
pub mod mention;
pub mod model_picker;
pub mod modes;
mod notify;
pub mod picker;
pub mod question;
mod replay;
pub mod rewind;
mod run;
pub mod screen;
pub mod theme;
pub mod timing;
pub mod tools;
pub mod transcript;
pub mod wrap;

pub use app::TuiOptions;
pub use picker::{BranchAt, Branched, SessionLauncher};
pub use run::run;
