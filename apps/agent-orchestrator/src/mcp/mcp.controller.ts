// POST /mcp (with GET and DELETE for its session): an MCP server on the Streamable HTTP
// transport of the official SDK, facing agents. Each session belongs to the capability that
// opened it; tools/list offers `<server>__<tool>` for every priced tool its grants allow, and
// tools/call runs a governed tool call (tool-calls.ts).
import { All, Controller, Inject, Req, Res } from '@nestjs/common';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { boundaryTextErrors } from '@tally/contracts';
import { Access, Caller, SubjectSigned, type Principal } from '@tally/platform-auth';
import type { IncomingMessage } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Response } from '../gateway/express-response.js';
import { CapabilityGrants, granted } from './capability-grants.js';
import { ToolCalls } from './tool-calls.js';
import { ToolServers } from './tool-servers.js';
import { ceilingOf, SessionCeiling } from './session-ceiling.js';

type CapabilityCaller = Extract<Principal, { kind: 'capability' }>;

interface Session {
  readonly transport: StreamableHTTPServerTransport;
  readonly capabilityId: string;
  readonly ceiling: SessionCeiling | undefined;
  caller: CapabilityCaller;
}

/** Open sessions per process; past it a new one is refused until others end. */
const SESSIONS_MAX = 10_000;
const SEPARATOR = '__';

@Controller('mcp')
export class McpController {
  private readonly sessions = new Map<string, Session>();

  constructor(
    @Inject(ToolServers) private readonly servers: ToolServers,
    @Inject(ToolCalls) private readonly calls: ToolCalls,
    @Inject(CapabilityGrants) private readonly grants: CapabilityGrants,
  ) {}

  @All()
  @Access('capability')
  // Every message of a bound capability's session is signed, since any tools/call spends.
  @SubjectSigned()
  async handle(
    @Req() req: IncomingMessage & { body?: unknown },
    @Res() res: Response,
    @Caller() caller: Principal,
  ): Promise<void> {
    if (caller.kind !== 'capability') throw new Error('the access guard admits only capability tokens here');
    // The SDK reads the body with zod, which drops a __proto__ key without a word: the
    // arguments a tool server got would differ from those sent. Refused here instead (ADR 0052).
    const refused = boundaryTextErrors(req.body);
    if (refused.length > 0) return void res.status(400).json(invalidMessage(req.body, refused));
    const id = req.headers['mcp-session-id'];
    const existing = typeof id === 'string' ? this.sessions.get(id) : undefined;
    if (typeof id === 'string' && (!existing || existing.capabilityId !== caller.capability_id))
      return void res
        .status(404)
        .json({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null });
    const ceiling = existing ? existing.ceiling : ceilingOf(req.headers['x-tally-dispatch-ceiling']);
    if (ceiling && 'invalid' in ceiling)
      return void res.status(400).json({ jsonrpc: '2.0', error: { code: -32602, message: ceiling.invalid }, id: null });
    const session = existing ?? (await this.open(caller, ceiling));
    if (!session)
      return void res
        .status(503)
        .json({ jsonrpc: '2.0', error: { code: -32000, message: 'too many MCP sessions' }, id: null });
    session.caller = caller;
    await session.transport.handleRequest(req, res, req.body);
  }

  private async open(caller: CapabilityCaller, ceiling: SessionCeiling | undefined): Promise<Session | undefined> {
    if (this.sessions.size >= SESSIONS_MAX) return undefined;
    const server = new Server({ name: 'tally', version: '1' }, { capabilities: { tools: {} } });
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sid) => void this.sessions.set(sid, session),
      onsessionclosed: (sid) => void this.sessions.delete(sid),
    });
    const session: Session = { transport, capabilityId: caller.capability_id, ceiling, caller };
    transport.onclose = () => {
      if (transport.sessionId) this.sessions.delete(transport.sessionId);
    };
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: await this.offered(session.caller) }));
    server.setRequestHandler(CallToolRequestSchema, async (request) => {
      const [name, tool] = splitName(request.params.name);
      const offered = name !== undefined && tool !== undefined && this.servers.priceOf(name, tool) !== undefined;
      const grants = await this.grants.of(session.caller.capability_id, session.caller.root_id);
      if (!offered || !granted(grants, name, tool))
        return {
          content: [{ type: 'text', text: `unknown tool ${request.params.name}: not offered to this capability` }],
          isError: true,
        };
      return this.calls.call(
        { token: session.caller.token, tenant_id: session.caller.tenant_id },
        transport.sessionId ?? 'mcp',
        name,
        tool,
        (request.params.arguments ?? {}) as Record<string, unknown>,
        session.ceiling,
      );
    });
    await server.connect(transport);
    return session;
  }

  /** Every priced tool of every server that the caller's grants name, as the server describes it. */
  private async offered(caller: CapabilityCaller) {
    const grants = await this.grants.of(caller.capability_id, caller.root_id);
    const lists = await Promise.all(
      this.servers.names().map(async (server) => {
        if (!grants.some((g) => g.server_id === server)) return [];
        const tools = await this.servers.tools(server).catch(() => []);
        return tools
          .filter((t) => granted(grants, server, t.name))
          .map((t) => ({ ...t, name: `${server}${SEPARATOR}${t.name}` }));
      }),
    );
    return lists.flat();
  }
}

/** The JSON-RPC error of a message refused at the boundary, naming each bad field. */
function invalidMessage(body: unknown, errors: readonly { field: string; message: string }[]) {
  const id = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as { id?: unknown }).id : null;
  return {
    jsonrpc: '2.0',
    error: {
      code: -32602,
      message: errors.map((e) => `${e.field} ${e.message}`).join('; '),
      data: { errors },
    },
    id: typeof id === 'string' || typeof id === 'number' ? id : null,
  };
}

function splitName(name: string): [string | undefined, string | undefined] {
  const at = name.indexOf(SEPARATOR);
  return at <= 0 ? [undefined, undefined] : [name.slice(0, at), name.slice(at + SEPARATOR.length)];
}
