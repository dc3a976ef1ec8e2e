//! Most of corvid-cli's integration tests, compiled and linked as one test binary instead of one
//! per file: linking dozens of binaries was a large share of CI's cold test build. Each file
//! under `tests/` stays its own module, so a test keeps its file, its name (now prefixed by the
//! file's: `cargo test -p corvid-cli --test it file_name::`) and its private helpers.
//!
//! Adding a test file: add it below, in order (see CONTRIBUTING.md); a file that needs a
//! process of its own (process-wide state, re-running its own executable) gets a `[[test]]`
//! entry in Cargo.toml instead. The last test here fails for a file that is in neither.
// Every file keeps its own `mod common;`, as it had as a binary of its own, so the helpers are
// compiled once per file (unused copies cost type checking only, no code) and the test files
// stay unchanged.
#![allow(clippy::duplicate_mod)]

#[path = "../acp_ask_user.rs"]
mod acp_ask_user;
#[path = "../acp_branch.rs"]
mod acp_branch;
#[path = "../acp_commands.rs"]
mod acp_commands;
#[path = "../acp_hooks.rs"]
mod acp_hooks;
#[path = "../acp_images.rs"]
mod acp_images;
#[path = "../acp_mcp.rs"]
mod acp_mcp;
#[path = "../acp_official_client.rs"]
mod acp_official_client;
#[path = "../acp_plan_mode.rs"]
mod acp_plan_mode;
#[path = "../acp_rewind.rs"]
mod acp_rewind;
#[path = "../acp_terminal.rs"]
mod acp_terminal;
#[path = "../commands.rs"]
mod commands;
#[path = "../headless_ask_user.rs"]
mod headless_ask_user;
#[path = "../headless_auto_mode.rs"]
mod headless_auto_mode;
#[path = "../headless_background.rs"]
mod headless_background;
#[path = "../headless_context.rs"]
mod headless_context;
#[path = "../headless_demo.rs"]
mod headless_demo;
#[path = "../headless_gemini.rs"]
mod headless_gemini;
#[path = "../headless_hook_events.rs"]
mod headless_hook_events;
#[path = "../headless_hooks.rs"]
mod headless_hooks;
#[path = "../headless_hostile.rs"]
mod headless_hostile;
#[path = "../headless_max_turns.rs"]
mod headless_max_turns;
#[path = "../headless_mock.rs"]
mod headless_mock;
#[path = "../headless_plan_mode.rs"]
mod headless_plan_mode;
#[path = "../headless_responses.rs"]
mod headless_responses;
#[path = "../headless_subagent.rs"]
mod headless_subagent;
#[path = "../headless_web_search.rs"]
mod headless_web_search;
#[path = "../hooks_cmd.rs"]
mod hooks_cmd;
#[path = "../hooks_trust.rs"]
mod hooks_trust;
#[path = "../key_environ.rs"]
mod key_environ;
#[path = "../mcp_headless.rs"]
mod mcp_headless;
#[path = "../mcp_list.rs"]
mod mcp_list;
#[path = "../replay_sse.rs"]
mod replay_sse;
#[path = "../rewind.rs"]
mod rewind;
#[path = "../session_fork.rs"]
mod session_fork;
#[path = "../session_safety.rs"]
mod session_safety;
#[path = "../sessions.rs"]
mod sessions;
#[path = "../telemetry/main.rs"]
mod telemetry;
#[path = "../trust.rs"]
mod trust;

#[test]
fn every_test_file_of_the_crate_is_compiled_into_some_test_binary() {
    corvid_testkit::test_layout::assert_every_test_file_is_compiled(
        env!("CARGO_MANIFEST_DIR"),
        include_str!("main.rs"),
    );
}
