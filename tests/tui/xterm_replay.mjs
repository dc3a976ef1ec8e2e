// Replays the exact bytes corvid's TUI wrote into xterm.js (@xterm/headless, the engine of
// VS Code's terminal) and prints what its buffer holds: scrollback rows included.
// Usage: node xterm_replay.mjs BYTES_FILE COLS ROWS
// Output: one JSON object {rows, length, lines} on stdout.
import { readFileSync } from "node:fs";
import xterm from "@xterm/headless";

const [file, cols, rows] = process.argv.slice(2);
if (!file || !cols || !rows) {
  console.error("usage: node xterm_replay.mjs BYTES_FILE COLS ROWS");
  process.exit(2);
}
const term = new xterm.Terminal({
  cols: Number(cols),
  rows: Number(rows),
  scrollback: 100000,
  allowProposedApi: true,
});
const bytes = new Uint8Array(readFileSync(file));
term.write(bytes, () => {
  const buf = term.buffer.active;
  const lines = [];
  for (let i = 0; i < buf.length; i++) {
    lines.push(buf.getLine(i)?.translateToString(true) ?? "");
  }
  process.stdout.write(JSON.stringify({ rows: term.rows, length: buf.length, lines }) + "\n");
});
