//! The kernel check CI runs: a sandbox test may only skip where Landlock is missing, and CI's
//! kernel must have it, so a silent skip cannot hide there.

#![allow(clippy::unwrap_used, clippy::print_stderr)]

use std::process::Command;

use corvid_sandbox::{Confinement, SandboxLevel};
use pretty_assertions::assert_eq;

#[test]
fn ci_kernel_supports_landlock() {
    match corvid_sandbox::supported() {
        Ok(()) => {}
        Err(why) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true but the shell sandbox is unavailable on this machine: {why}")
        }
        Err(why) => eprintln!(
            "\n!!! LANDLOCK UNAVAILABLE: the shell sandbox cannot be tested on this kernel: {why} \
             !!!\n"
        ),
    }
}

#[test]
fn a_confined_child_cannot_write_outside_its_workspace_but_can_inside() {
    if let Err(why) = corvid_sandbox::supported() {
        eprintln!("\n!!! LANDLOCK UNAVAILABLE, sandbox test not run: {why} !!!\n");
        return;
    }
    let base = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ws = base.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let outside = base.path().join("outside");

    let mut command = Command::new("bash");
    command
        .arg("-c")
        .arg(format!(
            "echo in > inside; echo out > {}",
            outside.display()
        ))
        .current_dir(&ws);
    Confinement::prepare(SandboxLevel::WorkspaceWrite, &ws)
        .unwrap()
        .apply_to(&mut command);
    let out = command.output().unwrap();

    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Permission denied"),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(ws.join("inside")).unwrap(), "in\n");
    assert!(!outside.exists());
}

#[test]
fn a_workspace_in_tmp_keeps_its_git_read_only_and_gets_a_private_tmpdir() {
    if let Err(why) = corvid_sandbox::supported() {
        eprintln!("\n!!! LANDLOCK UNAVAILABLE, sandbox test not run: {why} !!!\n");
        return;
    }
    // A project in /tmp: granting /tmp whole would make its .git writable again.
    let base = tempfile::tempdir_in("/tmp").unwrap();
    let ws = base.path().join("ws");
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
    std::fs::write(ws.join("main.rs"), "").unwrap();
    let sibling = base.path().join("sibling");

    let mut command = Command::new("bash");
    command
        .arg("-c")
        .arg(format!(
            "echo x >> .git/config; echo y > {}; echo in > main.rs; \
             t=$(mktemp) && echo tmp > \"$t\" && cat \"$t\"",
            sibling.display()
        ))
        .current_dir(&ws);
    Confinement::prepare(SandboxLevel::WorkspaceWrite, &ws)
        .unwrap()
        .apply_to(&mut command);
    let out = command.output().unwrap();

    assert_eq!(
        std::fs::read_to_string(ws.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(!sibling.exists());
    assert_eq!(std::fs::read_to_string(ws.join("main.rs")).unwrap(), "in\n");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "tmp\n");
}
