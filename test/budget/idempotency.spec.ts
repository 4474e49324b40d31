// Issue 8, item 4: Stripe-style Idempotency-Key on every authority endpoint that takes one,
// against real authority processes sharing one namespace. A key is scoped to the tenant (an
// agent's to its capability) and the endpoint; the same request again gets the same answer,
// another request under the key is a 409 idempotency_conflict naming it, and the records are
// shared by the replicas (a JetStream KV bucket, ADR 0023).
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { admitPayload, AuthorityStack, monetaryGrant, newSubjectKey, type Json } from './support/authority-stack.js';

let stack: AuthorityStack;
beforeAll(async () => {
  stack = await AuthorityStack.create('bidem', { faultInjection: false });
  await stack.start();
  await stack.start();
}, 240_000);
afterAll(async () => stack?.dispose(), 60_000);

const uniqueKey = (label: string) => `${label}-${randomBytes(6).toString('hex')}`;

/** One call to one replica (0 or 1), as `bearer` (an operator key or a capability token). */
async function call(
  replica: number,
  method: string,
  path: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${stack.processes[replica]!.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Json) : {} };
}

/** A tenant of its own with an issuer key. */
async function issuerOf(tenant: string): Promise<string> {
  const created = await stack.http('POST', '/v1/tenants', { id: tenant });
  expect([201, 409]).toContain(created.status);
  const key = await stack.ok('POST', `/v1/tenants/${tenant}/keys`, { role: 'issuer' });
  return String(key['key']);
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const keyed = (key: string, auth: Record<string, string>) => ({ ...auth, 'idempotency-key': key });

const issueBody = (subject = newSubjectKey()) => ({
  subject_public_key: subject,
  ttl_seconds: 3600,
  grants: [monetaryGrant()],
});

function expectConflict(res: { status: number; body: Json }, key: string): void {
  expect(res.status).toBe(409);
  expect(res.body['type']).toBe('idempotency_conflict');
  expect(JSON.stringify(res.body)).toContain(key);
  expect(res.body['errors']).toEqual([expect.objectContaining({ field: 'Idempotency-Key' })]);
}

describe('Issue 8: Idempotency-Key', () => {
  let issuerA: string;
  let issuerA2: string;
  let issuerB: string;
  beforeAll(async () => {
    const tenant = `idem-${randomBytes(3).toString('hex')}`;
    issuerA = await issuerOf(`${tenant}-a`);
    issuerA2 = String((await stack.ok('POST', `/v1/tenants/${tenant}-a/keys`, { role: 'issuer' }))['key']);
    issuerB = await issuerOf(`${tenant}-b`);
  }, 60_000);

  it('Issue 8: POST /v1/capabilities with the same key and body gives the same capability on either replica; another body is a 409 naming the key', async () => {
    const key = uniqueKey('cap');
    const body = issueBody();
    const first = await call(0, 'POST', '/v1/capabilities', body, keyed(key, bearer(issuerA)));
    const again = await call(1, 'POST', '/v1/capabilities', body, keyed(key, bearer(issuerA)));
    expect([first.status, again.status]).toEqual([201, 201]);
    expect(again.body['id']).toBe(first.body['id']);
    expect(again.body['token']).toBe(first.body['token']);
    expectConflict(await call(1, 'POST', '/v1/capabilities', issueBody(), keyed(key, bearer(issuerA))), key);
  });

  it("Issue 8: a second caller reusing a key on POST /v1/capabilities gets a 409, never a token for the first caller's capability; another tenant's same key does not collide", async () => {
    const key = uniqueKey('steal');
    const body = issueBody();
    const first = await call(0, 'POST', '/v1/capabilities', body, keyed(key, bearer(issuerA)));
    expect(first.status).toBe(201);
    // The same tenant's other issuer, with the very same body: not the first caller's token.
    const sameTenant = await call(0, 'POST', '/v1/capabilities', body, keyed(key, bearer(issuerA2)));
    expectConflict(sameTenant, key);
    expect(JSON.stringify(sameTenant.body)).not.toContain(String(first.body['token']));
    // Another tenant's issuer with the same key and body: a capability of its own.
    const otherTenant = await call(1, 'POST', '/v1/capabilities', body, keyed(key, bearer(issuerB)));
    expect(otherTenant.status).toBe(201);
    expect(otherTenant.body['id']).not.toBe(first.body['id']);
    expect(otherTenant.body['token']).not.toBe(first.body['token']);
  });

  it('Issue 8: POST /v1/admissions: the same key and body is the same admission (counted once), another body a 409, and another agent may use the key', async () => {
    const capA = await stack.issue([monetaryGrant()]);
    const capB = await stack.issue([monetaryGrant()]);
    const key = uniqueKey('admit');
    const body = admitPayload(capA['token'], `r-${key}`, 'standalone');
    const first = await call(0, 'POST', '/v1/admissions', body, { 'idempotency-key': key });
    const again = await call(1, 'POST', '/v1/admissions', body, { 'idempotency-key': key });
    expect([first.status, again.status]).toEqual([200, 200]);
    expect(first.body['verdict']).toBe('allow');
    expect(again.body).toEqual(first.body);
    const other = admitPayload(capA['token'], `r2-${key}`, 'standalone');
    expectConflict(await call(1, 'POST', '/v1/admissions', other, { 'idempotency-key': key }), key);
    // Another capability's agent picking the same key gets its own admission.
    const theirs = await call(0, 'POST', '/v1/admissions', admitPayload(capB['token'], `r-${key}`, 'standalone'), {
      'idempotency-key': key,
    });
    expect(theirs.status).toBe(200);
    expect(theirs.body['hold_id']).not.toBe(first.body['hold_id']);
    expect((await stack.usage(capA['id']))['invocation_count']).toBe(1);
    expect((await stack.usage(capB['id']))['invocation_count']).toBe(1);
  });

  it('Issue 8: a refused body does not use up a key: the valid request after it runs', async () => {
    const cap = await stack.issue([monetaryGrant()]);
    const key = uniqueKey('bad');
    const bad = await call(
      0,
      'POST',
      '/v1/admissions',
      { ...admitPayload(cap['token'], `r-${key}`, 'standalone'), requested_cost: -1 },
      {
        'idempotency-key': key,
      },
    );
    // A negative cost is an integer outside the amounts: 422 (ADR 0044).
    expect(bad.status).toBe(422);
    const good = await call(0, 'POST', '/v1/admissions', admitPayload(cap['token'], `r-${key}`, 'standalone'), {
      'idempotency-key': key,
    });
    expect(good.status).toBe(200);
    expect(good.body['verdict']).toBe('allow');
  });

  it('Issue 8: POST /v1/holds/{id}/increase and POST /v1/settlements: the same key and body the same receipt, another body a 409', async () => {
    const cap = await stack.issue([monetaryGrant({ max_cost_per_invocation: 100, max_total_cost_units: 1000 })]);
    const admitted = await stack.ok(
      'POST',
      '/v1/admissions',
      admitPayload(cap['token'], `r-${uniqueKey('s')}`, 'standalone', { requested_cost: 10 }),
    );
    expect(admitted['verdict']).toBe('allow');
    const holdId = String(admitted['hold_id']);
    const proof = admitted['admission_proof'];
    const admin = {};

    const incKey = uniqueKey('inc');
    const inc = { amount_units: 5, admission_proof: proof };
    const inc1 = await call(0, 'POST', `/v1/holds/${holdId}/increase`, inc, keyed(incKey, admin));
    const inc2 = await call(1, 'POST', `/v1/holds/${holdId}/increase`, inc, keyed(incKey, admin));
    expect([inc1.status, inc2.status]).toEqual([200, 200]);
    expect(inc2.body).toEqual(inc1.body);
    expectConflict(
      await call(0, 'POST', `/v1/holds/${holdId}/increase`, { ...inc, amount_units: 6 }, keyed(incKey, admin)),
      incKey,
    );

    const setKey = uniqueKey('settle');
    const settle = {
      hold_id: holdId,
      admission_proof: proof,
      outcome: { kind: 'completed', cost_units: 12, currency: 'USD' },
    };
    const s1 = await call(1, 'POST', '/v1/settlements', settle, keyed(setKey, admin));
    const s2 = await call(0, 'POST', '/v1/settlements', settle, keyed(setKey, admin));
    expect([s1.status, s2.status]).toEqual([200, 200]);
    expect(s2.body['receipt']['id']).toBe(s1.body['receipt']['id']);
    const otherOutcome = { ...settle, outcome: { kind: 'completed', cost_units: 13, currency: 'USD' } };
    expectConflict(await call(1, 'POST', '/v1/settlements', otherOutcome, keyed(setKey, admin)), setKey);
  });
});
