//! The kernel check CI runs: a sandbox test may only skip where Landlock is missing, and CI's
//! kernel must have it, so a silent skip cannot hide there.

#![allow(clippy::unwrap_used, clippy::print_stderr, clippy::print_stdout)]

use std::os::fd::AsRawFd;
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
    Confinement::prepare(SandboxLevel::WorkspaceWrite, &ws, &[])
        .unwrap()
        .apply_to(&mut command)
        .unwrap();
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
    Confinement::prepare(SandboxLevel::WorkspaceWrite, &ws, &[])
        .unwrap()
        .apply_to(&mut command)
        .unwrap();
    let out = command.output().unwrap();

    assert_eq!(
        std::fs::read_to_string(ws.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(!sibling.exists());
    assert_eq!(std::fs::read_to_string(ws.join("main.rs")).unwrap(), "in\n");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "tmp\n");
}

/// Set for the copy of this test binary a confined child runs.
const OWN_TERMINAL: &str = "CORVID_TEST_TIOCSTI_ON_AN_OWN_TERMINAL";

/// In the confined copy: opens a terminal of its own, makes it its controlling terminal (the
/// one case the kernel lets anyone type into) and tries `TIOCSTI` on it, also with junk in the
/// request's high bits, which the kernel ignores. Prints each outcome.
#[test]
fn helper_types_into_its_own_terminal() {
    if std::env::var_os(OWN_TERMINAL).is_none() {
        return;
    }
    let pty = nix::pty::openpty(None, None).unwrap();
    // SAFETY: TIOCSCTTY takes an integer; TIOCSTI reads one byte from a pointer to `byte`.
    #[allow(unsafe_code)]
    unsafe {
        assert_eq!(libc::ioctl(pty.slave.as_raw_fd(), libc::TIOCSCTTY, 0), 0);
        let byte = b'y';
        for request in [libc::TIOCSTI, libc::TIOCSTI | 0xdead_0000_0000] {
            let ret = libc::ioctl(pty.slave.as_raw_fd(), request, &raw const byte);
            let outcome = if ret == 0 {
                "ok".to_owned()
            } else {
                format!("{:?}", nix::errno::Errno::last())
            };
            println!("TIOCSTI {outcome}");
        }
    }
}

#[test]
fn the_seccomp_filter_refuses_tiocsti_even_on_the_commands_own_terminal() {
    corvid_sandbox::supported().expect("this test needs Landlock");
    let base = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "--exact",
            "helper_types_into_its_own_terminal",
            "--nocapture",
        ])
        .env(OWN_TERMINAL, "1")
        .current_dir(base.path());
    let _check = Confinement::prepare(SandboxLevel::ReadOnly, base.path(), &[])
        .unwrap()
        .apply_to(&mut command);
    let out = command.output().unwrap();

    let stdout = String::from_utf8_lossy(&out.stdout);
    let outcomes: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("TIOCSTI"))
        .collect();
    assert_eq!(outcomes, ["TIOCSTI EPERM", "TIOCSTI EPERM"], "{stdout}");
}

#[test]
fn stale_private_tmpdirs_of_dead_processes_are_removed() {
    let dead = {
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    };
    let mut alive = Command::new("sleep").arg("30").spawn().unwrap();
    let parent = corvid_sandbox::PRIVATE_TMP_PARENTS[0];
    let prefix = corvid_sandbox::PRIVATE_TMP_PREFIX;
    let stale = std::path::PathBuf::from(format!("{parent}/{prefix}{dead}-test"));
    let live = std::path::PathBuf::from(format!("{parent}/{prefix}{}-test", alive.id()));
    for dir in [&stale, &live] {
        std::fs::create_dir_all(dir.join("inner")).unwrap();
    }

    corvid_sandbox::remove_stale_private_tmps();

    let live_kept = live.is_dir();
    alive.kill().unwrap();
    alive.wait().unwrap();
    let _ = std::fs::remove_dir_all(&live);
    assert!(!stale.exists());
    assert!(live_kept);
}
