#!/usr/bin/env node
// Drives an ACP agent with the official client library (@agentclientprotocol/sdk 2.4.0) as an
// editor that offers terminals: it advertises `terminal: true` and runs terminal/create
// commands with node's child_process, as editors do. Prints one JSON object per line:
//   {"kind":"session","sessionId":...}             the session created
//   {"kind":"update","update":{...}}               a session/update
//   {"kind":"permission","toolCall":{...}}         a session/request_permission (allowed once)
//   {"kind":"terminal","method":M,"params":{...}}  a terminal/* request, before it is answered
//   {"kind":"response","response":{...}}           the session/prompt answer
//   {"kind":"error","message":...}                 a failed request
//
// Usage: node terminal.mjs [--prompt TEXT] [--cwd DIR] [--timeout SECONDS]
//                          [--cancel-on-wait] -- AGENT_CMD [ARGS...]
// --cancel-on-wait sends session/cancel once the agent waits for a terminal's exit.
// An unknown terminal id is answered with a plain JSON-RPC error, as editors do.
// Exit codes: 0 ok, 1 protocol or agent error, 2 agent could not start, 3 timeout, 64 usage.

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

function usage(message) {
  process.stderr.write(`terminal.mjs: ${message}\n`);
  process.exit(64);
}

const argv = process.argv.slice(2);
const split = argv.indexOf("--");
if (split < 0 || split === argv.length - 1) usage("missing `-- AGENT_CMD`");
const flags = argv.slice(0, split);
const [command, ...commandArgs] = argv.slice(split + 1);
const options = { prompt: "run it", cwd: process.cwd(), timeout: 30, cancelOnWait: false };
for (let i = 0; i < flags.length; i++) {
  switch (flags[i]) {
    case "--prompt": options.prompt = flags[++i]; break;
    case "--cwd": options.cwd = flags[++i]; break;
    case "--timeout": options.timeout = Number(flags[++i]); break;
    case "--cancel-on-wait": options.cancelOnWait = true; break;
    default: usage(`unknown flag ${flags[i]}`);
  }
}

const emit = (value) => process.stdout.write(JSON.stringify(value) + "\n");

const agent = spawn(command, commandArgs, { stdio: ["pipe", "pipe", "inherit"], env: process.env });
try {
  await new Promise((resolve, reject) => {
    agent.once("spawn", resolve);
    agent.once("error", reject);
  });
} catch (error) {
  process.stderr.write(`terminal.mjs: cannot start ${command}: ${error.message}\n`);
  process.exit(2);
}
let finished = false;
agent.once("exit", (code, signal) => {
  if (!finished) {
    process.stderr.write(`terminal.mjs: the agent exited early (code ${code}, signal ${signal})\n`);
    process.exit(1);
  }
});
const timer = setTimeout(() => {
  process.stderr.write(`terminal.mjs: timed out after ${options.timeout}s\n`);
  agent.kill("SIGKILL");
  process.exit(3);
}, options.timeout * 1000);

// id -> { child, output, truncated, limit, exit: Promise<{exitCode, signal}>, status }
const terminals = new Map();
let nextId = 1;
let cancel = () => {};

function lookup(terminalId) {
  const term = terminals.get(terminalId);
  if (!term) throw acp.RequestError.invalidParams({ terminalId }, `unknown terminal ${terminalId}`);
  return term;
}

function append(term, chunk) {
  term.output += chunk.toString("utf8");
  if (term.limit != null && Buffer.byteLength(term.output) > term.limit) {
    // Keep the end, as editors do.
    while (Buffer.byteLength(term.output) > term.limit) term.output = term.output.slice(1);
    term.truncated = true;
  }
}

const app = acp
  .client({ name: "corvid-terminal-e2e" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    emit({ kind: "update", update: params.update });
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    emit({ kind: "permission", toolCall: params.toolCall });
    const option = params.options.find((o) => o.kind === "allow_once");
    return option
      ? { outcome: { outcome: "selected", optionId: option.optionId } }
      : { outcome: { outcome: "cancelled" } };
  })
  .onRequest(acp.methods.client.terminal.create, ({ params }) => {
    emit({ kind: "terminal", method: "terminal/create", params });
    const env = Object.fromEntries((params.env ?? []).map((v) => [v.name, v.value]));
    const child = spawn(params.command, params.args ?? [], {
      cwd: params.cwd ?? options.cwd,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const terminalId = `term-${nextId++}`;
    const term = { child, output: "", truncated: false, limit: params.outputByteLimit, status: null };
    term.exit = new Promise((resolve) => {
      child.once("exit", (code, signal) => {
        term.status = { exitCode: code, signal };
        resolve(term.status);
      });
      child.once("error", () => {
        term.status = { exitCode: 127, signal: null };
        resolve(term.status);
      });
    });
    child.stdout.on("data", (chunk) => append(term, chunk));
    child.stderr.on("data", (chunk) => append(term, chunk));
    terminals.set(terminalId, term);
    return { terminalId };
  })
  .onRequest(acp.methods.client.terminal.waitForExit, async ({ params }) => {
    emit({ kind: "terminal", method: "terminal/wait_for_exit", params });
    const term = lookup(params.terminalId);
    if (options.cancelOnWait) cancel();
    return await term.exit;
  })
  .onRequest(acp.methods.client.terminal.output, ({ params }) => {
    emit({ kind: "terminal", method: "terminal/output", params });
    const term = lookup(params.terminalId);
    return {
      output: term.output,
      truncated: term.truncated,
      ...(term.status ? { exitStatus: term.status } : {}),
    };
  })
  .onRequest(acp.methods.client.terminal.kill, ({ params }) => {
    emit({ kind: "terminal", method: "terminal/kill", params });
    lookup(params.terminalId).child.kill("SIGKILL");
    return {};
  })
  .onRequest(acp.methods.client.terminal.release, ({ params }) => {
    emit({ kind: "terminal", method: "terminal/release", params });
    const term = lookup(params.terminalId);
    if (!term.status) term.child.kill("SIGKILL");
    terminals.delete(params.terminalId);
    return {};
  });

let code = 0;
try {
  const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
  await app.connectWith(stream, async (ctx) => {
    await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: true },
    });
    const session = await ctx.request(acp.methods.agent.session.new, { cwd: options.cwd, mcpServers: [] });
    const sessionId = session.sessionId;
    emit({ kind: "session", sessionId });
    let cancelled = false;
    cancel = () => {
      if (cancelled) return;
      cancelled = true;
      ctx.notify(acp.methods.agent.session.cancel, { sessionId });
    };
    const response = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: options.prompt }],
    });
    emit({ kind: "response", response });
  });
} catch (error) {
  emit({ kind: "error", message: String(error?.message ?? error) });
  code = 1;
}
finished = true;
clearTimeout(timer);
for (const term of terminals.values()) if (!term.status) term.child.kill("SIGKILL");
agent.stdin.end();
const exited = await Promise.race([
  new Promise((resolve) => agent.once("exit", () => resolve(true))),
  new Promise((resolve) => setTimeout(() => resolve(false), 2000)),
]);
if (!exited) agent.kill("SIGKILL");
process.exit(code);
