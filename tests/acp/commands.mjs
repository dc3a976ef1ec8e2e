#!/usr/bin/env node
// Custom commands and skills with the official client library (@agentclientprotocol/sdk 2.4.0):
// waits for the session's `available_commands_update`, adds the command file
// $CORVID_HOME/commands/added.md, waits for the update that lists `added` (the agent watches
// the folders), then sends PROMPT. Output, usage and exit codes as in one_session.mjs.
// Usage: node commands.mjs CWD PROMPT ANSWER -- AGENT_CMD [ARGS...]
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { acp, runOneSession } from "./one_session.mjs";

const seen = [];
const waiting = [];
const lists = (update, name) =>
  update.sessionUpdate === "available_commands_update" &&
  (name === undefined || update.availableCommands.some((c) => c.name === name));
// Resolves once an update listing `name` (any command list when undefined) arrived, earlier or later.
const listing = (name) =>
  new Promise((resolve) => {
    if (seen.some((u) => lists(u, name))) resolve();
    else waiting.push({ name, resolve });
  });

await runOneSession({
  script: "commands.mjs",
  clientName: "corvid-commands-e2e",
  onUpdate: (update) => {
    seen.push(update);
    for (const w of waiting.filter((w) => lists(update, w.name))) w.resolve();
  },
  body: async (ctx, { sessionId, prompt, emit }) => {
    await listing(undefined);
    writeFileSync(
      join(process.env.CORVID_HOME, "commands", "added.md"),
      "---\ndescription: Added while the session ran\nargument-hint: WHAT\n---\nAdded $1.\n",
    );
    await listing("added");
    const response = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: prompt }],
    });
    emit({ kind: "response", response });
  },
});
