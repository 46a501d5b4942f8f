// The `codemode serve` end-to-end check with the official TypeScript SDK client.
//
//   node serve-client.mjs stdio <command> [args...]
//   node serve-client.mjs http <url>            (token, if any, in CODEMODE_TEST_TOKEN)
//
// EXPECTED_SURFACE names a file with the output of `codemode surface` for the same config.
// Prints one JSON line per step ({ step, name, ok, detail }) and exits 1 if any step failed.
// It never sleeps: every step waits on an answer of the server.
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, ...rest] = process.argv.slice(2);
const DIFFERENT_SESSION = "code mode run belongs to a different session.";
const UNAVAILABLE = "code mode run is unavailable or expired.";

function transport() {
  if (mode === "stdio") {
    const [command, ...args] = rest;
    return new StdioClientTransport({ command, args, stderr: "inherit" });
  }
  const headers = process.env.CODEMODE_TEST_TOKEN
    ? { Authorization: `Bearer ${process.env.CODEMODE_TEST_TOKEN}` }
    : {};
  return new StreamableHTTPClientTransport(new URL(rest[0]), { requestInit: { headers } });
}

async function connect() {
  const client = new Client({ name: "codemode-serve-e2e", version: "0.0.0" });
  const t = transport();
  await client.connect(t);
  return { client, transport: t };
}

/** JSON with object keys sorted, to compare values whatever their key order. */
function canonical(value) {
  return JSON.stringify(value, (_, v) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]]))
      : v,
  );
}

function check(condition, message) {
  if (!condition) throw new Error(message);
}

/** Calls a tool and checks that structuredContent and the text content agree. */
async function call(client, name, args) {
  const result = await client.callTool({ name, arguments: args });
  const structured = result.structuredContent;
  check(structured && typeof structured === "object", `no structuredContent: ${JSON.stringify(result)}`);
  const text = JSON.parse(result.content[0].text);
  check(canonical(text) === canonical(structured), "text and structuredContent differ");
  check((result.isError === true) === (structured.status === "failed"), "isError must mark failed runs");
  return structured;
}

const PARK = { code: "const slow = tools.sleep({ ms: 600000 }); await yield_control(); return await slow" };

const steps = [];
let failed = false;
async function step(number, name, body) {
  try {
    const detail = await body();
    steps.push({ step: number, name, ok: true, detail });
  } catch (error) {
    failed = true;
    steps.push({ step: number, name, ok: false, detail: String(error && error.stack || error) });
  }
  console.log(JSON.stringify(steps[steps.length - 1]));
}

let first;
await step(1, "initialize", async () => {
  first = await connect();
  const info = first.client.getServerVersion();
  check(info && info.name === "codemode", `server info: ${JSON.stringify(info)}`);
  check(first.client.getServerCapabilities().tools, "tools capability");
  return info;
});

await step(2, "tools/list returns exactly exec and wait", async () => {
  const { tools } = await first.client.listTools();
  check(JSON.stringify(tools.map((t) => t.name)) === '["exec","wait"]', `tools: ${tools.map((t) => t.name)}`);
  const surface = JSON.parse(readFileSync(process.env.EXPECTED_SURFACE, "utf8")).tools;
  for (const [i, tool] of tools.entries()) {
    check(tool.description === surface[i].description, `${tool.name}: description differs from codemode surface`);
    check(
      canonical(tool.inputSchema) === canonical(surface[i].parameters),
      `${tool.name}: schema differs from codemode surface`,
    );
  }
  return tools.map((t) => t.name);
});

await step(3, "exec calls MCP.everything and MCP.filesystem", async () => {
  const result = await call(first.client, "exec", {
    code: `const echoed = await MCP.everything.echo({ message: "via serve" });
           const listing = await MCP.filesystem.listDirectory({ path: "." });
           return { echoed: echoed.content[0].text, listed: listing.content[0].text.includes("mcp.json") };`,
  });
  check(result.status === "completed", JSON.stringify(result));
  check(result.value.echoed === "Echo: via serve", JSON.stringify(result.value));
  check(result.value.listed === true, JSON.stringify(result.value));
  const bad = await call(first.client, "exec", { code: "throw new Error('boom')" });
  check(bad.status === "failed" && bad.error.includes("boom"), JSON.stringify(bad));
  return result.value;
});

await step(4, "a suspended cell, then wait from a later request", async () => {
  const waiting = await call(first.client, "exec", { code: "await yield_control(); return 'resumed'" });
  check(waiting.status === "waiting" && waiting.runId, JSON.stringify(waiting));
  const done = await call(first.client, "wait", { runId: waiting.runId });
  check(done.status === "completed" && done.value === "resumed", JSON.stringify(done));
  return { runId: waiting.runId, value: done.value };
});

let parked;
await step(5, "a second session cannot wait on the first session's run", async () => {
  parked = await call(first.client, "exec", PARK);
  check(parked.status === "waiting", JSON.stringify(parked));
  const second = await connect();
  const refused = await call(second.client, "wait", { runId: parked.runId });
  await second.client.close();
  // Over HTTP both sessions share one server, which names the reason; a stdio client starts
  // its own server process, which has never seen the run.
  const expected = mode === "http" ? DIFFERENT_SESSION : UNAVAILABLE;
  check(refused.status === "failed" && refused.error === expected, JSON.stringify(refused));
  return refused.error;
});

await step(6, "closing the session drops its runs", async () => {
  if (mode === "http") {
    await first.transport.terminateSession();
    await first.client.close();
    const third = await connect();
    const gone = await call(third.client, "wait", { runId: parked.runId });
    await third.client.close();
    check(gone.status === "failed" && gone.error === UNAVAILABLE, JSON.stringify(gone));
    return gone.error;
  }
  await first.client.close();
  return "stdio client closed";
});

process.exit(failed ? 1 : 0);
