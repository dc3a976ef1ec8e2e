//! Real-terminal test: `tests/tui/tmux_demo.sh` drives `corvid --demo` in tmux (full and
//! compact mode) and checks capture-pane for the tool group and the label, then resumes the
//! session with `--continue` and with the `/resume` picker and checks that both show again.
//! `tests/tui/tmux_resize.sh` resizes the window right after a turn, runs a failing `!command`
//! and `/clear`, and checks that the session lives on and no scrollback was lost.
//! `tests/tui/tmux_keys.sh` steers a running task with Ctrl+S and opens and closes the
//! transcript view with Ctrl+O and Esc. `tests/tui/tmux_hooks.sh` reviews a project's hooks
//! before the UI starts and shows a block as a notice.

use std::path::PathBuf;
use std::process::Command;

/// `<target>/debug/corvid`, next to this test's own executable (`<target>/debug/deps/...`).
fn corvid_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let bin = exe.parent()?.parent()?.join("corvid");
    bin.exists().then_some(bin)
}

/// Runs `tests/tui/<script>` on the built binary, with an output folder for its captures;
/// returns the script's output and the folder. Never a silent pass: `bash tests/run.sh` (the
/// README's test command) installs tmux and builds the binary before any test runs.
fn run_script(script: &str) -> (std::process::Output, tempfile::TempDir) {
    let Some(bin) = corvid_binary() else {
        panic!(
            "the corvid binary was not built next to the tests: run the whole suite with \
             `bash tests/run.sh`, or `cargo build -p corvid-cli` first"
        );
    };
    assert!(
        have_tmux(),
        "tmux is not installed: `bash tests/run.sh` installs it (or `apt-get install tmux`)"
    );
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/tui")
        .join(script);
    let out_dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let out = Command::new("bash")
        .arg(&path)
        .arg(&bin)
        .arg(out_dir.path())
        .output()
        .unwrap_or_else(|e| panic!("bash runs: {e}"));
    (out, out_dir)
}

/// Runs `script` and fails with its output unless it succeeds.
fn assert_script_passes(script: &str) {
    let (out, _dir) = run_script(script);
    assert!(
        out.status.success(),
        "{script} failed\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
}

fn have_tmux() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn the_demo_shows_tool_groups_and_labels_in_tmux_in_full_and_compact_mode_and_again_when_resumed() {
    let (out, out_dir) = run_script("tmux_demo.sh");
    let read = |name: &str| std::fs::read_to_string(out_dir.path().join(name)).unwrap_or_default();
    assert!(
        out.status.success(),
        "tmux_demo.sh failed\nstdout:\n{}\nstderr:\n{}\nfull capture:\n{}\ncompact capture:\n{}\nresumed capture:\n{}\nresumed compact capture:\n{}\npicker capture:\n{}\nresumed from the picker:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        read("full.txt"),
        read("compact.txt"),
        read("resumed.txt"),
        read("resumed-compact.txt"),
        read("picker.txt"),
        read("resumed-picker.txt"),
    );
}

#[test]
fn resizing_right_after_a_turn_and_clear_keep_the_session_and_the_shells_scrollback() {
    assert_script_passes("tmux_resize.sh");
}

#[test]
fn hooks_in_the_terminal_ui_ask_for_review_before_it_starts_and_show_a_block_as_a_notice() {
    assert_script_passes("tmux_hooks.sh");
}

#[test]
fn ctrl_s_steers_a_running_task_and_ctrl_o_opens_and_esc_closes_the_transcript_in_tmux() {
    assert_script_passes("tmux_keys.sh");
}
