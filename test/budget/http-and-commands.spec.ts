// Proves the budget-authority's public surface: every http-api.md endpoint in OpenAPI 3.1,
// problem+json naming the bad fields (dead-lettered with the capability token redacted, no
// state change) over HTTP and over JetStream commands, command-id idempotency, money beyond 2^53-1 as decimal strings,
// revocation of descendants, and the boot rules of the test-only fault injection.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ServiceProcess } from '@tally/testing';
import {
  admitPayload,
  AuthorityStack,
  eventually,
  monetaryGrant,
  newSubjectKey,
  type Json,
} from './support/authority-stack.js';

let stack: AuthorityStack;
beforeAll(async () => {
  stack = await AuthorityStack.create('bhttp');
  await stack.start();
}, 180_000);
afterAll(async () => stack?.dispose(), 60_000);

/** ADR 0007: a dead letter keeps the token's sha256 fingerprint, never the token. */
function expectTokenRedacted(letter: Json, token: string): void {
  const body = Buffer.from(String(letter['data_base64']), 'base64').toString();
  expect(JSON.stringify(letter)).not.toContain(token);
  expect(JSON.parse(body)['token']).toBe(`[redacted sha256:${createHash('sha256').update(token).digest('base64url')}]`);
  expect(letter['redacted']).toEqual(['$.token']);
}

describe('HTTP API and commands', () => {
  it('serves OpenAPI 3.1 with every budget-authority endpoint of http-api.md', async () => {
    const doc = await stack.ok('GET', '/openapi.json');
    expect(doc['openapi']).toBe('3.1.0');
    const paths = doc['paths'] as Json;
    for (const [path, method] of [
      ['/v1/capabilities', 'post'],
      ['/v1/capabilities/{id}/revoke', 'post'],
      ['/v1/capabilities/{id}/usage', 'get'],
      ['/v1/capabilities/{id}/events', 'get'],
      ['/v1/admissions', 'post'],
      ['/v1/settlements', 'post'],
      ['/v1/receipts/{id}', 'get'],
      ['/v1/keys', 'get'],
    ] as const) {
      expect(paths[path]?.[method]).toBeDefined();
    }
  });

  it('invalid HTTP input is a problem+json naming each field, is dead-lettered, and changes nothing', async () => {
    const cap = await stack.issue([monetaryGrant()]);
    const res = await stack.http('POST', '/v1/admissions', {
      request_id: '',
      token: cap['token'],
      server_id: 'cost-srv',
      tool_name: 'compute',
      requested_cost: -5,
      extra: 1,
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(res.body).toMatchObject({ type: 'validation', status: 400 });
    const fields = (res.body['errors'] as Json[]).map((e) => e['field']);
    expect(fields).toEqual(expect.arrayContaining(['request_id', 'requested_cost', 'extra']));
    const settle = await stack.http('POST', '/v1/settlements', { hold_id: 'x', outcome: { kind: 'completed' } });
    expect(settle.status).toBe(400);
    expect((settle.body['errors'] as Json[]).map((e) => e['field'])).toEqual(['outcome.cost_units']);
    const letters = await eventually(
      () => stack.deadLetters(),
      (l) => l.filter((d) => String(d['source']).startsWith('http-')).length >= 2,
      30_000,
      'http dead letters',
    );
    const admission = letters.find(
      (d) => d['reason'] === 'validation_failed' && String(d['detail']).includes('/v1/admissions'),
    )!;
    expect(admission).toBeDefined();
    expectTokenRedacted(admission, String(cap['token']));
    expect(await stack.usage(cap['id'])).toMatchObject({ invocation_count: 0, committed_cost_units: 0 });
    expect(await stack.events(cap['id'])).toEqual([]);
  });

  it('an invalid Admit command is answered with the bad fields and dead-lettered; nothing is appended', async () => {
    const cap = await stack.issue([monetaryGrant()]);
    const reply = await stack.send(
      'admit',
      { ...admitPayload(cap['token'], 'bad-1', 'standalone'), requested_cost: 1.5, context: { kind: 'session' } },
      stack.nextCommandId('bad'),
    );
    expect(reply.ok).toBe(false);
    const error = (reply as { error: Json }).error;
    expect(error['type']).toBe('validation');
    expect((error['errors'] as Json[]).map((e) => e['field'])).toEqual(expect.arrayContaining(['requested_cost']));
    const session = await stack.send(
      'admit',
      { ...admitPayload(cap['token'], 'bad-2', 'standalone'), context: { kind: 'session' } },
      stack.nextCommandId('bad'),
    );
    expect((session as { error: Json }).error['errors']).toEqual([
      { field: 'context.session_id', message: 'session_id is required when kind is session' },
    ]);
    const letters = await eventually(
      () => stack.deadLetters(),
      (l) =>
        l.filter((d) => d['reason'] === 'validation_failed' && !String(d['source']).startsWith('http-')).length >= 2,
      30_000,
      'command dead letters',
    );
    for (const letter of letters.filter((d) =>
      Buffer.from(String(d['data_base64']), 'base64').toString().includes('bad-'),
    ))
      expectTokenRedacted(letter, String(cap['token']));
    expect(await stack.events(cap['id'])).toEqual([]);
  });

  it('a repeated command id gets the original answer and changes nothing (over JetStream and with an HTTP Idempotency-Key)', async () => {
    const cap = await stack.issue([monetaryGrant()]);
    const commandId = stack.nextCommandId('same');
    const first = await stack.admit(admitPayload(cap['token'], 'idem-1', 'standalone'), commandId);
    const again = await stack.admit(admitPayload(cap['token'], 'idem-1', 'standalone'), commandId);
    expect(again).toEqual(first);
    const viaHttp = await stack.ok('POST', '/v1/admissions', admitPayload(cap['token'], 'idem-2', 'standalone'));
    const key = { 'idempotency-key': 'idem-key-2' };
    const a = await stack.http('POST', '/v1/admissions', admitPayload(cap['token'], 'idem-3', 'standalone'), key);
    const b = await stack.http('POST', '/v1/admissions', admitPayload(cap['token'], 'idem-3', 'standalone'), key);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(b.body).toEqual(a.body);
    expect(viaHttp['verdict']).toBe('allow');
    expect((await stack.usage(cap['id']))['invocation_count']).toBe(3);
  });

  it('money above 2^53-1 travels as a decimal string and is kept exactly', async () => {
    const big = '9007199254740993';
    const cap = await stack.issue([
      {
        server_id: 'cost-srv',
        tool_name: 'compute',
        max_cost_per_invocation: big,
        max_total_cost_units: '90071992547409930',
        currency: 'USD',
      },
    ]);
    expect(cap['grants'][0]['max_cost_per_invocation']).toBe(big);
    const admitted = await stack.admit(admitPayload(cap['token'], 'big-1', 'standalone', { requested_cost: big }));
    expect(admitted['verdict']).toBe('allow');
    expect(await stack.usage(cap['id'])).toMatchObject({ exposed_cost_units: big, committed_cost_units: big });
    await stack.settle({
      hold_id: admitted['hold_id'],
      outcome: { kind: 'completed', cost_units: '9007199254740992', currency: 'USD' },
    });
    expect(
      await eventually(
        () => stack.usage(cap['id']),
        (u) => u['realized_cost_units'] !== 0,
      ),
    ).toMatchObject({ exposed_cost_units: 0, realized_cost_units: '9007199254740992' });
  });

  it('delegation only narrows; revoking a capability revokes its descendants, and admits on them are denied', async () => {
    const root = await stack.issue([monetaryGrant()]);
    const wider = await stack.http('POST', '/v1/capabilities', {
      subject_public_key: newSubjectKey(),
      ttl_seconds: 60,
      grants: [monetaryGrant({ max_cost_per_invocation: 500 })],
      parent_id: root['id'],
    });
    expect(wider.status).toBe(422);
    const child = await stack.issue([monetaryGrant({ max_total_cost_units: 500 })], {
      parent_id: root['id'],
      ttl_seconds: 600,
    });
    const grandchild = await stack.issue([monetaryGrant({ max_total_cost_units: 200 })], {
      parent_id: child['id'],
      ttl_seconds: 300,
    });
    const revoked = await stack.ok('POST', `/v1/capabilities/${child['id']}/revoke`);
    expect(revoked['id']).toBe(child['id']);
    expect(revoked['revoked_descendants']).toEqual([grandchild['id']]);
    expect(Date.parse(revoked['revoked_at'])).not.toBeNaN();
    expect((await stack.admit(admitPayload(grandchild['token'], 'revoked-1', 'standalone')))['verdict']).toBe('deny');
    expect((await stack.admit(admitPayload(root['token'], 'root-still-1', 'standalone')))['verdict']).toBe('allow');
    const view = await stack.ok('GET', `/v1/capabilities/${grandchild['id']}`);
    expect(view).toMatchObject({
      parent_id: child['id'],
      root_id: root['id'],
      revoked: true,
      revoked_via: child['id'],
    });
    expect((await stack.http('GET', '/v1/capabilities/cap_unknown/usage')).status).toBe(404);
  });

  it('fault injection is refused at boot unless the payment rail is the simulated one', async () => {
    const refused = await ServiceProcess.start({
      service: 'budget-authority',
      env: { ...stack.env, TALLY_PAYMENT_RAIL: 'acme-pay', TALLY_FAULT_INJECTION: 'true' },
      waitReady: false,
    });
    expect(await refused.waitExit(60_000)).toBe(78);
    expect(refused.logs()).toMatch(/authority\.payment_rail/);
  });
});
