// Proves issue 8's proof of possession against the real budget-authority and a metered
// orchestrator: a capability issued with bind "subject_key" spends only on requests signed
// (RFC 9421, Ed25519 over @method, @path and content-digest) with its subject key. A correct
// signature spends; the same signature again, a body that is not the digested one, a stale
// created time, or the token alone (stolen) spend nothing, on admissions, work submissions,
// the drop-in endpoints and delegation. An unbound capability is unchanged.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import { subjectSignatureHeaders } from '@tally/platform-auth';
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

  beforeAll(async () => {
    h = meteredHarness('pop');
    await h.startAuthority();
    await h.start(1);
  }, 240_000);

  afterAll(async () => {
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
    options: { createdMs?: number; signedBody?: string } = {},
  ): Promise<Prepared> {
    const text = JSON.stringify(body);
    const signature = credential.privateKey
      ? await subjectSignatureHeaders({
          method: 'POST',
          path,
          body: options.signedBody ?? text,
          privateKey: credential.privateKey,
          ...(options.createdMs === undefined ? {} : { createdMs: options.createdMs }),
        })
      : {};
    return {
      url: `${base}${path}`,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${credential.token}`, ...signature },
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
});
