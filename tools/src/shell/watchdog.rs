//! Commands must not outlive corvid, even a `kill -9` of it, which no code in corvid sees.
//! `PR_SET_PDEATHSIG` covers the shell itself but not what it left in the background, so one
//! small watchdog process per corvid waits on a pipe that only corvid holds open: when corvid
//! is gone, however it went, the read ends and the watchdog kills every process carrying this
//! corvid's owner marker, then removes the sandbox's private temp folders of this corvid.

use std::os::unix::process::CommandExt;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// The variable naming the corvid process a command belongs to.
pub(super) const OWNER_MARKER: &str = "CORVID_SHELL_OWNER";

/// Waits for end of input, then stops and kills every process whose initial environment holds
/// `OWNER_MARKER=$1`, searching again for ones forked meanwhile; then removes this user's
/// folders named `$2*` (not links) directly in the folders `$3...`.
const SCRIPT: &str = r#"
read -r _
needle="CORVID_SHELL_OWNER=$1"
all=
for round in 1 2 3; do
  for env in /proc/[0-9]*/environ; do
    pid=${env#/proc/}
    pid=${pid%/environ}
    [ "$pid" = "$$" ] && continue
    if grep -qzxF -- "$needle" "$env" 2>/dev/null; then
      kill -STOP "$pid" 2>/dev/null
      all="$all $pid"
    fi
  done
done
[ -n "$all" ] && kill -KILL $all 2>/dev/null
prefix=$2
shift 2
for parent in "$@"; do
  find "$parent" -mindepth 1 -maxdepth 1 -type d -user "$(id -u)" -name "$prefix*" \
    -exec rm -rf -- {} + 2>/dev/null
done
exit 0
"#;

/// The running watchdog: its marker, and the pipe end whose closing (at corvid's exit) wakes it.
struct Watchdog {
    marker: String,
    _wake_on_close: ChildStdin,
}

static WATCHDOG: OnceLock<Option<Watchdog>> = OnceLock::new();

/// This corvid's owner marker, starting the watchdog on first use; `None` when it could not
/// be started (commands then still die with corvid only as far as `PR_SET_PDEATHSIG` reaches).
pub(super) fn owner_marker() -> Option<&'static str> {
    WATCHDOG
        .get_or_init(start)
        .as_ref()
        .map(|w| w.marker.as_str())
}

fn start() -> Option<Watchdog> {
    let started = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let marker = format!("{}-{started}", std::process::id());
    // Its own process group, so a Ctrl-C meant for corvid does not take the watchdog first.
    let child = Command::new("bash")
        .arg("-c")
        .arg(SCRIPT)
        .arg("corvid-shell-watchdog")
        .arg(&marker)
        .arg(format!(
            "{}{}-",
            corvid_sandbox::PRIVATE_TMP_PREFIX,
            std::process::id()
        ))
        .args(corvid_sandbox::PRIVATE_TMP_PARENTS)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
    match child {
        Ok(mut child) => {
            let stdin = child.stdin.take()?;
            Some(Watchdog {
                marker,
                _wake_on_close: stdin,
            })
        }
        Err(e) => {
            tracing::warn!(
                "the shell watchdog could not start ({e}); background commands may outlive a \
                 killed corvid"
            );
            None
        }
    }
}
