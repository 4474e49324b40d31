// Issue 8 against a real authority: capabilities belong to a tenant (reads scoped in the
// query, another tenant's resource the same 404 as a missing one), and a settlement or an
// increase must prove its right to the hold (its admission proof, the admitting capability's
// token, or an issuer of its tenant) over HTTP and over NATS; anything else is answered
// like an unknown hold and never applied.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { AuthorityStack, admitPayload, monetaryGrant, newSubjectKey, type Json } from './support/authority-stack.js';

jest.setTimeout(240_000);

describe('Issue 8: tenants own capabilities, and settlements prove their right to the hold', () => {
  let stack: AuthorityStack;
  const tenantA = `ta-${randomBytes(3).toString('hex')}`;
  const tenantB = `tb-${randomBytes(3).toString('hex')}`;
  const keys: Record<string, string> = {};
  const as = (key: string) => ({ authorization: `Bearer ${key}` });

  beforeAll(async () => {
    stack = await AuthorityStack.create('tenant-settle');
    await stack.start();
    for (const tenant of [tenantA, tenantB]) {
      expect((await stack.http('POST', '/v1/tenants', { id: tenant })).status).toBe(201);
      for (const role of ['issuer', 'reader']) {
        const res = await stack.http('POST', `/v1/tenants/${tenant}/keys`, { role });
        expect(res.status).toBe(201);
        keys[`${tenant}:${role}`] = res.body['key'] as string;
      }
    }
  });

  afterAll(async () => {
    await stack?.dispose();
  });

  const issueAs = async (key: string, extra: Json = {}) => {
    const res = await stack.http(
      'POST',
      '/v1/capabilities',
      { subject_public_key: newSubjectKey(), ttl_seconds: 3600, grants: [monetaryGrant()], ...extra },
      as(key),
    );
    expect(res.status).toBe(201);
    return res.body;
  };

  const admitOver = async (token: string, requestId: string) => {
    const res = await stack.http(
      'POST',
      '/v1/admissions',
      admitPayload(token, requestId, 'standalone', { requested_cost: 30 }),
    );
    expect(res.status).toBe(200);
    expect(res.body['verdict']).toBe('allow');
    return res.body;
  };

  const holdStatus = async (capabilityId: string, holdId: string) => {
    const holds = (await stack.ok('GET', `/v1/capabilities/${capabilityId}/holds`))['holds'] as Json[];
    return holds.find((h) => h['hold_id'] === holdId)?.['status'];
  };

  it('Issue 8: a capability belongs to its issuer tenant; every read of another tenant is the 404 of a missing one, scoped in the query', async () => {
    const cap = await issueAs(keys[`${tenantA}:issuer`]!);
    expect(cap['tenant_id']).toBe(tenantA);
    const admitted = await admitOver(cap['token'], `scope-${randomBytes(3).toString('hex')}`);
    const missing = `cap_${randomBytes(12).toString('hex')}`;
    const receiptId = (admitted['receipt'] as Json)['id'] as string;
    for (const path of ['', '/usage', '/events', '/holds', '/ambiguities']) {
      const own = await stack.http(
        'GET',
        `/v1/capabilities/${cap['id']}${path}`,
        undefined,
        as(keys[`${tenantA}:reader`]!),
      );
      expect(own.status).toBe(200);
      const other = await stack.http(
        'GET',
        `/v1/capabilities/${cap['id']}${path}`,
        undefined,
        as(keys[`${tenantB}:issuer`]!),
      );
      const absent = await stack.http(
        'GET',
        `/v1/capabilities/${missing}${path}`,
        undefined,
        as(keys[`${tenantB}:issuer`]!),
      );
      expect(other.status).toBe(404);
      expect(absent.status).toBe(404);
      expect({ ...other.body, title: undefined }).toEqual({ ...absent.body, title: undefined });
      expect(JSON.stringify(other.body).replace(cap['id'], missing)).toEqual(JSON.stringify(absent.body));
    }
    const ownReceipt = await stack.http(
      'GET',
      `/v1/receipts/${encodeURIComponent(receiptId)}`,
      undefined,
      as(keys[`${tenantA}:reader`]!),
    );
    expect(ownReceipt.status).toBe(200);
    const otherReceipt = await stack.http(
      'GET',
      `/v1/receipts/${encodeURIComponent(receiptId)}`,
      undefined,
      as(keys[`${tenantB}:reader`]!),
    );
    expect(otherReceipt.status).toBe(404);
    const listB = await stack.http(
      'GET',
      `/v1/receipts?capability_id=${cap['id']}`,
      undefined,
      as(keys[`${tenantB}:reader`]!),
    );
    expect(listB.body['receipts']).toEqual([]);
    const listA = await stack.http(
      'GET',
      `/v1/receipts?capability_id=${cap['id']}`,
      undefined,
      as(keys[`${tenantA}:reader`]!),
    );
    expect((listA.body['receipts'] as Json[]).length).toBeGreaterThan(0);
    const byRequest = await stack.http(
      'GET',
      `/v1/receipts?request_id=${encodeURIComponent((admitted['receipt'] as Json)['request_id'] as string)}`,
      undefined,
      as(keys[`${tenantB}:reader`]!),
    );
    expect(byRequest.body['receipts']).toEqual([]);
    // The console's lists across capabilities are scoped the same way.
    const listed = async (path: string, key: string, field: string) =>
      ((await stack.http('GET', path, undefined, as(key))).body[field] as Json[]).map(
        (r) => r['id'] ?? r['capability_id'],
      );
    expect(await listed('/v1/capabilities?limit=1000', keys[`${tenantA}:reader`]!, 'capabilities')).toContain(
      cap['id'],
    );
    expect(await listed('/v1/capabilities?limit=1000', keys[`${tenantB}:reader`]!, 'capabilities')).not.toContain(
      cap['id'],
    );
    expect(await listed('/v1/holds?limit=1000', keys[`${tenantA}:reader`]!, 'holds')).toContain(cap['id']);
    expect(await listed('/v1/holds?limit=1000', keys[`${tenantB}:reader`]!, 'holds')).not.toContain(cap['id']);
    // The admin reads every tenant.
    expect((await stack.http('GET', `/v1/capabilities/${cap['id']}`)).body['tenant_id']).toBe(tenantA);
  });

  it('Issue 8: an admin may name tenant_id at issue, an issuer issues only in its own tenant, and delegation and revocation by an issuer stay in the tenant', async () => {
    const named = await stack.ok('POST', '/v1/capabilities', {
      subject_public_key: newSubjectKey(),
      ttl_seconds: 3600,
      grants: [monetaryGrant()],
      tenant_id: tenantB,
    });
    expect(named['tenant_id']).toBe(tenantB);
    expect(
      (await stack.http('GET', `/v1/capabilities/${named['id']}`, undefined, as(keys[`${tenantB}:reader`]!))).status,
    ).toBe(200);
    expect(
      (await stack.http('GET', `/v1/capabilities/${named['id']}`, undefined, as(keys[`${tenantA}:reader`]!))).status,
    ).toBe(404);
    const unnamed = await stack.issue([monetaryGrant()]);
    expect(unnamed['tenant_id']).toBe('default');
    const unknownTenant = await stack.http('POST', '/v1/capabilities', {
      subject_public_key: newSubjectKey(),
      ttl_seconds: 3600,
      grants: [monetaryGrant()],
      tenant_id: 'no-such-tenant',
    });
    expect(unknownTenant.status).toBe(404);
    const elsewhere = await stack.http(
      'POST',
      '/v1/capabilities',
      { subject_public_key: newSubjectKey(), ttl_seconds: 3600, grants: [monetaryGrant()], tenant_id: tenantB },
      as(keys[`${tenantA}:issuer`]!),
    );
    expect(elsewhere.status).toBe(403);

    // A delegation belongs to its parent's tenant; an issuer of another tenant cannot delegate or revoke it.
    const child = await stack.http(
      'POST',
      '/v1/capabilities',
      {
        subject_public_key: newSubjectKey(),
        ttl_seconds: 600,
        grants: [monetaryGrant({ max_total_cost_units: 100 })],
        parent_id: named['id'],
        parent_token: named['token'],
      },
      { authorization: '' },
    );
    expect(child.status).toBe(201);
    expect(child.body['tenant_id']).toBe(tenantB);
    const foreignDelegation = await stack.http(
      'POST',
      '/v1/capabilities',
      { subject_public_key: newSubjectKey(), ttl_seconds: 600, grants: [monetaryGrant()], parent_id: named['id'] },
      as(keys[`${tenantA}:issuer`]!),
    );
    expect(foreignDelegation.status).toBe(404);
    const foreignRevoke = await stack.http(
      'POST',
      `/v1/capabilities/${named['id']}/revoke`,
      {},
      as(keys[`${tenantA}:issuer`]!),
    );
    expect(foreignRevoke.status).toBe(404);
    const ownRevoke = await stack.http(
      'POST',
      `/v1/capabilities/${child.body['id']}/revoke`,
      {},
      as(keys[`${tenantB}:issuer`]!),
    );
    expect(ownRevoke.status).toBe(200);
  });

  it('Issue 8: an HTTP settlement needs the hold admission proof or an issuer of its tenant; a capability token alone is refused, another tenant or proof is the 404 of an unknown hold, and nothing changes', async () => {
    const cap = await issueAs(keys[`${tenantA}:issuer`]!);
    const other = await issueAs(keys[`${tenantA}:issuer`]!);
    const first = await admitOver(cap['token'], `http-1-${randomBytes(3).toString('hex')}`);
    const second = await admitOver(cap['token'], `http-2-${randomBytes(3).toString('hex')}`);
    const elsewhere = await admitOver(other['token'], `http-3-${randomBytes(3).toString('hex')}`);
    const holdId = first['hold_id'] as string;
    const outcome = { kind: 'completed', cost_units: 7, currency: 'USD' };
    const unknownHold = `budget-hold:nothing-${randomBytes(3).toString('hex')}:${cap['id']}:0`;
    const missing = await stack.http('POST', '/v1/settlements', { hold_id: unknownHold, outcome });
    expect(missing.status).toBe(404);
    const proof = first['admission_proof'] as Json;
    const forged = { ...proof, claims: { ...(proof['claims'] as Json), capture_commit_index: 999 } };
    const refused: [string, Json, Record<string, string>][] = [
      ['an issuer of another tenant', { hold_id: holdId, outcome }, as(keys[`${tenantB}:issuer`]!)],
      [
        "another hold's proof",
        { hold_id: holdId, outcome, admission_proof: elsewhere['admission_proof'] },
        { authorization: '' },
      ],
      ['an edited proof', { hold_id: holdId, outcome, admission_proof: forged }, { authorization: '' }],
    ];
    for (const [who, body, headers] of refused) {
      const res = await stack.http('POST', '/v1/settlements', body, headers);
      expect([who, res.status]).toEqual([who, 404]);
      expect({ ...res.body, title: undefined }).toEqual({ ...missing.body, title: undefined });
      expect(JSON.stringify(res.body).replace(holdId, unknownHold)).toEqual(JSON.stringify(missing.body));
    }
    const reader = await stack.http(
      'POST',
      '/v1/settlements',
      { hold_id: holdId, outcome },
      as(keys[`${tenantA}:reader`]!),
    );
    expect(reader.status).toBe(403);
    const anonymous = await stack.http('POST', '/v1/settlements', { hold_id: holdId, outcome }, { authorization: '' });
    expect(anonymous.status).toBe(401);
    const increase = await stack.http(
      'POST',
      `/v1/holds/${encodeURIComponent(holdId)}/increase`,
      { amount_units: 5 },
      as(keys[`${tenantB}:issuer`]!),
    );
    expect(increase.status).toBe(404);
    // Nothing was applied: the hold is still open, at its admitted exposure.
    expect(await holdStatus(cap['id'], holdId)).toBe('admitted');

    // The capability's own token, or another's, as bearer or in the body: not a proof of the hold.
    for (const [bearer, body] of [
      [cap['token'], { hold_id: holdId, outcome }],
      [other['token'], { hold_id: holdId, outcome }],
      [cap['token'], { hold_id: holdId, outcome, token: cap['token'] }],
    ] as const) {
      const res = await stack.http('POST', '/v1/settlements', body, { authorization: `Bearer ${bearer}` });
      expect(res.status).toBe(403);
    }
    expect(await holdStatus(cap['id'], holdId)).toBe('admitted');
    const byOwnProof = await stack.http(
      'POST',
      '/v1/settlements',
      { hold_id: holdId, outcome, admission_proof: proof },
      { authorization: `Bearer ${cap['token']}` },
    );
    expect(byOwnProof.status).toBe(200);
    expect(byOwnProof.body['receipt']).toMatchObject({ verdict: 'allow', hold_id: holdId, capability_id: cap['id'] });
    const byIssuer = await stack.http(
      'POST',
      '/v1/settlements',
      { hold_id: second['hold_id'], outcome },
      as(keys[`${tenantA}:issuer`]!),
    );
    expect(byIssuer.status).toBe(200);
    expect(byIssuer.body['receipt']['verdict']).toBe('allow');
    const byProof = await stack.http(
      'POST',
      '/v1/settlements',
      { hold_id: elsewhere['hold_id'], outcome, admission_proof: elsewhere['admission_proof'] },
      { authorization: '' },
    );
    expect(byProof.status).toBe(200);
    expect((await stack.usage(cap['id']))['realized_cost_units']).toBe(14);
  });

  it('Issue 8: a Settle over NATS without a proof of the hold, with another hold proof or another capability token is answered like an unknown hold and never applied, and cannot pre-empt the owner command id', async () => {
    const cap = await issueAs(keys[`${tenantA}:issuer`]!);
    const other = await issueAs(keys[`${tenantB}:issuer`]!);
    const admitted = await stack.admit(
      admitPayload(cap['token'], `nats-1-${randomBytes(3).toString('hex')}`, 'standalone', { requested_cost: 30 }),
    );
    const foreign = await stack.admit(
      admitPayload(other['token'], `nats-2-${randomBytes(3).toString('hex')}`, 'standalone', { requested_cost: 30 }),
    );
    const holdId = admitted['hold_id'] as string;
    const outcome = { kind: 'completed', cost_units: 9, currency: 'USD' };
    const unknown = await stack.settle({
      hold_id: `budget-hold:nothing-${randomBytes(3).toString('hex')}:${cap['id']}:0`,
      outcome,
      admission_proof: null,
    });
    const shape = (r: Json) => ({
      ...r,
      id: undefined,
      command_id: undefined,
      hold_id: undefined,
      issued_at: undefined,
      signature: undefined,
      chain_index: undefined,
      prev_hash: undefined,
      metadata: undefined,
    });
    expect(unknown['receipt']).toMatchObject({ verdict: 'deny', reason: 'hold is unknown', capability_id: null });
    const ownerCommandId = `owner-settle-${randomBytes(4).toString('hex')}`;
    const attempts: Json[] = [
      { hold_id: holdId, outcome, admission_proof: null },
      { hold_id: holdId, outcome, admission_proof: foreign['admission_proof'] },
      { hold_id: holdId, outcome, token: other['token'] },
      { hold_id: holdId, outcome, token: 'c1.garbage.garbage' },
    ];
    for (const [i, payload] of attempts.entries()) {
      // The first refused attempt uses the command id the owner will use: it must not take it.
      const answer = await stack.settle(payload, i === 0 ? ownerCommandId : stack.nextCommandId('refused'));
      expect(shape(answer['receipt'])).toEqual(shape(unknown['receipt']));
    }
    expect(await holdStatus(cap['id'], holdId)).toBe('admitted');
    expect((await stack.usage(cap['id']))['realized_cost_units']).toBe(0);

    const settled = await stack.settle({ hold_id: holdId, outcome, token: cap['token'] }, ownerCommandId);
    expect(settled['receipt']).toMatchObject({ verdict: 'allow', capability_id: cap['id'], hold_id: holdId });
    expect(await holdStatus(cap['id'], holdId)).toBe('settled');
    // The foreign hold, settled with its own proof.
    const own = await stack.settle({ hold_id: foreign['hold_id'], outcome });
    expect(own['receipt']['verdict']).toBe('allow');
  });
});

describe('Issue 8: the durable JetStream command path', () => {
  let durable: AuthorityStack;
  beforeAll(async () => {
    durable = await AuthorityStack.create('tenant-settle-js', { env: { TALLY__NATS__BUDGET_COMMANDS: 'jetstream' } });
    await durable.start();
  }, 180_000);
  afterAll(async () => {
    await durable?.dispose();
  });

  it('Issue 8: a durable Settle command without the right to the hold is answered like an unknown hold and never applied; with the proof it settles', async () => {
    expect(durable.durableCommands).toBe(true);
    const cap = await durable.issue([monetaryGrant()]);
    const other = await durable.issue([monetaryGrant()]);
    const admitted = await durable.admit(
      admitPayload(cap['token'], `js-1-${randomBytes(3).toString('hex')}`, 'standalone', { requested_cost: 30 }),
    );
    const holdId = admitted['hold_id'] as string;
    const outcome = { kind: 'completed', cost_units: 4, currency: 'USD' };
    for (const payload of [
      { hold_id: holdId, outcome, admission_proof: null },
      { hold_id: holdId, outcome, token: other['token'] },
    ]) {
      const answer = await durable.settle(payload);
      expect(answer['receipt']).toMatchObject({ verdict: 'deny', reason: 'hold is unknown', capability_id: null });
    }
    expect((await durable.usage(cap['id']))['realized_cost_units']).toBe(0);
    const settled = await durable.settle({ hold_id: holdId, outcome });
    expect(settled['receipt']).toMatchObject({ verdict: 'allow', capability_id: cap['id'] });
  });
});
