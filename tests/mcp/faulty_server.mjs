// A deliberately faulty MCP server for corvid's fault tests, on the official TypeScript SDK:
// `crash` exits the process in the middle of a call, `hang` never answers.
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
await server.connect(new StdioServerTransport());
