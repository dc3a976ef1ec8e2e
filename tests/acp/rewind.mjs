#!/usr/bin/env node
// `/undo` with the official client library (@agentclientprotocol/sdk 2.4.0): session/new, the
// prompt PROMPT, then the prompt `/undo`, each answer printed; output, usage and exit codes as
// in one_session.mjs.
// Usage: node rewind.mjs CWD PROMPT ANSWER -- AGENT_CMD [ARGS...]
import { acp, runOneSession } from "./one_session.mjs";

await runOneSession({
  script: "rewind.mjs",
  clientName: "corvid-rewind-e2e",
  body: async (ctx, { sessionId, prompt, emit }) => {
    for (const text of [prompt, "/undo"]) {
      const response = await ctx.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: "text", text }],
      });
      emit({ kind: "response", response });
    }
  },
});
