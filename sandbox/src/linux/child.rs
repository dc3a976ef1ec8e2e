//! The part that runs in the child between fork and exec. After a fork in a multi-threaded
//! process only async-signal-safe calls are allowed, so this does system calls on data
//! prepared beforehand and nothing else: no allocation, no locks, no formatting.
// The one place corvid uses `unsafe`: `pre_exec` and the raw system calls it makes.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;

use seccompiler::{BpfProgram, sock_filter};

/// `struct sock_fprog` of `<linux/filter.h>`: the program handed to `seccomp(2)`.
#[repr(C)]
struct SockFprog {
    len: libc::c_ushort,
    filter: *const sock_filter,
}

/// What the child does before exec, with everything it needs already built.
pub(super) struct ChildSetup {
    /// corvid's pid: if the child's parent is already someone else, corvid died mid-spawn.
    parent: libc::pid_t,
    landlock: Option<OwnedFd>,
    seccomp: Option<BpfProgram>,
}

impl ChildSetup {
    pub(super) fn new(landlock: Option<OwnedFd>, seccomp: Option<BpfProgram>) -> Self {
        Self {
            parent: libc::pid_t::try_from(std::process::id()).unwrap_or(0),
            landlock,
            seccomp,
        }
    }

    /// Runs in the child. Every step either succeeds or fails the spawn (the command then
    /// does not run at all), so a half-confined command never runs.
    fn run(&self) -> io::Result<()> {
        // SAFETY: prctl with integer arguments only; no memory is passed.
        check(unsafe {
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            )
        })?;
        // SAFETY: getppid has no arguments and cannot fail.
        if self.parent != 0 && unsafe { libc::getppid() } != self.parent {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        if self.landlock.is_none() && self.seccomp.is_none() {
            return Ok(());
        }
        // Landlock and an unprivileged seccomp filter both require no-new-privileges; it also
        // keeps setuid programs from regaining what the sandbox takes away.
        // SAFETY: prctl with integer arguments only.
        check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) })?;
        if let Some(ruleset) = &self.landlock {
            // SAFETY: the ruleset fd is owned by `self` and open until after exec; flags 0.
            check_long(unsafe {
                libc::syscall(
                    libc::SYS_landlock_restrict_self,
                    ruleset.as_raw_fd(),
                    0 as libc::c_uint,
                )
            })?;
        }
        if let Some(program) = &self.seccomp {
            let len = libc::c_ushort::try_from(program.len())
                .map_err(|_| io::Error::from_raw_os_error(libc::E2BIG))?;
            let fprog = SockFprog {
                len,
                filter: program.as_ptr(),
            };
            // SAFETY: `fprog` points at `program`, which `self` owns and which outlives the
            // call; the kernel copies the program before returning.
            check_long(unsafe {
                libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    0 as libc::c_uint,
                    &raw const fprog,
                )
            })?;
        }
        Ok(())
    }
}

/// Makes `command`'s child run `setup` right before exec.
pub(super) fn install(setup: ChildSetup, command: &mut std::process::Command) {
    // SAFETY: the closure runs in the forked child before exec. `ChildSetup::run` only makes
    // async-signal-safe system calls (prctl, getppid, landlock_restrict_self, seccomp) on data
    // built before the fork, and builds errors with `from_raw_os_error`/`last_os_error`,
    // which do not allocate.
    unsafe {
        command.pre_exec(move || setup.run());
    }
}

fn check(ret: libc::c_int) -> io::Result<()> {
    if ret == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn check_long(ret: libc::c_long) -> io::Result<()> {
    if ret == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
