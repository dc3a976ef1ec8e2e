#!/usr/bin/env node
// Drives an ACP agent with the official client library (@agentclientprotocol/sdk 2.4.0) and
// prints one JSON object per line on stdout for every message the client receives:
//   {"kind":"session","sessionId":...,"response"} the session created (session/new)
//   {"kind":"loaded","response":{...}}          the session/load answer (after its replayed updates)
//   {"kind":"resumed","response":{...}}         the session/resume answer (--resume)
//   {"kind":"update","update":{...}}            a session/update
//   {"kind":"rendered","line":...}              with --render: the line the SDK's example client
//                                               prints for a tool_call / tool_call_update
//   {"kind":"config_set","response":{...}}      the answer of --set-config
//   {"kind":"mode_set","response":{...}}        the answer of --set-mode
//   {"kind":"list","response":{...}}            the session/list answer (--list, after the prompts)
//   {"kind":"permission","toolCall":{...}}      a session/request_permission (auto-answered)
//   {"kind":"notification","method":M,"params"} any other notification (e.g. _corvid/*)
//   {"kind":"response","response":{...}}        the session/prompt answer
//   {"kind":"fs","method":M,"path":P}           an fs/* request (with --fs), answered from disk
//   {"kind":"reloaded","response":{...}}        the answer of --reload's session/load
//   {"kind":"error","message":...}              a failed request
//
// Usage: node client.mjs [--prompt TEXT]... [--reject] [--cancel-on-tool-call] [--timeout SECONDS]
//                        [--cwd DIR] [--load SESSION_ID] [--wait-summary] [--fs] [--reload]
//                        [--summary-notification] [--mcp-server JSON]... [--render]
//                        [--cancel-permission] [--resume SESSION_ID] [--set-config ID=VALUE]
//                        [--set-mode MODE] [--list] [--wait-model MODEL] -- AGENT_CMD [ARGS...]
// Each --prompt is sent in turn (default: one "hello").
// --load resumes a recorded session with session/load instead of session/new, then prompts.
// --reload sends session/load of the open session after the first prompt, on the same
// connection (an editor whose UI reconnected), then goes on with the other prompts.
// --fs advertises fs/read_text_file and fs/write_text_file and serves them from disk; a read
// of a missing file throws, which the library answers with a plain -32603 (as the official
// Python client does).
// --mcp-server adds an ACP McpServer entry (JSON) to session/new and session/load.
// --summary-notification opts in to `_corvid/tool_use_summary` in initialize.
// --wait-summary keeps the connection open after the last answer until a tool-use label
// arrived (`_meta.toolUseSummary` on a tool_call_update; labels may follow the answer).
// --cancel-permission answers every permission request with the `cancelled` outcome.
// --resume resumes a recorded session with session/resume (no replay) instead of session/new.
// --set-config and --set-mode are sent once the session exists, before the prompts.
// --wait-model keeps the connection open after the last answer until the `model` option
// offers MODEL (in the session's answer or a config_option_update).
// Exit codes: 0 ok, 1 protocol or agent error, 2 agent could not start, 3 timeout, 64 usage.

import { spawn } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

function usage(message) {
  process.stderr.write(`client.mjs: ${message}\n`);
  process.exit(64);
}

const argv = process.argv.slice(2);
const split = argv.indexOf("--");
if (split < 0 || split === argv.length - 1) usage("missing `-- AGENT_CMD`");
const flags = argv.slice(0, split);
const [command, ...commandArgs] = argv.slice(split + 1);
const options = {
  prompts: [],
  reject: false,
  cancelOnToolCall: false,
  timeout: 30,
  cwd: process.cwd(),
  load: null,
  waitSummary: false,
  fs: false,
  reload: false,
  summaryNotification: false,
  mcpServers: [],
  render: false,
  cancelPermission: false,
  resume: null,
  setConfig: null,
  setMode: null,
  list: false,
  waitModel: null,
};
for (let i = 0; i < flags.length; i++) {
  switch (flags[i]) {
    case "--prompt": options.prompts.push(flags[++i]); break;
    case "--reject": options.reject = true; break;
    case "--cancel-on-tool-call": options.cancelOnToolCall = true; break;
    case "--timeout": options.timeout = Number(flags[++i]); break;
    case "--cwd": options.cwd = flags[++i]; break;
    case "--load": options.load = flags[++i]; break;
    case "--wait-summary": options.waitSummary = true; break;
    case "--fs": options.fs = true; break;
    case "--reload": options.reload = true; break;
    case "--summary-notification": options.summaryNotification = true; break;
    case "--mcp-server": options.mcpServers.push(JSON.parse(flags[++i])); break;
    case "--render": options.render = true; break;
    case "--cancel-permission": options.cancelPermission = true; break;
    case "--resume": options.resume = flags[++i]; break;
    case "--set-config": options.setConfig = flags[++i]; break;
    case "--set-mode": options.setMode = flags[++i]; break;
    case "--list": options.list = true; break;
    case "--wait-model": options.waitModel = flags[++i]; break;
    default: usage(`unknown flag ${flags[i]}`);
  }
}
if (options.prompts.length === 0) options.prompts.push("hello");

const emit = (value) => process.stdout.write(JSON.stringify(value) + "\n");

const agent = spawn(command, commandArgs, { stdio: ["pipe", "pipe", "inherit"], env: process.env });
const started = new Promise((resolve, reject) => {
  agent.once("spawn", resolve);
  agent.once("error", reject);
});
try {
  await started;
} catch (error) {
  process.stderr.write(`client.mjs: cannot start ${command}: ${error.message}\n`);
  process.exit(2);
}
let finished = false;
agent.once("exit", (code, signal) => {
  if (!finished) {
    process.stderr.write(`client.mjs: the agent exited early (code ${code}, signal ${signal})\n`);
    process.exit(1);
  }
});
const timer = setTimeout(() => {
  process.stderr.write(`client.mjs: timed out after ${options.timeout}s\n`);
  agent.kill("SIGKILL");
  process.exit(3);
}, options.timeout * 1000);

let cancel = () => {};
let modelOffered;
const modelArrived = new Promise((resolve) => {
  modelOffered = resolve;
});
const offers = (configOptions) =>
  (configOptions ?? []).some(
    (o) => o.id === "model" && (o.options ?? []).some((c) => c.value === options.waitModel),
  );
let summaryArrived;
const summary = new Promise((resolve) => {
  summaryArrived = resolve;
});
const app = acp
  .client({ name: "corvid-e2e" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    emit({ kind: "update", update: params.update });
    if (params.update.sessionUpdate === "config_option_update" && offers(params.update.configOptions)) {
      modelOffered();
    }
    if (options.render) {
      // What the SDK's example client (src/examples/client.ts) prints for tool cards.
      const u = params.update;
      if (u.sessionUpdate === "tool_call") emit({ kind: "rendered", line: `🔧 ${u.title} (${u.status})` });
      if (u.sessionUpdate === "tool_call_update") {
        emit({ kind: "rendered", line: `Tool call \`${u.toolCallId}\` updated: ${u.status}` });
      }
    }
    if (params.update._meta?.toolUseSummary) summaryArrived();
    if (options.cancelOnToolCall && params.update.sessionUpdate === "tool_call") cancel();
  })
  .onNotification("*", ({ method, params }) => {
    emit({ kind: "notification", method, params });
    if (method === "_corvid/tool_use_summary") summaryArrived();
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    emit({ kind: "permission", toolCall: params.toolCall });
    if (options.cancelPermission) return { outcome: { outcome: "cancelled" } };
    const wanted = options.reject ? ["reject_once", "reject_always"] : ["allow_once", "allow_always"];
    for (const kind of wanted) {
      const option = params.options.find((o) => o.kind === kind);
      if (option) return { outcome: { outcome: "selected", optionId: option.optionId } };
    }
    return { outcome: { outcome: "cancelled" } };
  })
  .onRequest(acp.methods.client.fs.readTextFile, async ({ params }) => {
    emit({ kind: "fs", method: "fs/read_text_file", path: params.path });
    return { content: await readFile(params.path, "utf8") };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, async ({ params }) => {
    emit({ kind: "fs", method: "fs/write_text_file", path: params.path });
    await writeFile(params.path, params.content);
    return {};
  });

let code = 0;
try {
  const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
  await app.connectWith(stream, async (ctx) => {
    const init = await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: {
        fs: { readTextFile: options.fs, writeTextFile: options.fs },
        terminal: false,
        ...(options.summaryNotification
          ? { _meta: { corvid: { toolUseSummaryNotification: true } } }
          : {}),
      },
    });
    emit({ kind: "initialize", response: init });
    let sessionId;
    if (options.load) {
      sessionId = options.load;
      const loaded = await ctx.request(acp.methods.agent.session.load, {
        sessionId,
        cwd: options.cwd,
        mcpServers: options.mcpServers,
      });
      emit({ kind: "loaded", response: loaded });
    } else if (options.resume) {
      sessionId = options.resume;
      const resumed = await ctx.request(acp.methods.agent.session.resume, {
        sessionId,
        cwd: options.cwd,
        mcpServers: options.mcpServers,
      });
      emit({ kind: "resumed", response: resumed });
    } else {
      const session = await ctx.request(acp.methods.agent.session.new, { cwd: options.cwd, mcpServers: options.mcpServers });
      sessionId = session.sessionId;
      emit({ kind: "session", sessionId, response: session });
      if (offers(session.configOptions)) modelOffered();
    }
    if (options.setConfig) {
      const [configId, value] = options.setConfig.split("=");
      const response = await ctx.request(acp.methods.agent.session.setConfigOption, { sessionId, configId, value });
      emit({ kind: "config_set", response });
    }
    if (options.setMode) {
      const response = await ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: options.setMode });
      emit({ kind: "mode_set", response });
    }
    let cancelled = false;
    cancel = () => {
      if (cancelled) return;
      cancelled = true;
      ctx.notify(acp.methods.agent.session.cancel, { sessionId });
    };
    for (const [index, text] of options.prompts.entries()) {
      if (index === 1 && options.reload) {
        const reloaded = await ctx.request(acp.methods.agent.session.load, {
          sessionId,
          cwd: options.cwd,
          mcpServers: options.mcpServers,
        });
        emit({ kind: "reloaded", response: reloaded });
      }
      const response = await ctx.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: "text", text }],
      });
      emit({ kind: "response", response });
    }
    if (options.waitSummary) await summary;
    if (options.waitModel) await modelArrived;
    if (options.list) {
      const response = await ctx.request(acp.methods.agent.session.list, { cwd: options.cwd });
      emit({ kind: "list", response });
    }
  });
} catch (error) {
  emit({ kind: "error", message: String(error?.message ?? error) });
  code = 1;
}
finished = true;
clearTimeout(timer);
agent.stdin.end();
const exited = await Promise.race([
  new Promise((resolve) => agent.once("exit", () => resolve(true))),
  new Promise((resolve) => setTimeout(() => resolve(false), 2000)),
]);
if (!exited) agent.kill("SIGKILL");
process.exit(code);
