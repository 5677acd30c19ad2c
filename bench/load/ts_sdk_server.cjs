// The official TypeScript MCP SDK serving `add` for the load benchmark.
//
// HTTP mode follows the SDK's stateless Streamable HTTP example
// (examples/server/simpleStatelessStreamableHttp): a fresh McpServer and
// StreamableHTTPServerTransport (sessionIdGenerator: undefined) per request, here with
// enableJsonResponse: true, on node's own http server (lighter than express).
//
//   node ts_sdk_server.cjs http --port 8003
//   node ts_sdk_server.cjs stdio
//
// The SDK is resolved from the peers folder: BENCH_TS_PEERS (default ../.peers/node).
'use strict';

const http = require('node:http');
const path = require('node:path');
const { createRequire } = require('node:module');

const peers = process.env.BENCH_TS_PEERS || path.join(__dirname, '..', '.peers', 'node');
const peerRequire = createRequire(path.join(peers, 'package.json'));
const { McpServer } = peerRequire('@modelcontextprotocol/sdk/server/mcp.js');
const { StreamableHTTPServerTransport } = peerRequire(
  '@modelcontextprotocol/sdk/server/streamableHttp.js',
);
const { StdioServerTransport } = peerRequire('@modelcontextprotocol/sdk/server/stdio.js');
const z = peerRequire('zod');

function buildServer() {
  const server = new McpServer({ name: 'bench-ts-sdk', version: '1.0.0' });
  // Same shape as the Python peers' `add(a: int, b: int) -> int`: integer inputs,
  // an output schema and structuredContent alongside the text content.
  server.registerTool(
    'add',
    {
      description: 'Add two integers.',
      inputSchema: { a: z.number().int(), b: z.number().int() },
      outputSchema: { result: z.number().int() },
    },
    async ({ a, b }) => {
      const result = a + b;
      return { content: [{ type: 'text', text: String(result) }], structuredContent: { result } };
    },
  );
  return server;
}

function serveHttp(host, port) {
  const httpServer = http.createServer(async (req, res) => {
    if (req.method !== 'POST' || !req.url.startsWith('/mcp')) {
      res.writeHead(405, { 'content-type': 'application/json' }).end(
        JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed.' }, id: null }),
      );
      return;
    }
    const server = buildServer();
    try {
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      res.on('close', () => {
        transport.close();
        server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res);
    } catch (error) {
      console.error('Error handling MCP request:', error);
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'application/json' }).end(
          JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal server error' }, id: null }),
        );
      }
    }
  });
  httpServer.keepAliveTimeout = 60000;
  httpServer.listen(port, host, () => {
    console.error(`ts-sdk listening on http://${host}:${port}/mcp`);
  });
}

async function serveStdio() {
  const server = buildServer();
  await server.connect(new StdioServerTransport());
}

function main() {
  const args = process.argv.slice(2);
  const mode = args[0];
  let host = '127.0.0.1';
  let port = 8003;
  for (let i = 1; i < args.length; i += 2) {
    if (args[i] === '--host') host = args[i + 1];
    else if (args[i] === '--port') port = Number(args[i + 1]);
  }
  if (mode === 'http') serveHttp(host, port);
  else if (mode === 'stdio') serveStdio();
  else {
    console.error('usage: ts_sdk_server.cjs http|stdio [--host H] [--port P]');
    process.exit(2);
  }
}

process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
main();
