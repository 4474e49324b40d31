// POST /mcp (with GET and DELETE for its session): an MCP server on the Streamable HTTP
// transport of the official SDK, facing agents. Each session belongs to the capability that
// opened it; tools/list offers `<server>__<tool>` for every priced tool its grants allow, and
// tools/call runs a governed tool call (tool-calls.ts). Sessions are counted and ended by
// McpSessions (quotas, idle time, token expiry and revocation, ADR 0054).
import { All, Controller, Inject, Req, Res } from '@nestjs/common';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { boundaryTextErrors } from '@tally/contracts';
import { Access, Caller, SubjectSigned, tokenRevoked, type Principal } from '@tally/platform-auth';
import type { IncomingMessage } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Response } from '../gateway/express-response.js';
import { CapabilityGrants, granted } from './capability-grants.js';
import { ToolCalls } from './tool-calls.js';
import { ToolServers } from './tool-servers.js';
import { ceilingOf, SessionCeiling } from './session-ceiling.js';
import { McpSessions, type SessionRefusal, type SessionSlot } from './mcp-sessions.js';

type CapabilityCaller = Extract<Principal, { kind: 'capability' }>;

interface Session {
  readonly transport: StreamableHTTPServerTransport;
  readonly capabilityId: string;
  readonly ceiling: SessionCeiling | undefined;
  readonly slot: SessionSlot;
  caller: CapabilityCaller;
}

const SEPARATOR = '__';

@Controller('mcp')
export class McpController {
  private readonly sessions = new Map<string, Session>();

  constructor(
    @Inject(ToolServers) private readonly servers: ToolServers,
    @Inject(ToolCalls) private readonly calls: ToolCalls,
    @Inject(CapabilityGrants) private readonly grants: CapabilityGrants,
    @Inject(McpSessions) private readonly quotas: McpSessions,
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
    if (typeof id === 'string') {
      // An ended session is unknown, as the transport's spec says: the client opens a new one.
      const existing = this.sessions.get(id);
      if (!existing || existing.capabilityId !== caller.capability_id)
        return void res
          .status(404)
          .json({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null });
      return this.serve(existing, req, res, caller);
    }
    const ceiling = ceilingOf(req.headers['x-tally-dispatch-ceiling']);
    if (ceiling && 'invalid' in ceiling)
      return void res.status(400).json({ jsonrpc: '2.0', error: { code: -32602, message: ceiling.invalid }, id: null });
    const session = await this.open(caller, ceiling);
    if (session === 'revoked') throw tokenRevoked(`capability ${caller.capability_id} was revoked`);
    if ('quota' in session) return refuse(res, session);
    await this.serve(session, req, res, caller);
    // A first request that was not `initialize` leaves a transport without a session: free it now.
    if (session.transport.sessionId === undefined) await this.quotas.end(session.slot, 'unused');
  }

  private async serve(
    session: Session,
    req: IncomingMessage & { body?: unknown },
    res: Response,
    caller: CapabilityCaller,
  ): Promise<void> {
    session.caller = caller;
    // A GET only listens for what the server sends: it keeps no call running, so it does not hold the session open.
    res.once('close', this.quotas.begin(session.slot, req.method !== 'GET'));
    await session.transport.handleRequest(req, res, req.body);
  }

  private async open(
    caller: CapabilityCaller,
    ceiling: SessionCeiling | undefined,
  ): Promise<Session | SessionRefusal | 'revoked'> {
    const server = new Server({ name: 'tally', version: '1' }, { capabilities: { tools: {} } });
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sid) => void this.sessions.set(sid, session),
    });
    // Counted before anything awaits, so concurrent opens cannot pass a quota between them.
    const slot = this.quotas.admit(caller, async () => {
      if (transport.sessionId) this.sessions.delete(transport.sessionId);
      await server.close();
    });
    if (slot === 'revoked' || 'quota' in slot) return slot;
    const session: Session = { transport, capabilityId: caller.capability_id, ceiling, slot, caller };
    // However the transport closes (DELETE, or closed here), the session ends once.
    transport.onclose = () => void this.quotas.end(slot, 'closed');
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

/** 429 naming the full quota, with when a session of its scope could end by itself. */
function refuse(res: Response, refusal: SessionRefusal): void {
  const retryAfterS =
    refusal.retryAfterMs === undefined ? undefined : Math.max(1, Math.ceil(refusal.retryAfterMs / 1000));
  if (retryAfterS !== undefined) res.set({ 'retry-after': String(retryAfterS) });
  res.status(429).json({
    jsonrpc: '2.0',
    error: {
      code: -32000,
      message: `too many MCP sessions: ${refusal.quota} (${refusal.limit}) is reached`,
      data: {
        quota: refusal.quota,
        limit: refusal.limit,
        ...(retryAfterS === undefined ? {} : { retry_after_s: retryAfterS }),
      },
    },
    id: null,
  });
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
