//! Most of corvid-tui's integration tests, compiled and linked as one test binary instead of one
//! per file: linking dozens of binaries was a large share of CI's cold test build. Each file
//! under `tests/` stays its own module, so a test keeps its file, its name (now prefixed by the
//! file's: `cargo test -p corvid-tui --test it file_name::`) and its private helpers.
//!
//! Adding a test file: add it below, in order (see CONTRIBUTING.md); a file that needs a
//! process of its own (process-wide state, re-running its own executable) gets a `[[test]]`
//! entry in Cargo.toml instead. The last test here fails for a file that is in neither.
// Every file keeps its own `mod common;`, as it had as a binary of its own, so the helpers are
// compiled once per file (unused copies cost type checking only, no code) and the test files
// stay unchanged.
#![allow(clippy::duplicate_mod)]

#[path = "../app_keys.rs"]
mod app_keys;
#[path = "../chat.rs"]
mod chat;
#[path = "../mixed_batches.rs"]
mod mixed_batches;
#[path = "../new_session.rs"]
mod new_session;
#[path = "../plan_mode.rs"]
mod plan_mode;
#[path = "../resume.rs"]
mod resume;
#[path = "../scrollback.rs"]
mod scrollback;
#[path = "../session_titles.rs"]
mod session_titles;
#[path = "../steer.rs"]
mod steer;
#[path = "../tmux_demo.rs"]
mod tmux_demo;
#[path = "../xterm_replay.rs"]
mod xterm_replay;

#[test]
fn every_test_file_of_the_crate_is_compiled_into_some_test_binary() {
    corvid_testkit::test_layout::assert_every_test_file_is_compiled(
        env!("CARGO_MANIFEST_DIR"),
        include_str!("main.rs"),
    );
}
