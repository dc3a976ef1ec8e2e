#!/usr/bin/env bash
# Real-terminal test of the keys that work beside a task: Ctrl+S sends a prompt typed during a
# running task into it (shown as steering, then read by the model as a prompt of its own), and
# Ctrl+O opens the transcript view of the whole session, which Esc closes back to the prompt.
# Usage: tests/tui/tmux_keys.sh PATH_TO_CORVID [OUT_DIR]   (writes OUT_DIR/keys.txt)
set -euo pipefail
export TERM=${TERM:-xterm-256color}

BIN=${1:?usage: tmux_keys.sh PATH_TO_CORVID [OUT_DIR]}
OUT=${2:-$(mktemp -d)}
mkdir -p "$OUT"
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
SOCK="corvid-keys-$$"
WORK=$(mktemp -d)
CONF="$WORK/tmux.conf"
printf 'set -g history-limit 50000\nset -g status off\n' >"$CONF"
printf '# Sample project\n' >"$WORK/README.md"
mkdir -p "$WORK/home"

cleanup() {
    tmux -L "$SOCK" kill-server 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

capture() {
    tmux -L "$SOCK" capture-pane -p -J -S -50000 -t s
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
    echo "timed out waiting for /$1/:" >&2
    capture >&2
    return 1
}

fail() {
    capture >"$OUT/keys.txt"
    echo "FAIL: $*" >&2
    cat "$OUT/keys.txt" >&2
    exit 1
}

# wait_idle: the task has ended (its answer is there and nothing runs).
wait_idle() {
    local deadline=$((SECONDS + 60))
    while ((SECONDS < deadline)); do
        pane=$(capture)
        if grep -q 'This was corvid' <<<"$pane" && ! grep -q 'esc to cancel' <<<"$pane"; then
            return 0
        fi
        sleep 0.1
    done
    fail "the task did not end"
}

tmux -L "$SOCK" -f "$CONF" new-session -d -s s -x 100 -y 30 \
    "cd '$WORK' && env CORVID_HOME='$WORK/home' TERM=xterm-256color '$BIN' --demo -y 2>/dev/null; echo EXITED \$?; sleep 60"
wait_for 'Ask corvid' 20

# Ctrl+S: typed while the task runs, sent into it instead of queued for after it.
tmux -L "$SOCK" send-keys -t s -l "Look around this project and tell me what it is"
tmux -L "$SOCK" send-keys -t s Enter
wait_for 'esc to cancel' 10 || fail "the task did not start"
tmux -L "$SOCK" send-keys -t s -l "and count the files"
tmux -L "$SOCK" send-keys -t s C-s
wait_for '^› and count the files' 60 || fail "the steered prompt never reached the model"
capture | grep -q '^queued and count the files' && fail "Ctrl+S queued the prompt instead of steering"
wait_idle
capture | grep -q 'EXITED' && fail "the session ended"

# Ctrl+O: the transcript view of the whole session, then Esc back to the prompt.
tmux -L "$SOCK" send-keys -t s C-o
wait_for '^transcript · rows [0-9]+-[0-9]+ of [0-9]+' 10 || fail "Ctrl+O opened no transcript view"
capture | grep -q 'Ask corvid' && fail "the transcript view left the composer on screen"
tmux -L "$SOCK" send-keys -t s Home
wait_for '› Look around this project' 10 || fail "the transcript view does not reach the first prompt"
tmux -L "$SOCK" send-keys -t s Escape
wait_for 'Ask corvid' 10 || fail "Esc did not close the transcript view"
capture | grep -q '^transcript · rows' && fail "the transcript view stayed after Esc"
capture >"$OUT/keys.txt"
echo "ok: capture in $OUT/keys.txt"
