// A real MCP tool server for tests, written with the official SDK (Streamable HTTP, stateless):
// `add` sums, `fail` answers with an error result, `hang` never answers, `secret` is a tool the
// orchestrator's config leaves unpriced. It counts the calls it receives per tool and records
// the headers they came with.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';

export class McpToolServer {
  readonly calls = new Map<string, number>();
  readonly headers: IncomingHttpHeaders[] = [];
  private constructor(private readonly http: Server) {}

  static async start(): Promise<McpToolServer> {
    const http = createServer();
    const server = new McpToolServer(http);
    http.on('request', (req, res) => {
      server.headers.push(req.headers);
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown) : undefined;
        const mcp = server.mcp();
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
        res.on('close', () => void transport.close());
        void mcp.connect(transport).then(() => transport.handleRequest(req, res, body));
      });
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    return server;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.http.address() as AddressInfo).port}/mcp`;
  }

  count(tool: string): number {
    return this.calls.get(tool) ?? 0;
  }

  private mcp(): McpServer {
    const mcp = new McpServer({ name: 'calc', version: '1' });
    const seen = (tool: string) => this.calls.set(tool, this.count(tool) + 1);
    mcp.registerTool(
      'add',
      { description: 'Adds two numbers', inputSchema: { a: z.number(), b: z.number() } },
      async ({ a, b }) => {
        seen('add');
        return { content: [{ type: 'text', text: String(a + b) }] };
      },
    );
    mcp.registerTool('fail', { description: 'Always fails', inputSchema: {} }, async () => {
      seen('fail');
      return { content: [{ type: 'text', text: 'tool failed' }], isError: true };
    });
    mcp.registerTool('hang', { description: 'Never answers', inputSchema: {} }, async () => {
      seen('hang');
      return new Promise(() => undefined);
    });
    mcp.registerTool('secret', { description: 'Not priced', inputSchema: {} }, async () => {
      seen('secret');
      return { content: [{ type: 'text', text: 'leaked' }] };
    });
    return mcp;
  }

  async stop(): Promise<void> {
    this.http.closeAllConnections();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }
}
