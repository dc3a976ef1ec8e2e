//! Most of corvid-acp's integration tests, compiled and linked as one test binary instead of one
//! per file: linking dozens of binaries was a large share of CI's cold test build. Each file
//! under `tests/` stays its own module, so a test keeps its file, its name (now prefixed by the
//! file's: `cargo test -p corvid-acp --test it file_name::`) and its private helpers.
//!
//! Adding a test file: add it below, in order (see CONTRIBUTING.md); a file that needs a
//! process of its own (process-wide state, re-running its own executable) gets a `[[test]]`
//! entry in Cargo.toml instead. The last test here fails for a file that is in neither.
// Every file keeps its own `mod common;`, as it had as a binary of its own, so the helpers are
// compiled once per file (unused copies cost type checking only, no code) and the test files
// stay unchanged.
#![allow(clippy::duplicate_mod)]

#[path = "../cancel_sweep.rs"]
mod cancel_sweep;
#[path = "../commands.rs"]
mod commands;
#[path = "../custom_commands.rs"]
mod custom_commands;
#[path = "../editor_fs.rs"]
mod editor_fs;
#[path = "../lifecycle.rs"]
mod lifecycle;
#[path = "../listing.rs"]
mod listing;
#[path = "../load.rs"]
mod load;
#[path = "../plan_mode.rs"]
mod plan_mode;
#[path = "../prompt_content.rs"]
mod prompt_content;
#[path = "../reasoning_effort.rs"]
mod reasoning_effort;
#[path = "../requests.rs"]
mod requests;
#[path = "../responses_preparing.rs"]
mod responses_preparing;
#[path = "../robust_input.rs"]
mod robust_input;
#[path = "../slow_reader.rs"]
mod slow_reader;
#[path = "../terminal.rs"]
mod terminal;
#[path = "../undo_after_load.rs"]
mod undo_after_load;

#[test]
fn every_test_file_of_the_crate_is_compiled_into_some_test_binary() {
    corvid_testkit::test_layout::assert_every_test_file_is_compiled(
        env!("CARGO_MANIFEST_DIR"),
        include_str!("main.rs"),
    );
}
