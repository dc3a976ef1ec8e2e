//! The seccomp filter that takes the network away: `socket()` fails with `EPERM` for every
//! family but `AF_UNIX` (so local tools that talk over Unix sockets keep working), and
//! `io_uring`, which could open sockets without calling `socket()`, is refused outright. It
//! also refuses the `ioctl`s that type into a terminal (`TIOCSTI`, and `TIOCLINUX`, whose
//! subcommands paste the console selection), whatever terminal the command got hold of.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch, sock_filter,
};

use crate::Unavailable;

#[cfg(target_arch = "x86_64")]
const ARCH: TargetArch = TargetArch::x86_64;
#[cfg(target_arch = "aarch64")]
const ARCH: TargetArch = TargetArch::aarch64;
#[cfg(target_arch = "riscv64")]
const ARCH: TargetArch = TargetArch::riscv64;

/// The compiled filter, installed by the child with `seccomp(SECCOMP_SET_MODE_FILTER)`.
pub(super) fn filter() -> Result<BpfProgram, Unavailable> {
    let failed = |e: &dyn std::fmt::Display| {
        Unavailable(format!("the seccomp filter could not be built: {e}"))
    };
    let not_unix = SeccompRule::new(vec![
        SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            libc::AF_UNIX as u64,
        )
        .map_err(|e| failed(&e))?,
    ])
    .map_err(|e| failed(&e))?;
    // The kernel reads the request as an `unsigned int`, so only its low 32 bits are compared
    // (a request with garbage in the high bits is the same request to the kernel).
    let request_is = |request: u64| {
        SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, request)
            .and_then(|condition| SeccompRule::new(vec![condition]))
            .map_err(|e| failed(&e))
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_socket, vec![not_unix]);
    // `libc::Ioctl` is `c_ulong` on glibc but `c_int` on musl, hence the casts.
    #[allow(clippy::unnecessary_cast)]
    rules.insert(
        libc::SYS_ioctl,
        vec![
            request_is(libc::TIOCSTI as u64)?,
            request_is(libc::TIOCLINUX as u64)?,
        ],
    );
    // An empty rule list matches every call.
    for call in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        rules.insert(call, Vec::new());
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        ARCH,
    )
    .map_err(|e| failed(&e))?;
    let program: BpfProgram = filter.try_into().map_err(|e| failed(&e))?;
    with_x32_refused(program)
}

/// On x86_64, x32 system calls carry the native architecture tag with bit 30 set in their
/// number, so rules keyed on native numbers would not see them: refuse them all right after
/// the architecture check seccompiler puts first.
fn with_x32_refused(mut program: BpfProgram) -> Result<BpfProgram, Unavailable> {
    const LD_W_ABS: u16 = 0x20;
    const JMP_JSET_K: u16 = 0x45;
    const RET_K: u16 = 0x06;
    const ARCH_CHECK_LEN: usize = 3;
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    if !cfg!(target_arch = "x86_64") {
        return Ok(program);
    }
    // The architecture check loads `seccomp_data.arch` (offset 4) first.
    if program.first().map(|i| (i.code, i.k)) != Some((LD_W_ABS, 4)) {
        return Err(Unavailable(
            "the network filter has an unexpected shape (seccompiler changed)".to_owned(),
        ));
    }
    let refuse_x32 = [
        // Load `seccomp_data.nr` (offset 0).
        sock_filter {
            code: LD_W_ABS,
            jt: 0,
            jf: 0,
            k: 0,
        },
        sock_filter {
            code: JMP_JSET_K,
            jt: 0,
            jf: 1,
            k: X32_SYSCALL_BIT,
        },
        sock_filter {
            code: RET_K,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
        },
    ];
    program.splice(ARCH_CHECK_LEN..ARCH_CHECK_LEN, refuse_x32);
    Ok(program)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_filter_compiles_for_this_architecture() {
        let program = filter().unwrap();
        assert!(program.len() > 6, "program: {} instructions", program.len());
    }
}
