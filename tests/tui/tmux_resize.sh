#!/usr/bin/env bash
# Real-terminal test of resizes, `/clear` and a failing command: the shell prints 40 lines, then
# `corvid --demo -y` runs one turn at 100x30 and the window is resized right after it (narrower,
# wider, shorter, taller). The session must stay alive and usable, `!ls nonexist` must show a
# failed mark with the command's own output, and after `/clear` everything printed before
# (the shell's lines and the transcript) must still be in tmux's scrollback, once. Then Ctrl+R
# finds the first prompt, Ctrl+G / Ctrl+X Ctrl+E edit the prompt in $EDITOR, and a prompt sent
# while a task runs is queued and sent after it.
# Usage: tests/tui/tmux_resize.sh PATH_TO_CORVID [OUT_DIR]   (writes OUT_DIR/resize.txt)
set -euo pipefail
export TERM=${TERM:-xterm-256color}

BIN=${1:?usage: tmux_resize.sh PATH_TO_CORVID [OUT_DIR]}
OUT=${2:-$(mktemp -d)}
mkdir -p "$OUT"
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
SOCK="corvid-resize-$$"
WORK=$(mktemp -d)
CONF="$WORK/tmux.conf"
printf 'set -g history-limit 50000\nset -g status off\n' >"$CONF"
printf '# Sample project\n' >"$WORK/README.md"
mkdir -p "$WORK/home"
# The "editor" Ctrl+G and Ctrl+X Ctrl+E open: it appends to the prompt file.
printf '#!/bin/sh\nprintf " (edited)\\n" >>"$1"\n' >"$WORK/editor.sh"
chmod +x "$WORK/editor.sh"

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

# tty_size_is ROWS COLS: whether the pane's terminal reports this size. tmux resizes its own
# screen at once but tells the program (TIOCSWINSZ, SIGWINCH) a little later; keys sent before
# that reach corvid before it knows about the resize, so each step waits for it.
tty_size_is() {
    [ "$(stty -F "$(tmux -L "$SOCK" display -p -t s '#{pane_tty}')" size 2>/dev/null)" = "$1 $2" ]
}

wait_for_tty_size() {
    local deadline=$((SECONDS + 10))
    while ((SECONDS < deadline)); do
        tty_size_is "$1" "$2" && return 0
        sleep 0.05
    done
    return 1
}

fail() {
    capture >"$OUT/resize.txt"
    echo "FAIL: $*" >&2
    cat "$OUT/resize.txt" >&2
    exit 1
}

tmux -L "$SOCK" -f "$CONF" new-session -d -s s -x 100 -y 30 \
    "seq -f 'shell line %g' 1 40; cd '$WORK' && env CORVID_HOME='$WORK/home' EDITOR='$WORK/editor.sh' TERM=xterm-256color '$BIN' --demo -y 2>/dev/null; echo EXITED \$?; sleep 60"
wait_for 'Ask corvid' 20
tmux -L "$SOCK" send-keys -t s -l "Look around this project and tell me what it is"
tmux -L "$SOCK" send-keys -t s Enter
wait_for '› Look around this project' 10
deadline=$((SECONDS + 60))
while ((SECONDS < deadline)); do
    pane=$(capture)
    if grep -q 'This was corvid' <<<"$pane" && ! grep -q 'esc to cancel' <<<"$pane"; then
        break
    fi
    sleep 0.1
done

# Right after the turn: each resize must leave a working prompt at once.
step=0
typed=""
for size in "60 30" "100 30" "100 20" "100 30"; do
    step=$((step + 1))
    typed="${typed}r$step"
    read -r cols rows <<<"$size"
    tmux -L "$SOCK" resize-window -t s -x "$cols" -y "$rows"
    wait_for_tty_size "$rows" "$cols" || fail "tmux did not resize the pane to $size"
    tmux -L "$SOCK" send-keys -t s -l "r$step"
    wait_for "› $typed" 10 || fail "no prompt after resize $step ($size)"
    capture | grep -q 'EXITED' && fail "the session ended after resize $step ($size)"
done
tmux -L "$SOCK" send-keys -t s C-u

tmux -L "$SOCK" send-keys -t s -l "!ls nonexist"
tmux -L "$SOCK" send-keys -t s Enter
wait_for 'Run ls nonexist' 10
wait_for 'Ask corvid' 10

tmux -L "$SOCK" send-keys -t s -l "/clear"
tmux -L "$SOCK" send-keys -t s Enter
sleep 1
tmux -L "$SOCK" send-keys -t s -l "still here"
wait_for '› still here' 10
capture >"$OUT/resize.txt"
grep -q 'EXITED' "$OUT/resize.txt" && fail "the session ended"

grep -q '^shell line 1$' "$OUT/resize.txt" || fail "the shell's output from before corvid is gone (scrollback erased)"
grep -q '^shell line 40$' "$OUT/resize.txt" || fail "the shell's last line is gone"
[ "$(grep -c '› Look around this project' "$OUT/resize.txt")" = 1 ] || fail "the prompt is not in history once"
[ "$(grep -c 'This was corvid' "$OUT/resize.txt")" = 1 ] || fail "the answer is not in history once"
grep -Eq '✗ Run ls nonexist' "$OUT/resize.txt" || fail "a failed command has no failed mark"
grep -Eq '✓ Run ls nonexist' "$OUT/resize.txt" && fail "a failed command shows a success mark"
grep -q 'No such file or directory' "$OUT/resize.txt" || fail "the failed command's output is not shown"
grep -Eq 'Exit code:|Stderr:|Stdout:' "$OUT/resize.txt" && fail "the card shows the result's framing"
# No live-area row (task row, status line) may end up in the history.
[ "$(grep -Ec 'esc to cancel|ctrl\+o (compact|full)' "$OUT/resize.txt")" -le 1 ] || fail "live rows leaked into the scrollback"

# Ctrl+R finds the earlier prompt (history is kept per project); Esc leaves the search.
tmux -L "$SOCK" send-keys -t s C-r
tmux -L "$SOCK" send-keys -t s -l "around"
wait_for '^search: around' 10 || fail "Ctrl+R opened no search"
wait_for '^› Look around this project and tell me what it is' 10 || fail "Ctrl+R found nothing"
tmux -L "$SOCK" send-keys -t s Escape
wait_for '^› still here' 10 || fail "Esc did not leave the search"

# Ctrl+G and Ctrl+X Ctrl+E hand the prompt to $EDITOR and take back what it wrote.
tmux -L "$SOCK" send-keys -t s C-g
wait_for '^› still here \(edited\)' 10 || fail "Ctrl+G did not edit the prompt in \$EDITOR"
tmux -L "$SOCK" send-keys -t s C-x C-e
wait_for '^› still here \(edited\) \(edited\)' 10 || fail "Ctrl+X Ctrl+E did not edit the prompt"

# Enter while a task runs queues the prompt; it is sent when the task ends.
tmux -L "$SOCK" send-keys -t s C-u
tmux -L "$SOCK" send-keys -t s -l "Look around this project and tell me what it is"
tmux -L "$SOCK" send-keys -t s Enter
wait_for 'esc to cancel' 10
tmux -L "$SOCK" send-keys -t s -l "a queued follow-up"
tmux -L "$SOCK" send-keys -t s Enter
wait_for '^queued a queued follow-up' 10 || fail "the prompt typed during the task is not shown as queued"
wait_for '^› a queued follow-up' 60 || fail "the queued prompt was not sent when the task ended"
capture >"$OUT/queued.txt"
echo "ok: capture in $OUT/resize.txt"
