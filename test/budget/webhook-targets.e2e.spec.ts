// Proves ADR 0053 for webhooks on a real authority process: registering an internal target (metadata, private, IPv4-mapped loopback, a name that resolves to loopback, a cluster name) is refused 422 naming url while allow-listed ones are accepted, a delivery checks its target again (one allowed at registration and disallowed by a restart is never contacted), and a reader sees delivery failures only as coarse codes.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { admitPayload, AuthorityStack, eventually, type Json } from './support/authority-stack.js';

const GRANT = { server_id: 'cost-srv', tool_name: 'compute', max_cost_per_invocation: 100, currency: 'USD' };
const ENV = {
  // Loopback is off, as in production; the allow-lists below are the operator's.
  TALLY__WEBHOOKS__ALLOW_HTTP_LOOPBACK: 'false',
  TALLY__WEBHOOKS__ALLOW_CIDRS__0: '10.20.0.0/16',
  TALLY__WEBHOOKS__ALLOW_HOSTS__0: 'receiver.tally.svc',
  TALLY__WEBHOOKS__TIMEOUT_MS: '1500',
  TALLY__WEBHOOKS__ATTEMPTS_MAX: '2',
  TALLY__WEBHOOKS__RETRY_BASE_MS: '100',
  TALLY__WEBHOOKS__RETRY_MAX_MS: '200',
};
/** The first boot also allows this machine's loopback address, as an operator might for an internal receiver. */
const LOOPBACK_ALLOWED = { TALLY__WEBHOOKS__ALLOW_CIDRS__1: '127.0.0.1/32' };

/** A TCP listener that counts every connection and answers a TLS client with plain text (its handshake fails). */
class ConnectionCounter {
  connections = 0;
  private readonly sockets = new Set<Socket>();
  private readonly server: Server = createServer((socket) => {
    this.connections += 1;
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => undefined);
    socket.end('HTTP/1.1 200 OK\r\n\r\n');
  });

  async start(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

let stack: AuthorityStack;
const counter = new ConnectionCounter();
let counterPort: number;
let closedPort: number;
const endpoints: Record<'tls' | 'closed', string> = { tls: '', closed: '' };

beforeAll(async () => {
  counterPort = await counter.start();
  closedPort = await freeClosedPort();
  stack = await AuthorityStack.create('bhtarget', { env: ENV });
  await stack.start(LOOPBACK_ALLOWED);
}, 240_000);
afterAll(async () => {
  await stack?.dispose();
  await counter.stop();
}, 120_000);

async function register(url: string): Promise<{ status: number; body: Json }> {
  return stack.http('POST', '/v1/tenants/default/webhooks', { url, events: ['budget.threshold_crossed'] });
}

/** One threshold crossing: one message for every endpoint that asked for it. */
async function cross(label: string): Promise<string> {
  const cap = await stack.issue([{ ...GRANT, max_total_cost_units: 100, alert_at_percent: [50] }]);
  expect((await stack.admit(admitPayload(cap['token'], label, 'standalone', { requested_cost: 60 })))['verdict']).toBe(
    'allow',
  );
  return cap['id'] as string;
}

async function listed(kind: 'attempts' | 'dead-letters'): Promise<Json[]> {
  const body = await stack.ok('GET', `/v1/tenants/default/webhooks/${kind}`);
  return body[kind === 'attempts' ? 'attempts' : 'dead_letters'] as Json[];
}

const forCapability = (records: Json[], capabilityId: string) =>
  records.filter((r) => String(r['body'] ?? '').includes(capabilityId) || r['capability_id'] === capabilityId);

describe('ADR 0053 webhook targets on a running authority', () => {
  it('ADR 0053 a reader sees delivery failures as coarse codes only (tls_error, connection_refused), with no address or port', async () => {
    const tls = await register(`https://127.0.0.1:${counterPort}/tls`);
    const closed = await register(`https://127.0.0.1:${closedPort}/closed`);
    expect([tls.status, closed.status]).toEqual([201, 201]);
    endpoints.tls = tls.body['id'] as string;
    endpoints.closed = closed.body['id'] as string;
    await cross('first-crossing');
    const attempts = await eventually(
      () => listed('attempts'),
      (a) =>
        a.filter((x) => x['endpoint_id'] === endpoints.tls).length >= 2 &&
        a.some((x) => x['endpoint_id'] === endpoints.closed),
      60_000,
      'the failed attempts',
    );
    expect(counter.connections).toBeGreaterThanOrEqual(1);
    const errorsOf = (id: string) => [
      ...new Set(attempts.filter((a) => a['endpoint_id'] === id).map((a) => a['error'])),
    ];
    expect(errorsOf(endpoints.tls)).toEqual(['tls_error']);
    expect(errorsOf(endpoints.closed)).toEqual(['connection_refused']);
    const dead = await eventually(
      () => listed('dead-letters'),
      (d) => d.filter((x) => x['reason'] === 'attempts_exhausted').length >= 2,
      60_000,
      'the exhausted messages',
    );
    expect(dead.map((d) => d['last_error']).sort()).toEqual(['connection_refused', 'tls_error']);
    const shown = JSON.stringify([...attempts, ...dead.map(({ body: _body, ...rest }) => rest)]);
    expect(shown).not.toContain('127.0.0.1');
    expect(shown).not.toContain(String(counterPort));
    expect(shown).not.toContain(String(closedPort));
    expect(shown).not.toMatch(/EPROTO|ECONNREFUSED|wrong version/);
  }, 180_000);

  it('ADR 0053 a delivery checks its target again: an endpoint allowed at registration and disallowed by a restart is never contacted, and is dead-lettered as url_refused', async () => {
    // The first test's messages are settled; restart without the loopback allowance.
    await stack.processes[0]!.stop();
    await stack.start();
    const before = counter.connections;
    const capabilityId = await cross('after-restart');
    const refused = await eventually(
      async () => forCapability(await listed('dead-letters'), capabilityId),
      (d) => d.length === 2,
      60_000,
      'the refused messages',
    );
    expect(refused.map((d) => [d['reason'], d['last_error'], d['attempts']])).toEqual([
      ['url_refused', 'refused_target', 0],
      ['url_refused', 'refused_target', 0],
    ]);
    expect(new Set(refused.map((d) => d['endpoint_id']))).toEqual(new Set([endpoints.tls, endpoints.closed]));
    expect(counter.connections).toBe(before);
  }, 180_000);

  it('ADR 0053 registering 169.254.169.254, 10.0.0.1, [::ffff:127.0.0.1], a name resolving to loopback, or a cluster name is refused 422 naming url; allow-listed targets are accepted', async () => {
    for (const url of [
      'https://169.254.169.254/latest/meta-data',
      'https://10.0.0.1/hook',
      'https://[::ffff:127.0.0.1]/hook',
      'https://localhost/hook',
      'https://receiver.other.svc/hook',
      'https://metadata.google.internal/computeMetadata/v1/',
    ]) {
      const res = await register(url);
      expect({ url, status: res.status, type: res.body['type'], errors: res.body['errors'] }).toEqual({
        url,
        status: 422,
        type: 'webhook_target_refused',
        errors: [expect.objectContaining({ field: 'url' })],
      });
    }
    for (const url of ['https://10.20.1.2/hook', 'https://receiver.tally.svc/hook'])
      expect({ url, status: (await register(url)).status }).toEqual({ url, status: 201 });
    // The scheme rule is unchanged: a plain http URL is still a 400 naming url.
    expect((await register('http://10.20.1.2/hook')).status).toBe(400);
  }, 120_000);
});

/** A port nothing listens on: bound once to learn a free number, then closed. */
async function freeClosedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise((resolve) => s.close(resolve));
  return port;
}
