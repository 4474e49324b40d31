// Proves issue 18 item 10 against a real budget-authority over HTTP and NATS: deep nesting,
// huge arrays, prototype keys (__proto__, constructor, prototype) and duplicate keys in a
// body or in `parameters` are refused naming the field or handled, never a 500, never a
// silently changed object, and Object.prototype of the service stays untouched.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { canonicalJson } from '@tally/contracts';
import { adminHeaders } from '../support/auth.js';
import { admitPayload, AuthorityStack, monetaryGrant, type Json } from '../budget/support/authority-stack.js';

let stack: AuthorityStack;
beforeAll(async () => {
  stack = await AuthorityStack.create('hostile');
  await stack.start();
}, 180_000);
afterAll(async () => stack?.dispose(), 60_000);

const sha256 = (value: unknown) => createHash('sha256').update(canonicalJson(value)).digest('hex');

/** POSTs bytes as they are: the tests need bodies JSON.stringify never writes (duplicate keys, __proto__). */
async function postRaw(path: string, raw: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${stack.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: raw,
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as Json };
}

/** An Admit whose `parameters` is the raw JSON text given, as an agent sends it. */
function admitRaw(token: string, requestId: string, parametersJson: string, extra = ''): string {
  const head = JSON.stringify(admitPayload(token, requestId, 'standalone', { parameters: null })).slice(0, -1);
  return `${head.replace('"parameters":null', `"parameters":${parametersJson}`)}${extra}}`;
}

const fields = (body: Json) => ((body['errors'] as Json[] | undefined) ?? []).map((e) => String(e['field']));

describe('Issue 18 item 10: hostile JSON at the authority', () => {
  it('Issue 18 item 10 a prototype key in parameters is refused 400 naming the field, and nothing is held', async () => {
    const cap = await stack.issue([monetaryGrant()]);
    for (const [i, key] of ['__proto__', 'constructor', 'prototype'].entries()) {
      const res = await postRaw(
        '/v1/admissions',
        admitRaw(cap['token'], `proto-${i}`, `{"city":"Oslo","nested":{"${key}":{"polluted":true}}}`),
      );
      expect(res.status).toBe(400);
      expect(fields(res.body)).toContain(`parameters.nested.${key}`);
    }
    expect(({} as Json)['polluted']).toBeUndefined();
    expect(await stack.usage(cap['id'])).toMatchObject({ invocation_count: 0 });
    expect(await stack.events(cap['id'])).toEqual([]);
  });

  it('Issue 18 item 10 a prototype key anywhere in a body is refused 400 naming it, over HTTP and over NATS', async () => {
    const res = await postRaw(
      '/v1/capabilities',
      `{"subject_public_key":"x","ttl_seconds":60,"grants":[{"__proto__":{"admin":true},"server_id":"a","tool_name":"b"}]}`,
      adminHeaders(),
    );
    expect(res.status).toBe(400);
    expect(fields(res.body)).toContain('grants.0.__proto__');
    const cap = await stack.issue([monetaryGrant()]);
    const payload = JSON.parse(admitRaw(cap['token'], 'nats-proto', '{"constructor":{"prototype":1}}')) as Json;
    const reply = await stack.send('admit', payload, stack.nextCommandId('proto'));
    expect(reply.ok).toBe(false);
    expect(((reply as { error: Json }).error['errors'] as Json[]).map((e) => e['field'])).toContain(
      'parameters.constructor',
    );
    expect(await stack.usage(cap['id'])).toMatchObject({ invocation_count: 0 });
  });

  it('Issue 18 item 10 a duplicate key counts once, its last value, and parameters_hash is over that value', async () => {
    const cap = await stack.issue([monetaryGrant()]);
    const last = { city: 'Bergen' };
    const first = { city: 'Oslo' };
    const dup = '{"city":"Oslo","city":"Bergen"}';
    const agreeing = await postRaw(
      '/v1/admissions',
      admitRaw(cap['token'], 'dup-last', dup, `,"parameters_hash":"${sha256(last)}"`),
    );
    expect(agreeing.status).toBe(200);
    expect(agreeing.body['verdict']).toBe('allow');
    const disagreeing = await postRaw(
      '/v1/admissions',
      admitRaw(cap['token'], 'dup-first', dup, `,"parameters_hash":"${sha256(first)}"`),
    );
    expect(disagreeing.status).toBe(400);
    expect(fields(disagreeing.body)).toContain('parameters_hash');
    // Sent without a hash, the hold (and its admission proof) is bound to the hash of the value that counted.
    const unhashed = await postRaw('/v1/admissions', admitRaw(cap['token'], 'dup-unhashed', dup));
    expect(unhashed.status).toBe(200);
    expect((unhashed.body['admission_proof'] as Json)['claims']).toMatchObject({ parameters_hash: sha256(last) });
  });

  it('Issue 18 item 10 nesting past the bound is refused 400 at any depth the body limit allows, never a 500', async () => {
    const cap = await stack.issue([monetaryGrant()]);
    for (const depth of [65, 10_000, 200_000]) {
      const nested = '['.repeat(depth) + ']'.repeat(depth);
      const res = await postRaw('/v1/admissions', admitRaw(cap['token'], `deep-${depth}`, `{"a":${nested}}`));
      expect(res.status).toBe(400);
      expect(String((res.body['errors'] as Json[])[0]!['message'])).toMatch(/deeper than (32|64) levels/);
    }
    const top = '['.repeat(300_000) + ']'.repeat(300_000);
    const whole = await postRaw('/v1/capabilities', top, adminHeaders());
    expect(whole.status).toBe(400);
    expect(fields(whole.body)).toEqual([expect.stringMatching(/^(0\.){63}0$/)]);
    expect(await stack.usage(cap['id'])).toMatchObject({ invocation_count: 0 });
    expect((await stack.http('GET', '/v1/keys')).status).toBe(200);
  });

  it('Issue 18 item 10 a huge array in parameters is hashed as sent (the hash the agent computes) and admitted', async () => {
    const cap = await stack.issue([monetaryGrant()]);
    const items = Array.from({ length: 150_000 }, (_, i) => i % 10);
    const res = await postRaw(
      '/v1/admissions',
      admitRaw(cap['token'], 'huge', JSON.stringify({ items }), `,"parameters_hash":"${sha256({ items })}"`),
    );
    expect(res.status).toBe(200);
    expect(res.body['verdict']).toBe('allow');
    const wide = Object.fromEntries(Array.from({ length: 40_000 }, (_, i) => [`k${i}`, i]));
    const res2 = await postRaw(
      '/v1/admissions',
      admitRaw(cap['token'], 'wide', JSON.stringify(wide), `,"parameters_hash":"${sha256(wide)}"`),
    );
    expect(res2.status).toBe(200);
  });
});
