//! Killing everything a command started. Killing the shell's process group misses children
//! that left it (`setsid`, `nohup ... &` under job control, daemons that double-fork), so the
//! whole tree is found through `/proc`: the shell's descendants, and every process still
//! carrying this run's marker variable (which survives reparenting to init).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// The variable marking every process of one shell run.
pub(super) const RUN_MARKER: &str = "CORVID_SHELL_RUN";

/// How many times the tree is searched again for processes forked while it was being frozen.
const FREEZE_ROUNDS: usize = 8;

/// A marker value no other run of this or another corvid process shares.
pub(super) fn new_marker() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Kills the shell's process group and every process it started, wherever it went. Each
/// process found is stopped first so it cannot fork more while the rest are collected.
/// Without `shell` (it exited and was reaped, so its pid may belong to someone else now),
/// only the processes carrying `marker` are killed.
pub(super) fn kill_tree(shell: Option<Pid>, marker: &str) {
    let own = Pid::this();
    let mut found: BTreeSet<Pid> = BTreeSet::new();
    for _ in 0..FREEZE_ROUNDS {
        let mut fresh: BTreeSet<Pid> = shell.map(descendants).unwrap_or_default();
        fresh.extend(marked(marker));
        fresh.retain(|pid| *pid != own && !found.contains(pid));
        if fresh.is_empty() {
            break;
        }
        for &pid in &fresh {
            let _ = kill(pid, Signal::SIGSTOP);
        }
        found.extend(fresh);
    }
    // ESRCH means the process or group is already gone, which is what we want.
    if let Some(shell) = shell {
        let _ = killpg(shell, Signal::SIGKILL);
        let _ = kill(shell, Signal::SIGKILL);
    }
    for pid in found {
        let _ = kill(pid, Signal::SIGKILL);
    }
}

/// Every live descendant of `root` (not `root` itself), through each thread's `children` file.
fn descendants(root: Pid) -> BTreeSet<Pid> {
    let mut found = BTreeSet::new();
    let mut queue = vec![root];
    while let Some(pid) = queue.pop() {
        for child in children(pid) {
            if found.insert(child) {
                queue.push(child);
            }
        }
    }
    found
}

fn children(pid: Pid) -> Vec<Pid> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .map(Pid::from_raw)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Processes whose initial environment holds `RUN_MARKER=marker` (readable only for the
/// user's own processes, which are the only ones a command could have started).
fn marked(marker: &str) -> BTreeSet<Pid> {
    let needle = format!("{RUN_MARKER}={marker}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return BTreeSet::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == needle.as_bytes()))
        })
        .map(Pid::from_raw)
        .collect()
}
