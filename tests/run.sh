#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what the tests drive, then runs every test.
# No test skips: a missing tool makes its test fail, so this script installs them first.
#   tmux                    real-terminal test of the TUI (tests/tui/tmux_demo.sh)
#   node + npm packages     the official ACP client (tests/acp), xterm.js (tests/tui), and the
#                           MCP servers (tests/mcp: @modelcontextprotocol/server-everything and
#                           the SDK for the faulty test server)
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v tmux >/dev/null 2>&1 || need_apt+=(tmux)
command -v node >/dev/null 2>&1 || need_apt+=(nodejs npm)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null 2>&1; then
    echo "tests/run.sh: the tests need ${need_apt[*]}; install them (apt-get install ${need_apt[*]}) and rerun" >&2
    exit 1
  fi
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
for dir in tests/acp tests/tui tests/mcp; do
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
done

cargo test --workspace "$@"
