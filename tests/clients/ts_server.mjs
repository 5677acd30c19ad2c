// The official TypeScript SDK as a server for the jetmcp client tests (tests/client/test_client_peers.py).
//
//   node ts_server.mjs stdio
//   node ts_server.mjs http PORT        (Streamable HTTP on 127.0.0.1:PORT/mcp, one transport per session)
//
// Tools: add, echo, ask_name (elicits a name), wait_for_cancel (sleeps until its request is
// cancelled and notes it under a tag) and events (what happened under a tag). A resource
// (peer://readme), a prompt (greet). It decides nothing about the client; the test asserts.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

const [mode, port] = process.argv.slice(2);
if (mode !== "stdio" && !(mode === "http" && port)) {
  console.error("usage: node ts_server.mjs stdio | http PORT");
  process.exit(2);
}

// What happened to each wait_for_cancel call, by tag (shared by every session).
const events = new Map();

function build() {
  const server = new McpServer({ name: "ts-peer", version: "1.0.0" });
  server.registerTool(
    "add",
    { description: "Add two integers", inputSchema: { a: z.number().int(), b: z.number().int() } },
    async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }),
  );
  server.registerTool(
    "echo",
    { description: "Echo the text back", inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: "text", text }] }),
  );
  server.registerTool(
    "ask_name",
    { description: "Ask the client's user for a name", inputSchema: {} },
    async () => {
      const answer = await server.server.elicitInput({
        message: "Your name?",
        requestedSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
      });
      const name = answer.action === "accept" ? answer.content?.name : answer.action;
      return { content: [{ type: "text", text: `hello ${name}` }] };
    },
  );
  server.registerTool(
    "wait_for_cancel",
    { description: "Sleep until cancelled", inputSchema: { tag: z.string(), seconds: z.number().optional() } },
    async ({ tag, seconds }, extra) => {
      const notes = events.get(tag) ?? [];
      events.set(tag, notes);
      notes.push("started");
      await new Promise((resolve) => {
        const timer = setTimeout(() => {
          notes.push("finished");
          resolve();
        }, (seconds ?? 30) * 1000);
        extra.signal.addEventListener("abort", () => {
          clearTimeout(timer);
          notes.push("cancelled");
          resolve();
        });
      });
      return { content: [{ type: "text", text: "done" }] };
    },
  );
  server.registerTool(
    "events",
    { description: "What happened under a tag", inputSchema: { tag: z.string() } },
    async ({ tag }) => ({ content: [{ type: "text", text: JSON.stringify(events.get(tag) ?? []) }] }),
  );
  server.registerResource(
    "readme",
    "peer://readme",
    { mimeType: "text/plain", description: "A readme" },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: "text/plain", text: "TS peer readme" }] }),
  );
  server.registerPrompt(
    "greet",
    { description: "Greet someone", argsSchema: { name: z.string() } },
    ({ name }) => ({ messages: [{ role: "user", content: { type: "text", text: `Hello, ${name}!` } }] }),
  );
  return server;
}

if (mode === "stdio") {
  await build().connect(new StdioServerTransport());
} else {
  const transports = new Map();
  const httpServer = http.createServer(async (req, res) => {
    if (!req.url.startsWith("/mcp")) {
      res.writeHead(404).end();
      return;
    }
    const sessionId = req.headers["mcp-session-id"];
    let transport = sessionId ? transports.get(sessionId) : undefined;
    if (sessionId && !transport) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32001, message: "Session not found" } }));
      return;
    }
    if (!transport) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => transports.set(id, transport),
      });
      transport.onclose = () => {
        if (transport.sessionId) transports.delete(transport.sessionId);
      };
      await build().connect(transport);
    }
    await transport.handleRequest(req, res);
  });
  httpServer.listen(Number(port), "127.0.0.1", () => console.error(`listening on ${port}`));
}
