// Proves issue 18 item 2 against a real budget-authority, a real agent-orchestrator and real JetStream streams: a stranger's refused body is dead-lettered as a digest of a few hundred bytes, refusals are limited per source and per credential with a 429 and retry-after and nothing dead-lettered past the limit, another source is unaffected, and a verified caller's bad body is dead-lettered as before.
import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { sharedNatsUrl } from '@tally/testing';
import { TEST_ADMIN_KEY } from '../support/auth.js';
import { AuthorityStack, type Json } from '../budget/support/authority-stack.js';
import { OrchestratorHarness, workBody } from '../orchestrator/orchestrator.harness.js';

/** The limit both services run with here: small, so a flood is a dozen requests. */
const LIMIT = 5;
const LIMITED_ENV = { TALLY__HTTP__REFUSALS_PER_MINUTE_MAX: String(LIMIT) };

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Json;
}

/**
 * One HTTP call from a loopback address of our choosing (all of 127.0.0.0/8 reaches the
 * service), so each test is a source of its own, as a client elsewhere would be.
 */
function from(
  source: string,
  base: string,
  method: string,
  path: string,
  body?: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        localAddress: source,
        headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          resolve({ status: res.statusCode!, headers: res.headers, body: text ? (JSON.parse(text) as Json) : {} });
        });
      },
    );
    req.on('error', reject);
    req.setTimeout(60_000, () => req.destroy(new Error(`${method} ${path} timed out`)));
    req.end(body);
  });
}

/** An invalid settlement a stranger may send (an unknown field, a made-up proof), padded to `bytes`. */
function badSettlement(bytes: number): string {
  const shell = {
    hold_id: `hold-${randomBytes(4).toString('hex')}`,
    outcome: { kind: 'completed', cost_units: 1 },
    admission_proof: { key_id: 'k1', signature: randomBytes(32).toString('base64url') },
    padding: '',
  };
  const room = bytes - Buffer.byteLength(JSON.stringify(shell));
  return JSON.stringify({
    ...shell,
    padding: randomBytes(Math.ceil(room / 2))
      .toString('hex')
      .slice(0, room),
  });
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('base64url');

/** Every dead letter of a namespace as stored: its size in the stream and its record. */
async function storedLetters(stream: string): Promise<{ bytes: number; record: Json }[]> {
  const nc = await connect({ servers: sharedNatsUrl() });
  try {
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(stream);
    const out: { bytes: number; record: Json }[] = [];
    for (let seq = info.state.first_seq; info.state.messages > 0 && seq <= info.state.last_seq; seq++) {
      const msg = await jsm.streams.getMessage(stream, { seq }).catch(() => undefined);
      if (msg) out.push({ bytes: msg.data.length, record: msg.json<Json>() });
    }
    return out;
  } finally {
    await nc.close();
  }
}

/** Read on the metrics port, where /metrics is served (ADR 0053). */
async function limitedCount(base: string, by: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const match = new RegExp(`^tally_http_refusals_limited_total\\{by="${by}"\\} (\\d+)$`, 'm').exec(text);
  return match ? Number(match[1]) : 0;
}

describe('Issue 18: refusals are cheap (budget-authority)', () => {
  let stack: AuthorityStack;
  beforeAll(async () => {
    stack = await AuthorityStack.create('refuse', { env: LIMITED_ENV });
    await stack.start();
  }, 180_000);
  afterAll(async () => stack?.dispose(), 60_000);

  it('Issue 18 (rule 5): an anonymous 1 MiB invalid settlement leaves a dead letter of a few hundred bytes with its digest, size, route and reason, and no part of the body', async () => {
    const body = badSettlement(1_000_000);
    const res = await from('127.0.0.21', stack.url, 'POST', '/v1/settlements', body);
    expect(res.status).toBe(400);
    const letters = await storedLetters(stack.names.deadLetterStream);
    const mine = letters.filter((l) => l.record['truncated']?.['data_sha256'] === sha256(body));
    expect(mine).toHaveLength(1);
    const { bytes, record } = mine[0]!;
    expect(bytes).toBeLessThan(700);
    expect(record).toMatchObject({
      source: 'http-budget-authority',
      reason: 'validation_failed',
      detail: 'POST /v1/settlements',
      original_subject: 'http:POST:/v1/settlements',
      data_base64: '',
      headers: {},
      withheld: 'unauthenticated',
      truncated: { data_bytes: Buffer.byteLength(body), data_sha256: sha256(body), kept_bytes: 0 },
    });
    expect(record['errors']).toContainEqual({ field: 'padding', message: 'property padding should not exist' });
    const stored = JSON.stringify(record);
    const sent = JSON.parse(body) as Json;
    expect(stored).not.toContain(String(sent['padding']).slice(0, 24));
    expect(stored).not.toContain(sent['admission_proof']['signature']);
    expect(stored).not.toContain(sent['hold_id']);
  });

  it('Issue 18 (rule 6): a flood of anonymous refusals from one source gets 429 with retry-after after the limit, unread and not dead-lettered, and another source is unaffected', async () => {
    const before = (await storedLetters(stack.names.deadLetterStream)).length;
    const source = '127.0.0.22';
    const bodies = Array.from({ length: 3 }, () => badSettlement(64 * 1024));
    // The limit counts refusals of every kind: validation, a missing credential, an unknown route.
    for (const body of bodies)
      expect((await from(source, stack.url, 'POST', '/v1/settlements', body)).status).toBe(400);
    expect((await from(source, stack.url, 'GET', '/v1/capabilities/cap-x')).status).toBe(401);
    expect((await from(source, stack.url, 'GET', '/v1/nowhere')).status).toBe(404);
    const limitedBefore = await limitedCount(stack.metricsUrl, 'source');
    const flood = [];
    for (let i = 0; i < 12; i++)
      flood.push(await from(source, stack.url, 'POST', '/v1/settlements', badSettlement(64 * 1024)));
    for (const res of flood) {
      expect(res.status).toBe(429);
      expect(res.headers['content-type']).toContain('application/problem+json');
      expect(res.body).toMatchObject({ type: 'too_many_refusals', status: 429 });
      const retryAfter = Number(res.headers['retry-after']);
      expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60 / LIMIT).toBe(true);
    }
    // Limited: even a call that would succeed waits until the source has a refusal left.
    expect((await from(source, stack.url, 'GET', '/v1/keys')).status).toBe(429);
    expect(await limitedCount(stack.metricsUrl, 'source')).toBe(limitedBefore + 13);
    // The stream grew by the refused bodies within the limit, each a digest of a few hundred bytes.
    const grown = (await storedLetters(stack.names.deadLetterStream)).slice(before);
    expect(grown.map((l) => l.record['truncated']['data_sha256']).sort()).toEqual(bodies.map(sha256).sort());
    for (const letter of grown) expect(letter.bytes).toBeLessThan(700);
    // Another source is answered as ever: its refusal is dead-lettered, its good call served.
    const other = badSettlement(64 * 1024);
    expect((await from('127.0.0.23', stack.url, 'POST', '/v1/settlements', other)).status).toBe(400);
    expect((await from('127.0.0.23', stack.url, 'GET', '/v1/keys')).status).toBe(200);
    const after = await storedLetters(stack.names.deadLetterStream);
    expect(after.slice(before).map((l) => l.record['truncated']['data_sha256'])).toContain(sha256(other));
  });

  it('Issue 18 (rule 6): one credential refused from many sources is limited by its fingerprint, and a different credential is not', async () => {
    // Not the admin key, and not shaped like an operator key (an unknown key id waits for the directory first).
    const garbage = { authorization: `Bearer not-a-credential-${randomBytes(16).toString('hex')}` };
    for (let i = 0; i < LIMIT; i++)
      expect((await from(`127.0.0.${31 + i}`, stack.url, 'GET', '/v1/tenants', undefined, garbage)).status).toBe(401);
    const limitedBefore = await limitedCount(stack.metricsUrl, 'credential');
    const again = await from('127.0.0.39', stack.url, 'GET', '/v1/tenants', undefined, garbage);
    expect(again.status).toBe(429);
    expect(Number(again.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(await limitedCount(stack.metricsUrl, 'credential')).toBe(limitedBefore + 1);
    const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
    expect((await from('127.0.0.39', stack.url, 'GET', '/v1/tenants', undefined, admin)).status).toBe(200);
  });

  it("Issue 18 (rule 5): an authenticated caller's bad body is still dead-lettered as before, kept with its credentials redacted", async () => {
    const cap = await stack.issue([{ server_id: 'srv', tool_name: 'tool', max_total_cost_units: 1_000 }]);
    const sent = { hold_id: 'verified-bad', outcome: { kind: 'completed' }, token: cap['token'], note: 'kept' };
    const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
    const res = await from('127.0.0.41', stack.url, 'POST', '/v1/settlements', JSON.stringify(sent), admin);
    expect(res.status).toBe(400);
    const letters = await storedLetters(stack.names.deadLetterStream);
    const mine = letters.find((l) =>
      Buffer.from(String(l.record['data_base64']), 'base64').toString().includes('verified-bad'),
    );
    expect(mine).toBeDefined();
    const kept = JSON.parse(Buffer.from(String(mine!.record['data_base64']), 'base64').toString()) as Json;
    expect(kept).toMatchObject({ hold_id: 'verified-bad', outcome: { kind: 'completed' }, note: 'kept' });
    expect(kept['token']).toBe(`[redacted sha256:${sha256(String(cap['token']))}]`);
    expect(mine!.record['redacted']).toEqual(['$.token']);
    expect(mine!.record['withheld']).toBeUndefined();
    expect(mine!.record['truncated']).toBeUndefined();
    expect(mine!.record['detail']).toBe('POST /v1/settlements');
  });
});

describe('Issue 18: refusals are cheap (agent-orchestrator)', () => {
  const h = new OrchestratorHarness({ prefix: 'orefuse', env: LIMITED_ENV });
  beforeAll(async () => {
    await h.start(1);
  }, 180_000);
  afterAll(async () => h.dispose(), 60_000);

  it('Issue 18 (rule 6): the orchestrator answers a source refused past the limit with 429 and retry-after, and serves another source as before', async () => {
    const body = JSON.stringify(workBody());
    for (let i = 0; i < LIMIT; i++)
      expect((await from('127.0.0.51', h.url, 'POST', '/v1/work', body)).status).toBe(401);
    const limited = await from('127.0.0.51', h.url, 'POST', '/v1/work', body);
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ type: 'too_many_refusals', status: 429 });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(await limitedCount(h.metricsUrl, 'source')).toBe(1);
    expect((await from('127.0.0.52', h.url, 'POST', '/v1/work', body)).status).toBe(401);
    // Probes are never limited, whoever floods.
    expect((await from('127.0.0.51', h.url, 'GET', '/healthz')).status).toBe(200);
  });
});
