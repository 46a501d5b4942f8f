// Progress notifications of `codemode serve --demo`, seen by the official TypeScript SDK client.
//
//   node serve-progress.mjs stdio <command> [args...]
//   node serve-progress.mjs http <url>
//
// Prints one JSON line per step ({ step, name, ok, detail }) and exits 1 if any step failed.
// It never sleeps: the server sends all of a call's notifications before its result, and the
// client's notification handler sees them before the result's promise resolves.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ProgressNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [mode, ...rest] = process.argv.slice(2);

function transport() {
  if (mode === "stdio") {
    const [command, ...args] = rest;
    return new StdioClientTransport({ command, args, stderr: "inherit" });
  }
  return new StreamableHTTPClientTransport(new URL(rest[0]));
}

function check(condition, message) {
  if (!condition) throw new Error(message);
}

// Every progress notification, by token. The SDK's `onprogress` option would lose the last
// ones: it hands a notification to its handler a microtask after it reads it, and drops the
// handler when it reads the result, which the server sends right after them (often in the same
// read). A notification handler of the client's own sees them all, in order, before the
// result's promise resolves.
const byToken = new Map();
let nextToken = 0;

/** Calls a tool with a progress token: the result and the notifications' messages, in order. */
async function watched(client, name, args) {
  const token = `progress-${++nextToken}`;
  byToken.set(token, []);
  const result = await client.callTool({ name, arguments: args, _meta: { progressToken: token } });
  const seen = byToken.get(token);
  for (let i = 1; i < seen.length; i++) {
    check(seen[i].progress > seen[i - 1].progress, `progress must increase: ${JSON.stringify(seen)}`);
  }
  const messages = seen.map((p) => JSON.parse(p.message));
  return { value: result.structuredContent, messages };
}

/** JSON with object keys sorted, to compare values whatever their key order. */
function canonical(value) {
  return JSON.stringify(value, (_, v) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]]))
      : v,
  );
}

function events(messages) {
  return messages.map((m) => {
    const { nestedCallId, ...rest } = m;
    return canonical(rest);
  });
}

const steps = [];
let failed = false;
async function step(number, name, body) {
  try {
    const detail = await body();
    steps.push({ step: number, name, ok: true, detail });
  } catch (error) {
    failed = true;
    steps.push({ step: number, name, ok: false, detail: String((error && error.stack) || error) });
  }
  console.log(JSON.stringify(steps[steps.length - 1]));
}

const client = new Client({ name: "codemode-serve-progress", version: "0.0.0" });
client.setNotificationHandler(ProgressNotificationSchema, (notification) => {
  const seen = byToken.get(notification.params.progressToken);
  if (seen) seen.push(notification.params);
});
await client.connect(transport());

await step(1, "exec reports a nested call's start, update and end, and output", async () => {
  const { value, messages } = await watched(client, "exec", {
    code: "text('a'); const r = await tools.sleep({ ms: 0 }); text('b'); return r",
  });
  check(value.status === "completed" && value.value.slept === 0, JSON.stringify(value));
  const seen = events(messages);
  const sleep = "openclaw:core:sleep";
  for (const expected of [
    { event: "start", catalogId: sleep },
    { event: "update", catalogId: sleep, update: { sleepingMs: 0 } },
    { event: "end", catalogId: sleep, outcome: "ok" },
    { event: "output", item: { type: "text", text: "a" } },
    { event: "output", item: { type: "text", text: "b" } },
  ]) {
    check(seen.includes(canonical(expected)), `missing ${JSON.stringify(expected)} in ${seen}`);
  }
  check(
    seen.indexOf(seen.find((e) => e.includes('"start"'))) < seen.indexOf(seen.find((e) => e.includes('"end"'))),
    `start before end: ${seen}`,
  );
  check(
    seen[seen.length - 1] === canonical({ event: "result", status: "completed", dropped: 0 }),
    `the last one names the result: ${seen}`,
  );
  return seen.length;
});

await step(2, "wait reports what its leg produced", async () => {
  const { value: waiting } = await watched(client, "exec", {
    code: "await yield_control(); text('resumed'); return 'done'",
  });
  check(waiting.status === "waiting", JSON.stringify(waiting));
  const { value, messages } = await watched(client, "wait", { runId: waiting.runId });
  check(value.status === "completed" && value.value === "done", JSON.stringify(value));
  const seen = events(messages);
  check(
    JSON.stringify(seen) ===
      JSON.stringify([
        canonical({ event: "output", item: { type: "text", text: "resumed" } }),
        canonical({ event: "result", status: "completed", dropped: 0 }),
      ]),
    `wait: ${seen}`,
  );
  return seen.length;
});

await client.close();
process.exit(failed ? 1 : 0);
