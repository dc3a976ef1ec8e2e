#!/usr/bin/env node
// `/branch` with the official client library (@agentclientprotocol/sdk 2.4.0): session/new,
// the prompt PROMPT, then `/branch`; the fork's id from the answer's
// `_meta.corvid.forkedSessionId` is opened with session/load and prompted "on the fork".
// Output, usage and exit codes as in one_session.mjs, plus
//   {"kind":"loaded","sessionId":...,"response":{...}}  the fork's session/load answer
// Usage: node branch.mjs CWD PROMPT ANSWER -- AGENT_CMD [ARGS...]
import { acp, runOneSession } from "./one_session.mjs";

await runOneSession({
  script: "branch.mjs",
  clientName: "corvid-branch-e2e",
  body: async (ctx, { sessionId, prompt, emit }) => {
    const cwd = process.argv[2];
    let answer;
    for (const text of [prompt, "/branch"]) {
      answer = await ctx.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: "text", text }],
      });
      emit({ kind: "response", response: answer });
    }
    const fork = answer?._meta?.corvid?.forkedSessionId;
    if (typeof fork !== "string") {
      throw new Error(`the /branch answer names no fork: ${JSON.stringify(answer)}`);
    }
    const loaded = await ctx.request(acp.methods.agent.session.load, {
      sessionId: fork,
      cwd,
      mcpServers: [],
    });
    emit({ kind: "loaded", sessionId: fork, response: loaded });
    const response = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId: fork,
      prompt: [{ type: "text", text: "on the fork" }],
    });
    emit({ kind: "response", response });
  },
});
