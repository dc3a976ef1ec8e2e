//! The part that runs in the child between fork and exec: a session of its own, the death
//! signal, and for confined commands the capability drop, Landlock and seccomp. After a fork in a multi-threaded
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

/// `<linux/capability.h>`: the capabilities that read other processes' memory or environment
/// (`/proc/PID/environ` and `mem` of a non-dumpable corvid, `process_vm_readv`, BPF and perf
/// probes, `/dev/mem`, kernel modules) or type into any terminal. Every command corvid runs,
/// confined or not, and every MCP server it starts loses them, so corvid's key stays out of
/// their reach even when they run as root (an unconfined root command cannot `mount` or
/// `strace` either; docs/security.md says so).
const DROPPED_CAPS: [libc::c_int; 6] = [
    16, // CAP_SYS_MODULE
    17, // CAP_SYS_RAWIO
    19, // CAP_SYS_PTRACE
    21, // CAP_SYS_ADMIN
    38, // CAP_PERFMON
    39, // CAP_BPF
];

/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// `struct __user_cap_header_struct`.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

/// `struct __user_cap_data_struct`.
#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// What the child does before exec, with everything it needs already built.
pub(super) struct ChildSetup {
    /// corvid's pid: if the child's parent is already someone else, corvid died mid-spawn.
    parent: libc::pid_t,
    landlock: Option<OwnedFd>,
    seccomp: Option<BpfProgram>,
    /// Whether the child starts a session of its own (commands); an MCP server keeps the
    /// process group its spawner made it lead, which `setsid` would refuse.
    own_session: bool,
}

impl ChildSetup {
    pub(super) fn new(landlock: Option<OwnedFd>, seccomp: Option<BpfProgram>) -> Self {
        Self {
            parent: libc::pid_t::try_from(std::process::id()).unwrap_or(0),
            landlock,
            seccomp,
            own_session: true,
        }
    }

    /// Only what keeps corvid's key out of reach (the capability drop) and the death signal,
    /// for a child whose spawner already made it lead a process group.
    pub(super) fn key_out_of_reach() -> Self {
        Self {
            own_session: false,
            ..Self::new(None, None)
        }
    }

    /// Runs in the child. Every step either succeeds or fails the spawn (the command then
    /// does not run at all), so a half-confined command never runs.
    fn run(&self) -> io::Result<()> {
        // A session of its own: no controlling terminal, so nothing the command or what it
        // leaves behind does reaches the user's terminal through `/dev/tty` or `TIOCSTI`.
        // SAFETY: setsid has no arguments; the child is not a process group leader.
        if self.own_session && unsafe { libc::setsid() } == -1 {
            return Err(io::Error::last_os_error());
        }
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
        drop_capabilities()?;
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

/// Takes [`DROPPED_CAPS`] out of the bounding, inheritable and ambient sets, so the command
/// (root included) does not hold them after exec. A process that may not shrink its bounding
/// set is not root and, under no-new-privileges, cannot gain them at exec anyway.
fn drop_capabilities() -> io::Result<()> {
    let mut header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: `header` and `data` are the kernel's structures for version 3, which has two
    // data elements; both live across the calls.
    check_long(unsafe { libc::syscall(libc::SYS_capget, &raw mut header, data.as_mut_ptr()) })?;
    for cap in DROPPED_CAPS {
        let (word, bit) = (cap as usize / 32, cap as u32 % 32);
        data[word].inheritable &= !(1 << bit);
    }
    // SAFETY: as above; lowering the inheritable set needs no privilege.
    check_long(unsafe { libc::syscall(libc::SYS_capset, &raw mut header, data.as_ptr()) })?;
    for cap in DROPPED_CAPS {
        // SAFETY: prctl with integer arguments only. EINVAL: a capability this kernel does
        // not know, which nothing holds.
        let in_bounding = unsafe { libc::prctl(libc::PR_CAPBSET_READ, cap, 0, 0, 0) };
        if in_bounding != 1 {
            continue;
        }
        // SAFETY: prctl with integer arguments only.
        let ambient =
            unsafe { libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_LOWER, cap, 0, 0) };
        check(ambient)?;
        // SAFETY: prctl with integer arguments only.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } != 0 {
            let err = io::Error::last_os_error();
            // SAFETY: getuid and geteuid have no arguments and cannot fail.
            let root = unsafe { libc::getuid() == 0 || libc::geteuid() == 0 };
            if root || err.raw_os_error() != Some(libc::EPERM) {
                return Err(err);
            }
        }
    }
    Ok(())
}

/// Makes `command`'s child run `setup` right before exec.
pub(super) fn install(setup: ChildSetup, command: &mut std::process::Command) {
    // SAFETY: the closure runs in the forked child before exec. `ChildSetup::run` only makes
    // async-signal-safe system calls (setsid, prctl, getppid, getuid, capget, capset,
    // landlock_restrict_self, seccomp) on data built before the fork or on its stack, and builds errors with `from_raw_os_error`/`last_os_error`,
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
