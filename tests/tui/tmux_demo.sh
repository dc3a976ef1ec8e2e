#!/usr/bin/env bash
# Real-terminal test of the TUI: runs `corvid --demo` in tmux at 100x30, sends a prompt, waits
# for the answer and checks the captured scrollback for the tool group and the summary label,
# in full mode, with --compact, and with --compact on a 70x8 terminal (shorter than the live area);
# then `--continue` (full and compact) must show the last session's tool group and label again,
# and `/resume` in a fresh session must offer it in a picker and go on with it.
# Usage: tests/tui/tmux_demo.sh PATH_TO_CORVID [OUT_DIR]
# Captures are written to OUT_DIR (default: a temp dir) as full.txt, compact.txt, short.txt,
# resumed.txt, resumed-compact.txt, picker.txt and resumed-picker.txt.
set -euo pipefail
# tmux needs a terminal type even when this runs without one (CI).
export TERM=${TERM:-xterm-256color}

BIN=${1:?usage: tmux_demo.sh PATH_TO_CORVID [OUT_DIR]}
OUT=${2:-$(mktemp -d)}
mkdir -p "$OUT"
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
SOCK="corvid-tui-$$"
WORK=$(mktemp -d)
CONF="$WORK/tmux.conf"
printf 'set -g history-limit 50000\nset -g status off\n' >"$CONF"
# A small project for the demo model to look at.
printf '# Sample project\n\nA tiny project for the demo.\n' >"$WORK/README.md"
mkdir -p "$WORK/home"

cleanup() {
    tmux -L "$SOCK" kill-server 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

capture() {
    tmux -L "$SOCK" capture-pane -p -J -S -50000 -t "$1"
}

# wait_for SESSION PATTERN SECONDS: poll the pane until grep -E matches.
wait_for() {
    local deadline=$((SECONDS + $3))
    while ((SECONDS < deadline)); do
        if capture "$1" | grep -Eq "$2"; then
            return 0
        fi
        sleep 0.2
    done
    echo "timed out waiting for /$2/ in $1:" >&2
    capture "$1" >&2
    return 1
}

run_mode() {
    local name=$1 cols=$2 rows=$3
    shift 3
    tmux -L "$SOCK" -f "$CONF" new-session -d -s "$name" -x "$cols" -y "$rows" \
        "cd '$WORK' && env CORVID_HOME='$WORK/home' TERM=xterm-256color '$BIN' --demo -y $*; echo EXITED \$?; sleep 30"
    wait_for "$name" 'Ask corvid' 20
    tmux -L "$SOCK" send-keys -t "$name" -l "Look around this project and tell me what it is"
    tmux -L "$SOCK" send-keys -t "$name" Enter
    # The task is over when the live "Working" row is gone and the answer is in.
    wait_for "$name" '› Look around this project' 10
    local deadline=$((SECONDS + 60))
    while ((SECONDS < deadline)); do
        local pane
        pane=$(capture "$name")
        if ! grep -q 'esc to cancel' <<<"$pane" && grep -q '✓' <<<"$pane"; then
            break
        fi
        sleep 0.3
    done
    # Labels may land just after the task ends.
    sleep 1
    capture "$name" >"$OUT/$name.txt"
    # Ctrl+C twice on the idle prompt exits.
    tmux -L "$SOCK" send-keys -t "$name" C-c
    tmux -L "$SOCK" send-keys -t "$name" C-c
    wait_for "$name" 'EXITED 0' 10
    capture "$name" >"$OUT/$name.txt"
}

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# No live-area row (task row, composer, status line) may end up in the history.
no_leaks() {
    if grep -Eq 'esc to cancel|ctrl\+o (compact|transcript)' "$OUT/$1.txt"; then
        fail "$1: live-area rows leaked into the scrollback"
    fi
}

run_mode full 100 30
no_leaks full
grep -q '› Look around this project' "$OUT/full.txt" || fail "full: prompt missing"
grep -Eq '^  ✓ ' "$OUT/full.txt" || fail "full: no finished tool row"
grep -Eq '^To go on with this session: corvid --resume [0-9a-f-]+$' "$OUT/full.txt" || fail "full: no resume hint on exit"
grep -Eq '^● ' "$OUT/full.txt" || fail "full: no '● <label>' line"

run_mode compact 100 30 --compact
no_leaks compact
grep -Eq '^✓ .+ · [0-9]+ tools?$|^✓ Tool × [0-9]+$' "$OUT/compact.txt" || fail "compact: no group header"
# The label is the header when it came while the group was live, else its own line.
grep -Eq '^✓ .+ · [0-9]+ tools?$|^● ' "$OUT/compact.txt" || fail "compact: no label"
grep -Eq '^  ✓ ' "$OUT/compact.txt" && fail "compact: finished rows should fold into the header"

# A terminal shorter than the live area (the approval-free run still shows a tall group).
run_mode short 70 8 --compact
no_leaks short
grep -Eq '^✓ .+ · [0-9]+ tools?$|^● ' "$OUT/short.txt" || fail "short: no label"

# resume_mode NAME ARGS...: `corvid --demo --continue` shows the previous session, then quits.
resume_mode() {
    local name=$1
    shift
    tmux -L "$SOCK" -f "$CONF" new-session -d -s "$name" -x 100 -y 30 \
        "cd '$WORK' && env CORVID_HOME='$WORK/home' TERM=xterm-256color '$BIN' --demo -y --continue $*; echo EXITED \$?; sleep 30"
    wait_for "$name" 'Ask corvid' 20
    capture "$name" >"$OUT/$name.txt"
    tmux -L "$SOCK" send-keys -t "$name" C-c
    tmux -L "$SOCK" send-keys -t "$name" C-c
    wait_for "$name" 'EXITED 0' 10
    capture "$name" >"$OUT/$name.txt"
}

# The latest session is the short one (compact at record time, but replay follows the flags).
resume_mode resumed
no_leaks resumed
grep -q 'Resumed session .*; its earlier transcript follows' "$OUT/resumed.txt" || fail "resumed: no notice"
[ "$(grep -c '› Look around this project' "$OUT/resumed.txt")" = 1 ] || fail "resumed: prompt not shown once"
grep -Eq '^  ✓ ' "$OUT/resumed.txt" || fail "resumed: no finished tool row"
[ "$(grep -Ec '^● Listed files' "$OUT/resumed.txt")" = 1 ] || fail "resumed: first label not shown once"
grep -q 'This was corvid' "$OUT/resumed.txt" || fail "resumed: the answer is missing"

resume_mode resumed-compact --compact
no_leaks resumed-compact
grep -Eq '^✓ .+ · [0-9]+ tools?$' "$OUT/resumed-compact.txt" || fail "resumed-compact: no labelled header"
grep -Eq '^● ' "$OUT/resumed-compact.txt" && fail "resumed-compact: a label shows as its own line"
grep -Eq '^  ✓ ' "$OUT/resumed-compact.txt" && fail "resumed-compact: finished rows should fold into the header"

# `/resume` inside a fresh session: the picker lists the earlier session, Enter swaps the agent
# for the resumed one, which shows the transcript and then answers a new prompt.
name=picker
tmux -L "$SOCK" -f "$CONF" new-session -d -s "$name" -x 100 -y 30 \
    "cd '$WORK' && env CORVID_HOME='$WORK/home' TERM=xterm-256color '$BIN' --demo -y; echo EXITED \$?; sleep 30"
wait_for "$name" 'Ask corvid' 20
tmux -L "$SOCK" send-keys -t "$name" -l "/resume"
tmux -L "$SOCK" send-keys -t "$name" Enter
wait_for "$name" '› [0-9-]+ [0-9:]+  Look around this project' 10
capture "$name" >"$OUT/picker.txt"
tmux -L "$SOCK" send-keys -t "$name" Enter
wait_for "$name" 'Resumed session' 10
tmux -L "$SOCK" send-keys -t "$name" -l "And now?"
tmux -L "$SOCK" send-keys -t "$name" Enter
wait_for "$name" '› And now\?' 10
deadline=$((SECONDS + 60))
while ((SECONDS < deadline)); do
    if [ "$(capture "$name" | grep -c 'This was corvid')" = 2 ] && ! capture "$name" | grep -q 'esc to cancel'; then
        break
    fi
    sleep 0.3
done
tmux -L "$SOCK" send-keys -t "$name" C-c
tmux -L "$SOCK" send-keys -t "$name" C-c
wait_for "$name" 'EXITED 0' 10
capture "$name" >"$OUT/resumed-picker.txt"
no_leaks resumed-picker
grep -q 'Resume a session' "$OUT/picker.txt" || fail "picker: not shown"
[ "$(grep -c '^› Look around this project' "$OUT/resumed-picker.txt")" = 1 ] || fail "picker: earlier prompt not replayed once"
[ "$(grep -Ec '^● Listed files' "$OUT/resumed-picker.txt")" = 2 ] || fail "picker: the earlier and the new first label expected"
[ "$(grep -c 'This was corvid' "$OUT/resumed-picker.txt")" = 2 ] || fail "picker: the resumed agent did not answer"

echo "ok: captures in $OUT"
