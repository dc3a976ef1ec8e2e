// A deliberately faulty MCP server for corvid's fault tests, on the official TypeScript SDK:
// `crash` exits the process in the middle of a call, `hang` never answers, `grow` adds a tool
// `grown` (the SDK then sends notifications/tools/list_changed). With
// FAULTY_IGNORE_STDIN_END=1 it also outlives the end of its stdin (a timer keeps it alive),
// like servers that only stop when killed.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "faulty", version: "1.0.0" });
server.registerTool(
  "crash",
  { description: "Exits the server process during the call", inputSchema: {} },
  async () => process.exit(3),
);
server.registerTool(
  "hang",
  { description: "Never answers", inputSchema: {} },
  () => new Promise(() => {}),
);
server.registerTool(
  "ping",
  { description: "Answers pong", inputSchema: { note: z.string().optional() } },
  async () => ({ content: [{ type: "text", text: "pong" }] }),
);
server.registerTool(
  "grow",
  { description: "Adds the tool `grown`", inputSchema: {} },
  async () => {
    server.registerTool("grown", { description: "Added later", inputSchema: {} }, async () => ({
      content: [{ type: "text", text: "grown" }],
    }));
    return { content: [{ type: "text", text: "added" }] };
  },
);
if (process.env.FAULTY_IGNORE_STDIN_END === "1") setInterval(() => {}, 60_000);
await server.connect(new StdioServerTransport());
