// Proves issue 8's proof of possession against the real budget-authority and a metered
// orchestrator: a capability issued with bind "subject_key" spends only on requests signed
// (RFC 9421, Ed25519 over @method, @path and content-digest) with its subject key. A correct
// signature spends; the same signature again, a body that is not the digested one, a stale
// created time, or the token alone (stolen) spend nothing, on admissions, work submissions,
// the drop-in endpoints and delegation. An unbound capability is unchanged. ADR 0049: a
// relabelled replay, an appended member, or a captured request sent with an Idempotency-Key,
// x-tally-fallbacks or query its signature does not cover is refused and books nothing.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import { subjectSignatureHeaders } from '@tally/platform-auth';
import { AuthorityLedger } from '../orchestrator/authority-ledger.js';
import { MODELS, workBody, type OrchestratorHarness } from '../orchestrator/orchestrator.harness.js';
import { authorityCall, meteredHarness, scriptedGrants } from '../gateway/gateway.support.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

interface Bound {
  readonly id: string;
  readonly token: string;
  readonly privateKey: KeyObject;
}

describe('Issue 8: proof of possession for capabilities bound to their subject key', () => {
  let h: OrchestratorHarness;
  let ledger: AuthorityLedger;

  beforeAll(async () => {
    h = meteredHarness('pop');
    await h.startAuthority();
    await h.start(1);
    ledger = await AuthorityLedger.open(h.natsUrl, h.namespace);
  }, 240_000);

  afterAll(async () => {
    await ledger?.close();
    await h?.dispose();
  });

  const grants = () => [
    { server_id: 'tools', tool_name: 'search', max_invocations: 100, max_cost_per_invocation: 1_000, currency: 'USD' },
    ...scriptedGrants(MODELS).map((g) => ({
      ...g,
      max_invocations: 1_000,
      max_cost_per_invocation: 100_000,
      currency: 'USD',
    })),
  ];

  async function issue(bind: boolean): Promise<Bound> {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const cap = await authorityCall(h, 'POST', '/v1/capabilities', {
      subject_public_key: publicKey.export({ format: 'jwk' }).x!,
      ttl_seconds: 3600,
      grants: grants(),
      ...(bind ? { bind: 'subject_key' } : {}),
    });
    return { id: cap['id'] as string, token: cap['token'] as string, privateKey };
  }

  /** One request, exactly as sent, so that a test can send the very same bytes again. */
  interface Prepared {
    readonly url: string;
    readonly headers: Record<string, string>;
    readonly body: string;
  }

  async function prepare(
    base: string,
    path: string,
    body: Json,
    credential: { token: string; privateKey?: KeyObject },
    options: { createdMs?: number; signedBody?: string; headers?: Record<string, string> } = {},
  ): Promise<Prepared> {
    const text = JSON.stringify(body);
    const own = options.headers ?? {};
    const signature = credential.privateKey
      ? await subjectSignatureHeaders({
          method: 'POST',
          path,
          body: options.signedBody ?? text,
          headers: own,
          privateKey: credential.privateKey,
          ...(options.createdMs === undefined ? {} : { createdMs: options.createdMs }),
        })
      : {};
    return {
      url: `${base}${path}`,
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${credential.token}`,
        ...own,
        ...signature,
      },
      body: text,
    };
  }

  async function send(req: Prepared): Promise<{ status: number; body: Json; authenticate: string | null }> {
    const res = await fetch(req.url, { method: 'POST', headers: req.headers, body: req.body });
    const text = await res.text();
    return {
      status: res.status,
      body: text ? (JSON.parse(text) as Json) : {},
      authenticate: res.headers.get('www-authenticate'),
    };
  }

  const delegation = (parent: Bound) => ({
    subject_public_key: generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!,
    ttl_seconds: 60,
    grants: [grants()[0]],
    parent_id: parent.id,
    parent_token: parent.token,
  });

  const admission = () => ({
    request_id: `r-${randomUUID()}`,
    server_id: 'tools',
    tool_name: 'search',
    requested_cost: 10,
  });

  async function invocations(capabilityId: string): Promise<number> {
    const usage = await authorityCall(h, 'GET', `/v1/capabilities/${capabilityId}/usage`);
    return (usage['grants'] as Json[]).reduce((n, g) => n + (g['invocation_count'] as number), 0);
  }

  it('Issue 8: a bound capability with a correct signature spends', async () => {
    const cap = await issue(true);
    const res = await send(await prepare(h.authority!.url, '/v1/admissions', admission(), cap));
    expect(res.status).toBe(200);
    expect(res.body['verdict']).toBe('allow');
    expect(await invocations(cap.id)).toBe(1);
  });

  it('Issue 8: a replayed signature is refused and spends nothing', async () => {
    const cap = await issue(true);
    const req = await prepare(h.authority!.url, '/v1/admissions', admission(), cap);
    expect((await send(req)).status).toBe(200);
    const replay = await send(req);
    expect(replay.status).toBe(401);
    expect(replay.body['type']).toMatch(/signature_replayed/);
    expect(await invocations(cap.id)).toBe(1);
  });

  it('Issue 8: a stolen token without a signature spends nothing: admission, work, drop-in and delegation all refuse it', async () => {
    const cap = await issue(true);
    const stolen = { token: cap.token };
    const admit = await send(await prepare(h.authority!.url, '/v1/admissions', admission(), stolen));
    expect(admit.status).toBe(401);
    expect(admit.authenticate).toMatch(/^Bearer/);
    expect(admit.body['type']).toMatch(/signature_required/);
    // The body's token field is the same credential: no way around the signature.
    const bodyToken = await fetch(`${h.authority!.url}/v1/admissions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...admission(), token: cap.token }),
    });
    expect(bodyToken.status).toBe(401);
    const callsBefore = h.calls();
    const work = await send(await prepare(h.url, '/v1/work', workBody(), stolen));
    expect(work.status).toBe(401);
    const chat = await send(
      await prepare(
        h.url,
        '/v1/chat/completions',
        { model: 'scripted/ok-model', messages: [{ role: 'user', content: 'x' }] },
        stolen,
      ),
    );
    expect(chat.status).toBe(401);
    expect(chat.body['error']).toBeDefined();
    const child = await fetch(`${h.authority!.url}/v1/capabilities`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...delegation(cap), parent_token: cap.token }),
    });
    expect(child.status).toBe(401);
    expect(await invocations(cap.id)).toBe(0);
    expect(h.calls()).toBe(callsBefore);
  });

  it('Issue 8: a body that is not the one its Content-Digest names is refused', async () => {
    const cap = await issue(true);
    const req = await prepare(h.authority!.url, '/v1/admissions', { ...admission(), requested_cost: 999 }, cap, {
      signedBody: JSON.stringify(admission()),
    });
    const res = await send(req);
    expect(res.status).toBe(401);
    expect(res.body['type']).toMatch(/content_digest_mismatch/);
    expect(await invocations(cap.id)).toBe(0);
  });

  it('Issue 8: a signature whose created time is outside the allowed skew is refused', async () => {
    const cap = await issue(true);
    const res = await send(
      await prepare(h.authority!.url, '/v1/admissions', admission(), cap, { createdMs: Date.now() - 10 * 60_000 }),
    );
    expect(res.status).toBe(401);
    expect(res.body['type']).toMatch(/signature_expired/);
  });

  it('Issue 8: a signed work submission, drop-in call and delegation of a bound capability go through', async () => {
    const cap = await issue(true);
    const work = await send(await prepare(h.url, '/v1/work', workBody(), cap));
    expect(work.status).toBe(202);
    const done = await h.terminal(work.body['work_id'] as string);
    expect(done['status']).toBe('completed');
    const chat = await send(
      await prepare(
        h.url,
        '/v1/chat/completions',
        { model: 'scripted/ok-model', messages: [{ role: 'user', content: 'hi' }] },
        cap,
      ),
    );
    expect(chat.status).toBe(200);
    const delegate = await prepare(h.authority!.url, '/v1/capabilities', delegation(cap), cap);
    // Delegation by possession carries no bearer: the parent token is in the body.
    const { authorization: _bearer, ...headers } = delegate.headers;
    const child = await send({ ...delegate, headers });
    expect(child.status).toBe(201);
    expect(await invocations(cap.id)).toBeGreaterThanOrEqual(2);
  });

  it('Issue 8: an unbound capability still spends without a signature', async () => {
    const cap = await issue(false);
    const res = await send(await prepare(h.authority!.url, '/v1/admissions', admission(), { token: cap.token }));
    expect(res.status).toBe(200);
    expect(res.body['verdict']).toBe('allow');
  });

  /** Events on the capability's tree in the budget stream: a hold, a receipt, anything booked. */
  const treeEvents = async (cap: Bound) => (await ledger.events(cap.id)).length;

  /** The same request with some headers changed (undefined drops one) or sent to another target. */
  const tampered = (req: Prepared, headers: Record<string, string | undefined>, url = req.url): Prepared => {
    const changed = { ...req.headers, ...headers };
    for (const [name, value] of Object.entries(changed)) if (value === undefined) delete changed[name];
    return { ...req, url, headers: changed as Record<string, string> };
  };

  it('ADR 0049 a spent signature relabelled in both headers is refused as a replay and books nothing', async () => {
    const cap = await issue(true);
    const req = await prepare(h.authority!.url, '/v1/admissions', admission(), cap);
    expect((await send(req)).status).toBe(200);
    const booked = await treeEvents(cap);
    const relabelled = tampered(req, {
      signature: req.headers['signature']!.replace(/^sig=/, 'x='),
      'signature-input': req.headers['signature-input']!.replace(/^sig=/, 'x='),
    });
    const res = await send(relabelled);
    expect(res.status).toBe(401);
    expect(res.body['type']).toMatch(/signature_replayed/);
    expect(await invocations(cap.id)).toBe(1);
    expect(await treeEvents(cap)).toBe(booked);
  });

  it('ADR 0049 a spent signature with a junk member appended to Signature is refused and books nothing', async () => {
    const cap = await issue(true);
    const req = await prepare(h.authority!.url, '/v1/admissions', admission(), cap);
    expect((await send(req)).status).toBe(200);
    const booked = await treeEvents(cap);
    const res = await send(tampered(req, { signature: `${req.headers['signature']!}, junk=:AAAA:` }));
    expect(res.status).toBe(401);
    expect(res.body['type']).toMatch(/signature_invalid/);
    expect(await invocations(cap.id)).toBe(1);
    expect(await treeEvents(cap)).toBe(booked);
  });

  it('ADR 0049 a captured admission sent first with another Idempotency-Key or a query is refused; the genuine one then spends once', async () => {
    const cap = await issue(true);
    const genuine = await prepare(h.authority!.url, '/v1/admissions', admission(), cap, {
      headers: { 'idempotency-key': 'genuine-1' },
    });
    const unkeyed = await prepare(h.authority!.url, '/v1/admissions', admission(), cap);
    const before = await treeEvents(cap);
    for (const attack of [
      tampered(genuine, { 'idempotency-key': 'attacker-2' }),
      tampered(unkeyed, { 'idempotency-key': 'attacker-3' }),
      tampered(unkeyed, {}, `${unkeyed.url}?again=1`),
    ]) {
      const res = await send(attack);
      expect(res.status).toBe(401);
      expect(res.body['type']).toMatch(/signature_invalid/);
    }
    expect(await invocations(cap.id)).toBe(0);
    expect(await treeEvents(cap)).toBe(before);
    // Refused signatures are not spent: the client's own requests still go through, once each.
    expect((await send(genuine)).status).toBe(200);
    expect((await send(unkeyed)).status).toBe(200);
    expect(await invocations(cap.id)).toBe(2);
  });

  it('ADR 0049 a captured drop-in call sent with other x-tally-fallbacks or another Idempotency-Key is refused: no unit, no provider call', async () => {
    const cap = await issue(true);
    const chat = { model: 'scripted/ok-model', messages: [{ role: 'user', content: 'hi' }] };
    const plain = await prepare(h.url, '/v1/chat/completions', chat, cap);
    const keyed = await prepare(h.url, '/v1/chat/completions', chat, cap, {
      headers: { 'idempotency-key': 'drop-in-1', 'x-tally-fallbacks': 'scripted/ok-model' },
    });
    const callsBefore = h.calls();
    const before = await treeEvents(cap);
    for (const attack of [
      tampered(plain, { 'x-tally-fallbacks': 'scripted-anthropic/ok-model' }),
      tampered(plain, { 'idempotency-key': 'attacker-1' }),
      tampered(keyed, { 'x-tally-fallbacks': 'scripted-anthropic/ok-model' }),
      tampered(keyed, { 'idempotency-key': 'attacker-2' }),
    ]) {
      const res = await send(attack);
      expect(res.status).toBe(401);
      expect(res.body['error']).toBeDefined();
    }
    expect(h.calls()).toBe(callsBefore);
    expect(await invocations(cap.id)).toBe(0);
    expect(await treeEvents(cap)).toBe(before);
    expect((await send(keyed)).status).toBe(200);
  });
});
