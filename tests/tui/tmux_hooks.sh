#!/usr/bin/env bash
# Real-terminal test of hooks in the terminal UI: a trusted project holds a hook the user has
# not approved, so before the UI starts corvid lists it and asks; a yes approves it (pinned in
# trusted_folders.json). Then the user's PreToolUse guard blocks the demo's first read and the
# transcript shows the one-line notice with the reason, and the approved project Stop hook runs.
# Usage: tests/tui/tmux_hooks.sh PATH_TO_CORVID [OUT_DIR]   (writes OUT_DIR/hooks.txt)
set -euo pipefail
export TERM=${TERM:-xterm-256color}

BIN=${1:?usage: tmux_hooks.sh PATH_TO_CORVID [OUT_DIR]}
OUT=${2:-$(mktemp -d)}
mkdir -p "$OUT"
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
SOCK="corvid-hooks-$$"
WORK=$(cd "$(mktemp -d)" && pwd -P)
CONF="$WORK/tmux.conf"
printf 'set -g history-limit 50000\nset -g status off\n' >"$CONF"
mkdir -p "$WORK/project/.corvid" "$WORK/home"
PROJECT="$WORK/project"
printf '# Sample project\n' >"$PROJECT/README.md"
# The project's hook, never approved yet.
printf '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "touch stop-hook-ran"}]}]}}\n' \
    >"$PROJECT/.corvid/settings.json"
# The folder is trusted and its settings file accepted as it is: only the hook is new.
DIGEST=$(sha256sum "$PROJECT/.corvid/settings.json" | cut -d' ' -f1)
printf '{"trustedFolders": ["%s"], "acceptedFiles": {"%s/.corvid/settings.json": "sha256:%s"}}\n' \
    "$PROJECT" "$PROJECT" "$DIGEST" >"$WORK/home/trusted_folders.json"
# The user's own guard: every listing and read is refused with a reason.
printf '{"hooks": {"PreToolUse": [{"matcher": "LS|Read", "hooks": [{"type": "command", "command": "echo audited today >&2; exit 2"}]}]}}\n' \
    >"$WORK/home/settings.json"

cleanup() {
    tmux -L "$SOCK" kill-server 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

capture() {
    tmux -L "$SOCK" capture-pane -p -J -S -50000 -t s
}

fail() {
    capture >"$OUT/hooks.txt"
    echo "FAIL: $*" >&2
    cat "$OUT/hooks.txt" >&2
    exit 1
}

# wait_for PATTERN SECONDS: poll the pane until grep -E matches.
wait_for() {
    local deadline=$((SECONDS + $2))
    while ((SECONDS < deadline)); do
        if capture | grep -Eq "$1"; then
            return 0
        fi
        sleep 0.2
    done
    fail "timed out waiting for /$1/"
}

tmux -L "$SOCK" -f "$CONF" new-session -d -s s -x 120 -y 40 \
    "cd '$PROJECT' && env CORVID_HOME='$WORK/home' CORVID_DEMO_PACING_MS=0 TERM=xterm-256color '$BIN' --demo -y 2>/dev/null; echo EXITED \$?; sleep 60"
wait_for '1 project hook waits for review' 20
wait_for 'Stop  \*  touch stop-hook-ran' 5
wait_for 'Approve all shown\?' 5
tmux -L "$SOCK" send-keys -t s -l "y"
tmux -L "$SOCK" send-keys -t s Enter
wait_for 'Ask corvid' 20
grep -q 'acceptedHooks' "$WORK/home/trusted_folders.json" || fail "the approval was not remembered"

tmux -L "$SOCK" send-keys -t s -l "Look around this project"
tmux -L "$SOCK" send-keys -t s Enter
wait_for 'hook PreToolUse `echo audited today >&2; exit 2`: block: audited today' 30
# The approved project hook runs when the turn ends.
deadline=$((SECONDS + 30))
until [ -e "$PROJECT/stop-hook-ran" ]; do
    ((SECONDS < deadline)) || fail "the approved project Stop hook did not run"
    sleep 0.2
done
capture >"$OUT/hooks.txt"
grep -q 'EXITED' "$OUT/hooks.txt" && fail "the session ended"
echo ok
