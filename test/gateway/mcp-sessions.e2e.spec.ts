// Proves issue 18 item 4 (ADR 0054) with the official MCP client against POST /mcp of a metered orchestrator and the real authority: MCP sessions are bounded per capability, per tenant and per replica (429 naming the quota, with retry-after), end after an idle time, end when their token expires, and end as soon as their capability (or its root) is revoked through the authority; a request on an ended session is a 404, and the metrics port counts open, refused and ended sessions.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { generateKeyPairSync } from 'node:crypto';
import { authorityCall, meteredHarness } from './gateway.support.js';
import { McpToolServer } from './mcp-tool-server.js';

type Json = Record<string, unknown>;

const PER_CAPABILITY = 2;
const PER_TENANT = 3;
const PER_REPLICA = 5;
const IDLE_MS = 4_000;
const HANG_MS = IDLE_MS + 3_000;
/** The idle time plus the sweeper's period and a margin for a busy shared machine. */
const IDLE_END_WAIT_MS = IDLE_MS + 1_000 + 2_000;

let tools: McpToolServer;
const h = meteredHarness(
  'gwmcps',
  {
    TALLY__ORCHESTRATOR__MCP_SESSIONS_MAX: String(PER_REPLICA),
    TALLY__ORCHESTRATOR__MCP_SESSIONS_PER_CAPABILITY_MAX: String(PER_CAPABILITY),
    TALLY__ORCHESTRATOR__MCP_SESSIONS_PER_TENANT_MAX: String(PER_TENANT),
    TALLY__ORCHESTRATOR__MCP_SESSION_IDLE_MS: String(IDLE_MS),
  },
  () => ({
    tool_servers: [
      {
        name: 'calc',
        url: tools.url,
        tools: { add: { cost_units_per_call: 1, currency: 'USD' }, hang: { cost_units_per_call: 1, currency: 'USD' } },
        // Longer than the idle time: a call still running must hold its session open.
        timeout_ms: HANG_MS,
      },
    ],
  }),
);

beforeAll(async () => {
  tools = await McpToolServer.start();
  await h.startAuthority();
  await h.start(1);
  await authorityCall(h, 'POST', '/v1/tenants', { id: 'acme' });
}, 240_000);
afterAll(async () => {
  await h.dispose();
  await tools.stop();
}, 60_000);

const subjectKey = () => generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!;

async function issue(options: { tenant?: string; ttlSeconds?: number; parentId?: string; tool?: string } = {}) {
  const cap = await authorityCall(h, 'POST', '/v1/capabilities', {
    subject_public_key: subjectKey(),
    ttl_seconds: options.ttlSeconds ?? 3600,
    grants: [
      {
        server_id: 'calc',
        tool_name: options.tool ?? 'add',
        max_invocations: 100,
        max_cost_per_invocation: 10,
        currency: 'USD',
      },
    ],
    ...(options.tenant === undefined ? {} : { tenant_id: options.tenant }),
    ...(options.parentId === undefined ? {} : { parent_id: options.parentId }),
  });
  return { id: cap['id'] as string, token: cap['token'] as string };
}

async function open(token: string): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'agent', version: '1' });
  const transport = new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return { client, transport };
}

/** Ends a session as a client should: DELETE, then close. */
async function end(session: { client: Client; transport: StreamableHTTPClientTransport }): Promise<void> {
  await session.transport.terminateSession();
  await session.client.close();
}

/** An `initialize` as raw HTTP, to read the status, headers and body the SDK client turns into an error. */
async function rawInitialize(token: string): Promise<{ status: number; retryAfter: string | null; body: Json }> {
  const res = await fetch(`${h.url}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  const text = await res.text();
  return {
    status: res.status,
    retryAfter: res.headers.get('retry-after'),
    body: res.headers.get('content-type')?.includes('application/json') ? (JSON.parse(text) as Json) : {},
  };
}

async function metric(name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${h.metricsUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

const ended = (reason: string) => metric('tally_mcp_sessions_ended_total', `{reason="${reason}"}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until no session is open, so each test starts from an empty replica. */
async function noneOpen(): Promise<void> {
  await h.eventually(
    'every MCP session to end',
    async () => ((await metric('tally_mcp_sessions_open')) === 0 ? true : undefined),
    IDLE_END_WAIT_MS + 5_000,
  );
}

describe('issue 18 item 4: MCP session quotas and ends', () => {
  it('issue 18 item 4 a capability holds at most mcp_sessions_per_capability_max sessions: the next initialize is a 429 naming the quota with retry-after, another capability is unaffected, and a deleted session frees its place', async () => {
    await noneOpen();
    const [a, b] = [await issue(), await issue()];
    const sessions = [await open(a.token), await open(a.token)];
    const refusedBefore = await metric('tally_mcp_sessions_refused_total', '{scope="capability"}');
    await expect(open(a.token)).rejects.toThrow(/429|mcp_sessions_per_capability_max/);
    const raw = await rawInitialize(a.token);
    expect(raw.status).toBe(429);
    expect(raw.body['error']).toMatchObject({
      message: expect.stringContaining('mcp_sessions_per_capability_max'),
      data: { quota: 'mcp_sessions_per_capability_max', limit: PER_CAPABILITY },
    });
    // The soonest of the capability's sessions ends by idleness within the idle time.
    expect(Number(raw.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(raw.retryAfter)).toBeLessThanOrEqual(IDLE_MS / 1000);
    expect(await metric('tally_mcp_sessions_refused_total', '{scope="capability"}')).toBe(refusedBefore + 2);
    const other = await open(b.token);
    expect((await other.client.listTools()).tools.map((t) => t.name)).toEqual(['calc__add']);
    await end(sessions[0]!);
    const again = await open(a.token);
    await again.client.ping();
    await Promise.all([end(sessions[1]!), end(other), end(again)]);
  });

  it('issue 18 item 4 concurrent initializes of one capability never pass mcp_sessions_per_capability_max', async () => {
    await noneOpen();
    const cap = await issue();
    const opened = await Promise.allSettled(Array.from({ length: 8 }, () => open(cap.token)));
    const ok = opened.filter((o) => o.status === 'fulfilled');
    expect(ok).toHaveLength(PER_CAPABILITY);
    expect(await metric('tally_mcp_sessions_open')).toBe(PER_CAPABILITY);
    await Promise.all(ok.map((o) => end(o.value)));
  });

  it('issue 18 item 4 a tenant holds at most mcp_sessions_per_tenant_max sessions across its capabilities, and the replica at most mcp_sessions_max across tenants (429 naming each)', async () => {
    await noneOpen();
    const [x, y, z] = [
      await issue({ tenant: 'acme' }),
      await issue({ tenant: 'acme' }),
      await issue({ tenant: 'acme' }),
    ];
    const [d, e, f] = [await issue(), await issue(), await issue()];
    const acme = [await open(x.token), await open(x.token), await open(y.token)];
    const tenantRefusal = await rawInitialize(z.token);
    expect(tenantRefusal.status).toBe(429);
    expect(tenantRefusal.body['error']).toMatchObject({
      data: { quota: 'mcp_sessions_per_tenant_max', limit: PER_TENANT },
    });
    await expect(open(z.token)).rejects.toThrow(/429|mcp_sessions_per_tenant_max/);
    // The default tenant still has room until the replica is full.
    const others = [await open(d.token), await open(e.token)];
    const replicaRefusal = await rawInitialize(f.token);
    expect(replicaRefusal.status).toBe(429);
    expect(replicaRefusal.body['error']).toMatchObject({ data: { quota: 'mcp_sessions_max', limit: PER_REPLICA } });
    expect(await metric('tally_mcp_sessions_open')).toBe(PER_REPLICA);
    await Promise.all([...acme, ...others].map(end));
    expect(await metric('tally_mcp_sessions_open')).toBe(0);
  });

  it('issue 18 item 4 a session no request touched for mcp_session_idle_ms ends: its next request is a 404 (unknown session), while a session in use stays open', async () => {
    await noneOpen();
    const cap = await issue();
    const idle = await open(cap.token);
    const busy = await open(cap.token);
    const idleBefore = await ended('idle');
    const started = Date.now();
    while (Date.now() - started < IDLE_END_WAIT_MS) {
      await busy.client.ping();
      await sleep(IDLE_MS / 4);
    }
    await expect(idle.client.listTools()).rejects.toThrow(/404|Session not found/);
    expect((await busy.client.listTools()).tools).toHaveLength(1);
    expect(await ended('idle')).toBe(idleBefore + 1);
    // Its place is free again: the capability opens a second session.
    const next = await open(cap.token);
    await Promise.all([end(busy), end(next)]);
    await idle.client.close();
  }, 60_000);

  it('issue 18 item 4 a tool call still running holds its session open past the idle time', async () => {
    await noneOpen();
    const cap = await issue({ tool: 'hang' });
    const session = await open(cap.token);
    const idleBefore = await ended('idle');
    const started = Date.now();
    const hung = await session.client.callTool({ name: 'calc__hang', arguments: {} }, undefined, {
      timeout: HANG_MS + 15_000,
    });
    expect(Date.now() - started).toBeGreaterThan(IDLE_MS);
    expect(hung.isError).toBe(true);
    // Still open: the idle time counts from the call's answer.
    await session.client.ping();
    expect(await ended('idle')).toBe(idleBefore);
    await end(session);
  }, 60_000);

  it('issue 18 item 4 a session ends when its token expires, though it is in use', async () => {
    await noneOpen();
    const cap = await issue({ ttlSeconds: 3 });
    const session = await open(cap.token);
    const [expiredBefore, idleBefore] = [await ended('expired'), await ended('idle')];
    // Kept busy until the guard refuses the expired token, so idleness cannot be what ends it.
    await h.eventually(
      'the token to expire',
      async () => {
        const ok = await session.client.ping().then(
          () => true,
          () => false,
        );
        return ok ? undefined : true;
      },
      10_000,
    );
    await h.eventually(
      'the session to end as expired',
      async () => ((await ended('expired')) === expiredBefore + 1 ? true : undefined),
      5_000,
    );
    expect(await ended('idle')).toBe(idleBefore);
    expect(await metric('tally_mcp_sessions_open')).toBe(0);
    await session.client.close();
  }, 30_000);

  it('issue 18 item 4 revoking a capability through the authority ends its sessions at once, and revoking a root ends its delegations’ sessions', async () => {
    await noneOpen();
    const cap = await issue();
    const root = await issue();
    const child = await issue({ parentId: root.id, ttlSeconds: 600 });
    const own = await open(cap.token);
    const delegated = await open(child.token);
    await own.client.ping();
    const revokedBefore = await ended('revoked');
    const started = Date.now();
    await authorityCall(h, 'POST', `/v1/capabilities/${cap.id}/revoke`, {});
    const answered = Date.now();
    // Polled back to back (each poll is one metrics request), to time the end closely.
    while ((await ended('revoked')) < revokedBefore + 1 && Date.now() - answered < 5_000);
    const endedAfterMs = Date.now() - answered;
    console.log(
      `MCP session ended ${endedAfterMs} ms after the revoke's answer (${answered - started} ms for the revoke itself)`,
    );
    expect(endedAfterMs).toBeLessThan(2_000);
    await authorityCall(h, 'POST', `/v1/capabilities/${root.id}/revoke`, {});
    await h.eventually(
      'the delegation’s session to end',
      async () => ((await ended('revoked')) === revokedBefore + 2 ? true : undefined),
      5_000,
    );
    expect(await metric('tally_mcp_sessions_open')).toBe(0);
    // The revoked token is refused at the door, before the session could be asked for.
    const res = await fetch(`${h.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${cap.token}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(401);
    await Promise.all([own.client.close(), delegated.client.close()]);
  });
});
