#!/usr/bin/env node
// ask_user with the official client library (@agentclientprotocol/sdk 2.4.0): one prompt.
// With ANSWER `form:{...}` the client advertises form elicitation and accepts every
// `elicitation/create` with that JSON as the content (emitted as {"kind":"elicitation"});
// with ANSWER `form-decline` it advertises elicitation and declines. Any other ANSWER
// advertises none, and permission requests are answered with that option id.
// Usage: node ask_user.mjs CWD PROMPT ANSWER -- AGENT_CMD [ARGS...]
import { acp, runOneSession } from "./one_session.mjs";

const elicits = (answer) => answer.startsWith("form");

await runOneSession({
  script: "ask_user.mjs",
  clientName: "corvid-ask-user-e2e",
  capabilities: (answer) => (elicits(answer) ? { elicitation: { form: {} } } : {}),
  handlers: (app, { answer, emit }) =>
    app.onRequest(acp.methods.client.elicitation.create, ({ params }) => {
      emit({ kind: "elicitation", params });
      if (answer === "form-decline") return { action: "decline" };
      return { action: "accept", content: JSON.parse(answer.slice("form:".length)) };
    }),
  body: async (ctx, { sessionId, prompt, emit }) => {
    const response = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: prompt }],
    });
    emit({ kind: "response", response });
  },
});
