#!/usr/bin/env node
// Plan mode with the official client library (@agentclientprotocol/sdk 2.4.0): session/new
// (its answer carries the modes), session/set_mode to `plan`, one prompt; output, usage and
// exit codes as in one_session.mjs.
// Usage: node plan_mode.mjs CWD PROMPT ANSWER -- AGENT_CMD [ARGS...]
import { acp, runOneSession } from "./one_session.mjs";

await runOneSession({
  script: "plan_mode.mjs",
  clientName: "corvid-plan-e2e",
  body: async (ctx, { sessionId, prompt, emit }) => {
    await ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: "plan" });
    const response = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: prompt }],
    });
    emit({ kind: "response", response });
  },
});
