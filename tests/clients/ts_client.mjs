// The official TypeScript SDK as a client of jetmcp, for tests/interop/test_sdk_clients.py.
//
//   node ts_client.mjs URL SCENARIO
//
// Connects over Streamable HTTP, runs one scenario and prints one JSON object on stdout:
// what the scenario observed. Failures print {"error": ...} and exit 1. The Python test
// asserts on the JSON, so this script only records; it decides nothing.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [url, scenario] = process.argv.slice(2);
if (!url || !scenario) {
  console.error("usage: node ts_client.mjs URL SCENARIO");
  process.exit(2);
}

// Every HTTP exchange the transport makes: method, Last-Event-ID, status, content type.
const exchanges = [];
async function recordingFetch(input, init) {
  const headers = new Headers(init?.headers ?? {});
  const response = await fetch(input, init);
  exchanges.push({
    method: init?.method ?? "GET",
    lastEventId: headers.get("last-event-id"),
    status: response.status,
    contentType: response.headers.get("content-type"),
  });
  return response;
}

// What the client's handlers were asked, so the test can check the server's requests.
const asked = { elicitation: [], sampling: [], roots: 0 };
const logs = [];

const client = new Client(
  { name: "jetmcp-ts-test-client", version: "1.0.0" },
  { capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } } },
);
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  asked.elicitation.push(request.params);
  return { action: "accept", content: { username: "ada", email: "ada@example.com" } };
});
client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
  asked.sampling.push(request.params);
  return {
    role: "assistant",
    content: { type: "text", text: "Paris" },
    model: "test-model",
    stopReason: "endTurn",
  };
});
client.setRequestHandler(ListRootsRequestSchema, async () => {
  asked.roots += 1;
  return { roots: [{ uri: "file:///tmp/project", name: "project" }] };
});
client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
  logs.push(notification.params);
});

const transport = new StreamableHTTPClientTransport(new URL(url), {
  fetch: recordingFetch,
  // Resume quickly when the server ends a stream early (the server's `retry` wins anyway).
  reconnectionOptions: {
    initialReconnectionDelay: 100,
    maxReconnectionDelay: 1000,
    reconnectionDelayGrowFactor: 1.5,
    maxRetries: 5,
  },
});

function texts(result) {
  return (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const scenarios = {
  // initialize, list everything, call a tool, read a resource, get a prompt.
  async basic() {
    const tools = await client.listTools();
    const called = await client.callTool({ name: "test_simple_text", arguments: {} });
    const resources = await client.listResources();
    const templates = await client.listResourceTemplates();
    const read = await client.readResource({ uri: "test://template/7/data" });
    const prompts = await client.listPrompts();
    const prompt = await client.getPrompt({
      name: "test_prompt_with_arguments",
      arguments: { arg1: "a", arg2: "b" },
    });
    const failed = await client.callTool({ name: "test_error_handling", arguments: {} });
    return {
      serverVersion: client.getServerVersion(),
      protocolVersion: transport.protocolVersion ?? null,
      sessionId: transport.sessionId ?? null,
      tools: tools.tools.map((t) => t.name),
      text: texts(called),
      resources: resources.resources.map((r) => r.uri),
      templates: templates.resourceTemplates.map((t) => t.uriTemplate),
      readText: read.contents[0].text,
      prompts: prompts.prompts.map((p) => p.name),
      promptText: prompt.messages.map((m) => m.content.text),
      errorResult: { isError: failed.isError ?? false, text: texts(failed) },
    };
  },

  async elicit() {
    const result = await client.callTool({
      name: "test_elicitation",
      arguments: { message: "Who are you?" },
    });
    return { text: texts(result), isError: result.isError ?? false, asked };
  },

  async sample() {
    const result = await client.callTool({
      name: "test_sampling",
      arguments: { prompt: "What is the capital of France?" },
    });
    return { text: texts(result), isError: result.isError ?? false, asked };
  },

  async roots() {
    const result = await client.callTool({ name: "client_roots", arguments: {} });
    return { roots: result.structuredContent?.result, isError: result.isError ?? false, asked };
  },

  async progress() {
    const progress = [];
    const result = await client.callTool(
      { name: "test_tool_with_progress", arguments: {} },
      CallToolResultSchema,
      { onprogress: (p) => progress.push(p) },
    );
    return { text: texts(result), progress };
  },

  async logging() {
    await client.setLoggingLevel("debug");
    const result = await client.callTool({ name: "test_tool_with_logging", arguments: {} });
    return { text: texts(result), logs };
  },

  // Abort a long call: the SDK sends notifications/cancelled; the server notes the cancel.
  async cancel() {
    const tag = `ts-${process.pid}`;
    const controller = new AbortController();
    const pending = client.callTool(
      { name: "wait_for_cancel", arguments: { tag, seconds: 30 } },
      CallToolResultSchema,
      { signal: controller.signal },
    );
    // Abort once the server has started the tool.
    let started = [];
    for (let i = 0; i < 100 && !started.includes("started"); i++) {
      await sleep(50);
      const seen = await client.callTool({ name: "events", arguments: { tag } });
      started = seen.structuredContent?.result ?? JSON.parse(texts(seen)[0] ?? "[]");
    }
    controller.abort("test cancels");
    let outcome;
    try {
      await pending;
      outcome = "completed";
    } catch (error) {
      outcome = `rejected: ${error?.message ?? error}`;
    }
    // The server's own account, after it had a moment to act on the cancel.
    let notes = [];
    for (let i = 0; i < 40; i++) {
      const seen = await client.callTool({ name: "events", arguments: { tag } });
      notes = seen.structuredContent?.result ?? JSON.parse(texts(seen)[0] ?? "[]");
      if (notes.length > 1) break;
      await sleep(50);
    }
    return { outcome, events: notes };
  },

  // 2025-11-25 SSE polling: the server ends the call's stream early; the SDK resumes it
  // with GET + Last-Event-ID and still gets the result.
  async reconnect() {
    const result = await client.callTool({ name: "test_reconnection", arguments: {} });
    return { text: texts(result), isError: result.isError ?? false, logs, exchanges };
  },
};

const run = scenarios[scenario];
if (!run) {
  console.error(`unknown scenario ${scenario}; known: ${Object.keys(scenarios).join(", ")}`);
  process.exit(2);
}

let status = 0;
try {
  await client.connect(transport);
  const observed = await run();
  process.stdout.write(JSON.stringify(observed) + "\n");
} catch (error) {
  process.stdout.write(
    JSON.stringify({ error: String(error?.stack ?? error), exchanges }) + "\n",
  );
  status = 1;
} finally {
  try {
    await transport.terminateSession();
  } catch {
    // The session may already be gone; nothing to report.
  }
  await client.close();
}
process.exit(status);
