// An MCP server on the official TypeScript SDK whose one tool, `hang`, never answers. When the
// client cancels the call (`notifications/cancelled`), the SDK aborts the request's signal, and
// the server reports `cancelled <request id>` to the Unix socket named by its first argument:
// a test learns of the cancellation from the server itself, never from a clock.
import net from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";

const report = process.argv[2];
const server = new McpServer({ name: "cancel-reporter", version: "1.0.0" });
server.registerTool(
  "hang",
  { description: "Never answers; reports its cancellation.", annotations: { readOnlyHint: true } },
  // Without an input schema the SDK passes the request's `extra` alone.
  (extra) =>
    new Promise(() => {
      extra.signal.addEventListener("abort", () => {
        const socket = net.createConnection(report, () => {
          socket.end(`cancelled ${extra.requestId}\n`);
        });
      });
    }),
);
await server.connect(new StdioServerTransport());
