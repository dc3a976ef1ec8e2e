// The shared frame of the official-client scripts that drive one session: argument parsing,
// spawning the agent, initialize + session/new, permission answers, the exit protocol.
// A script passes what it does inside the session as `body(ctx, { sessionId, prompt, emit })`,
// and may add client capabilities (`capabilities(answer)`) and handlers (`handlers(app, ...)`),
// and pass `onUpdate(update)` to see each session/update as it arrives.
// Every script prints one JSON object per line on stdout:
//   {"kind":"session","response":{...}}   the session/new answer
//   {"kind":"update","update":{...}}      a session/update
//   {"kind":"permission","params":{...}}  a session/request_permission (answered)
//   {"kind":"response","response":{...}}  a session/prompt answer
//   {"kind":"error","message":...}        a failed request
// Usage of a script: node SCRIPT CWD PROMPT ANSWER -- AGENT_CMD [ARGS...], every permission
// request answered with the option whose id is ANSWER.
// Exit codes: 0 ok, 1 protocol error, 2 agent not started, 3 timeout (60 s), 64 usage.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

export { acp };

export async function runOneSession({ script, clientName, body, capabilities, handlers, onUpdate }) {
  const argv = process.argv.slice(2);
  const split = argv.indexOf("--");
  if (split !== 3 || split === argv.length - 1) {
    process.stderr.write(`usage: node ${script} CWD PROMPT ANSWER -- AGENT_CMD [ARGS...]\n`);
    process.exit(64);
  }
  const [cwd, prompt, answer] = argv.slice(0, 3);
  const [command, ...commandArgs] = argv.slice(split + 1);
  const emit = (value) => process.stdout.write(JSON.stringify(value) + "\n");

  const agent = spawn(command, commandArgs, {
    stdio: ["pipe", "pipe", "inherit"],
    env: process.env,
  });
  try {
    await new Promise((resolve, reject) => {
      agent.once("spawn", resolve);
      agent.once("error", reject);
    });
  } catch (error) {
    process.stderr.write(`${script}: cannot start ${command}: ${error.message}\n`);
    process.exit(2);
  }
  let finished = false;
  agent.once("exit", (code, signal) => {
    if (!finished) {
      process.stderr.write(`${script}: the agent exited early (code ${code}, signal ${signal})\n`);
      process.exit(1);
    }
  });
  const timer = setTimeout(() => {
    process.stderr.write(`${script}: timed out after 60s\n`);
    agent.kill("SIGKILL");
    process.exit(3);
  }, 60_000);

  let app = acp
    .client({ name: clientName })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      emit({ kind: "update", update: params.update });
      onUpdate?.(params.update);
    })
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      emit({ kind: "permission", params });
      return { outcome: { outcome: "selected", optionId: answer } };
    });
  if (handlers) app = handlers(app, { answer, emit });

  let code = 0;
  try {
    const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
    await app.connectWith(stream, async (ctx) => {
      await ctx.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: {
          fs: { readTextFile: false, writeTextFile: false },
          terminal: false,
          ...(capabilities ? capabilities(answer) : {}),
        },
      });
      const session = await ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
      emit({ kind: "session", response: session });
      await body(ctx, { sessionId: session.sessionId, prompt, emit });
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
}
