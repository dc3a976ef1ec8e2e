#!/usr/bin/env node
// Sends one image prompt to an ACP agent with the official client library
// (@agentclientprotocol/sdk 2.4.0) and prints one JSON object per line on stdout:
//   {"kind":"initialize","response":{...}}   the initialize answer
//   {"kind":"response","response":{...}}     the session/prompt answer
//   {"kind":"error","message":...}           a failed request
//
// Usage: node images.mjs --cwd DIR --text TEXT --image MIME BASE64 -- AGENT_CMD [ARGS...]
// Exit codes: 0 ok, 1 protocol or agent error, 2 agent could not start, 3 timeout, 64 usage.

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

function usage(message) {
  process.stderr.write(`images.mjs: ${message}\n`);
  process.exit(64);
}

const argv = process.argv.slice(2);
const split = argv.indexOf("--");
if (split < 0 || split === argv.length - 1) usage("missing `-- AGENT_CMD`");
const flags = argv.slice(0, split);
const [command, ...commandArgs] = argv.slice(split + 1);
let cwd = process.cwd();
let text = "";
let image = null;
for (let i = 0; i < flags.length; i++) {
  switch (flags[i]) {
    case "--cwd": cwd = flags[++i]; break;
    case "--text": text = flags[++i]; break;
    case "--image": image = { mimeType: flags[++i], data: flags[++i] }; break;
    default: usage(`unknown flag ${flags[i]}`);
  }
}
if (!image) usage("missing --image MIME BASE64");

const emit = (value) => process.stdout.write(JSON.stringify(value) + "\n");
const agent = spawn(command, commandArgs, { stdio: ["pipe", "pipe", "inherit"] });
agent.on("error", (error) => {
  process.stderr.write(`images.mjs: cannot start ${command}: ${error.message}\n`);
  process.exit(2);
});
const timer = setTimeout(() => {
  process.stderr.write("images.mjs: timed out\n");
  agent.kill("SIGKILL");
  process.exit(3);
}, 60_000);

let code = 0;
try {
  const app = acp.client({ name: "corvid-e2e-images" });
  const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
  await app.connectWith(stream, async (ctx) => {
    const init = await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    });
    emit({ kind: "initialize", response: init });
    const session = await ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
    const response = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId: session.sessionId,
      prompt: [{ type: "text", text }, { type: "image", ...image }],
    });
    emit({ kind: "response", response });
  });
} catch (error) {
  emit({ kind: "error", message: String(error?.message ?? error) });
  code = 1;
}
clearTimeout(timer);
agent.stdin.end();
const exited = await Promise.race([
  new Promise((resolve) => agent.once("exit", () => resolve(true))),
  new Promise((resolve) => setTimeout(() => resolve(false), 2000)),
]);
if (!exited) agent.kill("SIGKILL");
process.exit(code);
