//! Most of corvid-providers's integration tests, compiled and linked as one test binary instead of one
//! per file: linking dozens of binaries was a large share of CI's cold test build. Each file
//! under `tests/` stays its own module, so a test keeps its file, its name (now prefixed by the
//! file's: `cargo test -p corvid-providers --test it file_name::`) and its private helpers.
//!
//! Adding a test file: add it below, in order (see CONTRIBUTING.md); a file that needs a
//! process of its own (process-wide state, re-running its own executable) gets a `[[test]]`
//! entry in Cargo.toml instead. The last test here fails for a file that is in neither.
// Every file keeps its own `mod common;`, as it had as a binary of its own, so the helpers are
// compiled once per file (unused copies cost type checking only, no code) and the test files
// stay unchanged.
#![allow(clippy::duplicate_mod)]

#[path = "../anthropic_server_search.rs"]
mod anthropic_server_search;
#[path = "../edge_cases.rs"]
mod edge_cases;
#[path = "../errors.rs"]
mod errors;
#[path = "../fixtures.rs"]
mod fixtures;
#[path = "../hostile_servers.rs"]
mod hostile_servers;
#[path = "../http_anthropic.rs"]
mod http_anthropic;
#[path = "../http_gemini.rs"]
mod http_gemini;
#[path = "../http_openai.rs"]
mod http_openai;
#[path = "../http_responses.rs"]
mod http_responses;
#[path = "../model_list.rs"]
mod model_list;
#[path = "../responses_hosted_search.rs"]
mod responses_hosted_search;
#[path = "../responses_store.rs"]
mod responses_store;

#[test]
fn every_test_file_of_the_crate_is_compiled_into_some_test_binary() {
    corvid_testkit::test_layout::assert_every_test_file_is_compiled(
        env!("CARGO_MANIFEST_DIR"),
        include_str!("main.rs"),
    );
}
