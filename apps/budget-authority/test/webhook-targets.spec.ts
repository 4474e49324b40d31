// Proves ADR 0053 for webhook targets in-process: which addresses and names a call may reach (every internal range in every IPv6 form refused, allow-lists honoured), that a name is refused when any address it resolves to is internal, that a call connects only to the checked address even when DNS answers differently afterwards (rebinding), and that failures are reported as coarse codes.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer as createHttpServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net';
import { ConfigError, validateConfig, WebhooksConfig } from '@tally/platform-app';
import { coarseDeliveryError, DELIVERY_ERRORS } from '../src/webhooks/webhook-policy.js';
import { callWebhook, type WebhookCall } from '../src/webhooks/webhook-sender.js';
import {
  addressAllowed,
  checkTarget,
  systemLookup,
  targetPolicyOf,
  type HostLookup,
  type ResolvedAddress,
} from '../src/webhooks/webhook-targets.js';

function policy(settings: Partial<WebhooksConfig> = {}) {
  return targetPolicyOf(Object.assign(new WebhooksConfig(), settings));
}

/** A resolver that knows only these names (the answer to a name may change from one lookup to the next). */
function resolver(answers: Record<string, string[][]>): HostLookup & { calls: string[] } {
  const calls: string[] = [];
  const lookupHost = async (host: string): Promise<ResolvedAddress[]> => {
    calls.push(host);
    const list = answers[host];
    if (!list) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    const answer = list.length > 1 ? list.shift()! : list[0]!;
    return answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(lookupHost, { calls });
}

const check = (url: string, p = policy(), lookupHost: HostLookup = resolver({})) =>
  checkTarget(new URL(url), p, lookupHost, 1_000);

describe('ADR 0053 webhook target addresses', () => {
  it('ADR 0053 private, link-local, loopback, unspecified, CGNAT, multicast and reserved addresses are refused, in IPv4-mapped, NAT64, 6to4 and IPv4-compatible forms too; public ones are allowed', () => {
    const refused = [
      '169.254.169.254',
      '10.0.0.1',
      '172.16.5.4',
      '172.31.255.255',
      '192.168.1.1',
      '100.64.0.1',
      '127.0.0.1',
      '127.8.9.10',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '192.0.2.7',
      '::1',
      '::',
      'fe80::1',
      'fc00::1',
      'fd12:3456::1',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:169.254.169.254',
      '::ffff:10.0.0.1',
      '64:ff9b::a9fe:a9fe',
      '2002:7f00:1::1',
      '::7f00:1',
      '2001:db8::1',
    ];
    const allowed = ['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700::1111', '64:ff9b::808:808'];
    const p = policy();
    expect(refused.filter((a) => addressAllowed(a, p))).toEqual([]);
    expect(allowed.filter((a) => !addressAllowed(a, p))).toEqual([]);
  });

  it('ADR 0053 loopback is allowed only with allow_http_loopback; allow_cidrs admits a private range and internal_cidrs refuses a public one', () => {
    const local = policy({ allow_http_loopback: true });
    expect(['127.0.0.1', '::1', '::ffff:127.0.0.1'].map((a) => addressAllowed(a, local))).toEqual([true, true, true]);
    expect(addressAllowed('10.0.0.1', local)).toBe(false);
    const lists = policy({ allow_cidrs: ['10.20.0.0/16', 'fd00:20::/32'], internal_cidrs: ['34.118.224.0/20'] });
    expect(addressAllowed('10.20.3.4', lists)).toBe(true);
    expect(addressAllowed('::ffff:10.20.3.4', lists)).toBe(true);
    expect(addressAllowed('fd00:20::5', lists)).toBe(true);
    expect(addressAllowed('10.21.0.1', lists)).toBe(false);
    expect(addressAllowed('34.118.230.1', lists)).toBe(false);
    expect(addressAllowed('34.119.0.1', lists)).toBe(true);
  });

  it('ADR 0053 the config refuses a CIDR that is not one, and a shorthand IPv4 form', () => {
    for (const bad of ['10.0.0.0', '10.1/16', 'not-a-cidr', '10.0.0.0/33'])
      expect(() => validateConfig({ webhooks: { allow_cidrs: [bad] } })).toThrow(ConfigError);
    expect(
      validateConfig({ webhooks: { internal_cidrs: ['10.96.0.0/12', 'fd00::/8'] } }).webhooks.internal_cidrs,
    ).toEqual(['10.96.0.0/12', 'fd00::/8']);
  });
});

describe('ADR 0053 webhook target names', () => {
  it('ADR 0053 URLs naming an internal address in any spelling are refused without a lookup', async () => {
    const lookupHost = resolver({});
    for (const url of [
      'https://169.254.169.254/latest/meta-data',
      'https://169.254.169.254./latest/meta-data',
      'https://2130706433/',
      'https://0x7f.1/',
      'https://[::ffff:127.0.0.1]/',
      'https://[0:0:0:0:0:ffff:a9fe:a9fe]/',
      'https://[::1]:8443/',
    ])
      expect({ url, check: await check(url, policy(), lookupHost) }).toEqual({
        url,
        check: { ok: false, code: 'refused_target' },
      });
    expect(lookupHost.calls).toEqual([]);
  });

  it('ADR 0053 cluster-internal names (.svc, .cluster.local, .internal) are refused unless allow_hosts names them', async () => {
    const lookupHost = resolver({ 'receiver.tally.svc': [['10.96.4.2']], 'hooks.corp.internal': [['10.1.2.3']] });
    for (const url of [
      'https://receiver.tally.svc/x',
      'https://receiver.tally.svc.cluster.local/x',
      'https://metadata.google.internal/',
      'https://METADATA.google.internal./',
    ])
      expect(await check(url, policy(), lookupHost)).toEqual({ ok: false, code: 'refused_target' });
    const allowed = policy({ allow_hosts: ['receiver.tally.svc', '*.corp.internal'] });
    expect(await check('https://receiver.tally.svc/x', allowed, lookupHost)).toEqual({
      ok: true,
      addresses: [{ address: '10.96.4.2', family: 4 }],
    });
    expect((await check('https://hooks.corp.internal/x', allowed, lookupHost)).ok).toBe(true);
    expect((await check('https://corp.internal/x', allowed, lookupHost)).ok).toBe(false);
  });

  it('ADR 0053 a name is refused when any address it resolves to is internal, and allowed with every checked address when none is', async () => {
    const lookupHost = resolver({
      'split.example.com': [['93.184.216.34', '10.0.0.7']],
      'inside.example.com': [['fd00::7']],
      'public.example.com': [['93.184.216.34', '2606:4700::1111']],
    });
    expect(await check('https://split.example.com/', policy(), lookupHost)).toEqual({
      ok: false,
      code: 'refused_target',
    });
    expect(await check('https://inside.example.com/', policy(), lookupHost)).toEqual({
      ok: false,
      code: 'refused_target',
    });
    expect(await check('https://public.example.com/', policy(), lookupHost)).toEqual({
      ok: true,
      addresses: [
        { address: '93.184.216.34', family: 4 },
        { address: '2606:4700::1111', family: 6 },
      ],
    });
    // localhost, through the system resolver, is loopback: refused unless loopback is allowed.
    expect((await checkTarget(new URL('https://localhost:9/'), policy(), systemLookup, 5_000)).ok).toBe(false);
  });

  it('ADR 0053 a name that does not resolve, or not in time, is a dns_error (retried at delivery, never called)', async () => {
    expect(await check('https://nowhere.example.com/', policy(), resolver({}))).toEqual({
      ok: false,
      code: 'dns_error',
    });
    const never: HostLookup = () => new Promise(() => undefined);
    expect(await checkTarget(new URL('https://slow.example.com/'), policy(), never, 50)).toEqual({
      ok: false,
      code: 'dns_error',
    });
  });
});

describe('ADR 0053 a call connects only where the check allowed', () => {
  let server: Server;
  let port: number;
  const received: { host: string | undefined; path: string | undefined }[] = [];
  let plain: TcpServer;
  let plainPort: number;
  const plainSockets = new Set<Socket>();

  beforeAll(async () => {
    server = createHttpServer((req: IncomingMessage, res) => {
      received.push({ host: req.headers.host, path: req.url });
      const status = req.url === '/fail' ? 500 : req.url === '/moved' ? 302 : req.url === '/hang' ? 0 : 204;
      if (status === 0) return;
      res.writeHead(status, status === 302 ? { location: 'http://169.254.169.254/' } : {}).end('not read');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    // Answers a TLS client with plain text: the handshake fails.
    plain = createTcpServer((socket) => {
      plainSockets.add(socket);
      socket.on('close', () => plainSockets.delete(socket));
      socket.end('HTTP/1.1 200 OK\r\n\r\n');
    });
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
    plainPort = (plain.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    for (const socket of plainSockets) socket.destroy();
    await new Promise((resolve) => plain.close(resolve));
  });

  const call = (url: string, addresses: readonly ResolvedAddress[], timeoutMs = 2_000): WebhookCall => ({
    url,
    addresses,
    secret: `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
    webhookId: 'msg_test',
    body: '{"type":"test"}',
    timeoutMs,
    now: new Date(),
  });

  it('ADR 0053 DNS rebinding: a name checked while it pointed at an allowed address, then re-pointed inside, is called at the checked address only, under its own name', async () => {
    // The operator allows the receiver's address; the name's second answer is a loopback address nobody allowed.
    const p = policy({ allow_cidrs: ['127.0.0.1/32'] });
    const lookupHost = resolver({ 'rebinding.example.com': [['127.0.0.1'], ['127.0.0.2']] });
    const url = `http://rebinding.example.com:${port}/pinned`;
    const checked = await check(url, p, lookupHost);
    expect(checked).toEqual({ ok: true, addresses: [{ address: '127.0.0.1', family: 4 }] });
    // DNS now answers with the internal address: a check now refuses it …
    expect(await check(url, p, lookupHost)).toEqual({ ok: false, code: 'refused_target' });
    // … and the call made with the first check's answer does not look the name up again.
    const result = await callWebhook(call(url, checked.ok ? checked.addresses : []));
    expect(result).toMatchObject({ ok: true, status: 204 });
    expect(received.filter((r) => r.path === '/pinned')).toEqual([
      { host: `rebinding.example.com:${port}`, path: '/pinned' },
    ]);
    expect(lookupHost.calls).toEqual(['rebinding.example.com', 'rebinding.example.com']);
  });

  it('ADR 0053 failures are coarse codes with no address, port or error text: connection_refused, timeout, tls_error, http_5xx, redirect (not followed)', async () => {
    const at = [{ address: '127.0.0.1', family: 4 } as const];
    const closed = await freeClosedPort();
    const results = {
      refused: await callWebhook(call(`http://hooks.example.com:${closed}/`, at)),
      timeout: await callWebhook(call(`http://hooks.example.com:${port}/hang`, at, 300)),
      tls: await callWebhook(call(`https://hooks.example.com:${plainPort}/`, at)),
      status: await callWebhook(call(`http://hooks.example.com:${port}/fail`, at)),
      moved: await callWebhook(call(`http://hooks.example.com:${port}/moved`, at)),
    };
    expect(Object.fromEntries(Object.entries(results).map(([k, r]) => [k, r.error]))).toEqual({
      refused: 'connection_refused',
      timeout: 'timeout',
      tls: 'tls_error',
      status: 'http_5xx',
      moved: 'redirect',
    });
    expect(results.status.status).toBe(500);
    // What is recorded is one of the closed set of codes; the operator's log gets the error's code, never its text.
    for (const r of Object.values(results)) {
      expect(DELIVERY_ERRORS).toContain(r.error);
      expect(r.cause ?? 'NONE').toMatch(/^[A-Z0-9_]+$/);
    }
    // The redirect was not followed.
    expect(received.filter((r) => r.path === '/moved')).toHaveLength(1);
  });

  it('ADR 0053 errors recorded before the coarse codes are shown as the code they stand for', () => {
    expect(
      [
        'timeout after 1500 ms',
        'connection failed: ECONNREFUSED',
        'connection failed: ECONNRESET',
        'connection failed: ENOTFOUND',
        'connection failed: UNABLE_TO_VERIFY_LEAF_SIGNATURE',
        'connection failed',
        'status 500',
        'status 404',
        'redirect 302 not followed',
        'url must be https (http to loopback only when webhooks.allow_http_loopback is set for local development)',
        'the last attempt did not finish',
        'tls_error',
      ].map(coarseDeliveryError),
    ).toEqual([
      'timeout',
      'connection_refused',
      'connection_reset',
      'dns_error',
      'tls_error',
      'network_error',
      'http_5xx',
      'http_4xx',
      'redirect',
      'refused_target',
      'interrupted',
      'tls_error',
    ]);
  });
});

/** A port nothing listens on: bound once to learn a free number, then closed. */
async function freeClosedPort(): Promise<number> {
  const s = createTcpServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const p = (s.address() as AddressInfo).port;
  await new Promise((resolve) => s.close(resolve));
  return p;
}
