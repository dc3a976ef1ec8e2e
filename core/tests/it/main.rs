//! Most of corvid-core's integration tests, compiled and linked as one test binary instead of one
//! per file: linking dozens of binaries was a large share of CI's cold test build. Each file
//! under `tests/` stays its own module, so a test keeps its file, its name (now prefixed by the
//! file's: `cargo test -p corvid-core --test it file_name::`) and its private helpers.
//!
//! Adding a test file: add it below, in order (see CONTRIBUTING.md); a file that needs a
//! process of its own (process-wide state, re-running its own executable) gets a `[[test]]`
//! entry in Cargo.toml instead. The last test here fails for a file that is in neither.
// Every file keeps its own `mod common;`, as it had as a binary of its own, so the helpers are
// compiled once per file (unused copies cost type checking only, no code) and the test files
// stay unchanged.
#![allow(clippy::duplicate_mod)]

// The fault model (tests/common/fault_model/) names its helpers `crate::common::...`, as it
// does in the fault_runs bench, so the crate root has a copy of them too.
#[path = "../common/mod.rs"]
mod common;

#[path = "../approval_auto.rs"]
mod approval_auto;
#[path = "../approval_fail_closed.rs"]
mod approval_fail_closed;
#[path = "../approval_protected.rs"]
mod approval_protected;
#[path = "../approval_rules.rs"]
mod approval_rules;
#[path = "../approval_web.rs"]
mod approval_web;
#[path = "../ask_user.rs"]
mod ask_user;
#[path = "../background.rs"]
mod background;
#[path = "../bulk_after_cards.rs"]
mod bulk_after_cards;
#[path = "../checkpoints_lifetime.rs"]
mod checkpoints_lifetime;
#[path = "../checkpoints_session.rs"]
mod checkpoints_session;
#[path = "../checkpoints_undo.rs"]
mod checkpoints_undo;
#[path = "../clear_history.rs"]
mod clear_history;
#[path = "../commands.rs"]
mod commands;
#[path = "../commands_run.rs"]
mod commands_run;
#[path = "../context_instructions.rs"]
mod context_instructions;
#[path = "../context_tool_results.rs"]
mod context_tool_results;
#[path = "../enter_plan_mode.rs"]
mod enter_plan_mode;
#[path = "../fault_injection.rs"]
mod fault_injection;
#[path = "../hooks_lifecycle.rs"]
mod hooks_lifecycle;
#[path = "../hosted_search_e2e.rs"]
mod hosted_search_e2e;
#[path = "../images.rs"]
mod images;
#[path = "../live_output.rs"]
mod live_output;
#[path = "../long_session.rs"]
mod long_session;
#[path = "../loop_bad_wire_input.rs"]
mod loop_bad_wire_input;
#[path = "../loop_e2e.rs"]
mod loop_e2e;
#[path = "../loop_e2e_faults.rs"]
mod loop_e2e_faults;
#[path = "../loop_faults.rs"]
mod loop_faults;
#[path = "../loop_invariants.rs"]
mod loop_invariants;
#[path = "../loop_max_turns.rs"]
mod loop_max_turns;
#[path = "../loop_summaries.rs"]
mod loop_summaries;
#[path = "../loop_turns.rs"]
mod loop_turns;
#[path = "../model_switch.rs"]
mod model_switch;
#[path = "../plan_mode.rs"]
mod plan_mode;
#[path = "../read_only_commands.rs"]
mod read_only_commands;
#[path = "../session_clear_reject.rs"]
mod session_clear_reject;
#[path = "../session_fork.rs"]
mod session_fork;
#[path = "../session_record.rs"]
mod session_record;
#[path = "../session_resume_providers.rs"]
mod session_resume_providers;
#[path = "../session_resume_state.rs"]
mod session_resume_state;
#[path = "../session_safety.rs"]
mod session_safety;
#[path = "../session_store.rs"]
mod session_store;
#[path = "../settings_load.rs"]
mod settings_load;
#[path = "../settings_mcp.rs"]
mod settings_mcp;
#[path = "../settings_provider.rs"]
mod settings_provider;
#[path = "../settings_shell.rs"]
mod settings_shell;
#[path = "../settings_trust.rs"]
mod settings_trust;
#[path = "../settings_web.rs"]
mod settings_web;
#[path = "../settings_web_search.rs"]
mod settings_web_search;
#[path = "../settings_wiring.rs"]
mod settings_wiring;
#[path = "../shell_split.rs"]
mod shell_split;
#[path = "../skill_files.rs"]
mod skill_files;
#[path = "../steer.rs"]
mod steer;
#[path = "../subagents.rs"]
mod subagents;
#[path = "../summary_call.rs"]
mod summary_call;
#[path = "../summary_clean.rs"]
mod summary_clean;
#[path = "../summary_e2e.rs"]
mod summary_e2e;
#[path = "../summary_gate.rs"]
mod summary_gate;
#[path = "../summary_request.rs"]
mod summary_request;
#[path = "../user_shell.rs"]
mod user_shell;
#[path = "../web_prompt.rs"]
mod web_prompt;

#[test]
fn every_test_file_of_the_crate_is_compiled_into_some_test_binary() {
    corvid_testkit::test_layout::assert_every_test_file_is_compiled(
        env!("CARGO_MANIFEST_DIR"),
        include_str!("main.rs"),
    );
}
