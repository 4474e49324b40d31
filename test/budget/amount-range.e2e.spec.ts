// Proves on a real authority (NATS, SQLite or PostgreSQL) that every amount is in [0, 2^63-1] (ADR 0044): a wider one is 422 naming the field and appends nothing, so the projection keeps serving every tenant; 2^63-1 itself is booked exactly; a sum past it is refused with its reason; and the gauges sum trees without overflowing.
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { sharedNatsUrl } from '@tally/testing';
import { admitPayload, AuthorityStack, eventually, newSubjectKey, type Json } from './support/authority-stack.js';

const MAX = '9223372036854775807';
const PAST_MAX = '9223372036854775808';
/** A grant with no total: nothing but the range of an amount bounds a delegation's share or its usage. */
const OPEN = { server_id: 'cost-srv', tool_name: 'compute', max_cost_per_invocation: MAX, currency: 'USD' };

let stack: AuthorityStack;
let acmeIssuer: string;
beforeAll(async () => {
  stack = await AuthorityStack.create('ranges');
  await stack.start();
  expect((await stack.http('POST', '/v1/tenants', { id: 'acme' })).status).toBe(201);
  acmeIssuer = String((await stack.ok('POST', '/v1/tenants/acme/keys', { role: 'issuer' }))['key']);
}, 180_000);
afterAll(async () => stack?.dispose(), 60_000);

/** Messages the budget stream holds: all of them, and those on one tree's subject. */
async function streamCounts(rootId: string): Promise<{ total: number; tree: number }> {
  const nc = await connect({ servers: sharedNatsUrl() });
  try {
    const jsm = await jetstreamManager(nc);
    const subject = stack.names.budgetEventSubject(rootId);
    const info = await jsm.streams.info(stack.names.budgetEventsStream, { subjects_filter: subject });
    return { total: info.state.messages, tree: info.state.subjects?.[subject] ?? 0 };
  } finally {
    await nc.close();
  }
}

const fieldsOf = (body: Json) => (body['errors'] as Json[]).map((e) => e['field']);
const delegation = (parentId: string, share: string | number) => ({
  subject_public_key: newSubjectKey(),
  ttl_seconds: 600,
  grants: [OPEN],
  parent_id: parentId,
  budget_share_units: share,
});

describe('ADR 0044 amounts on every boundary', () => {
  it("B19 a 10^20 budget share is refused as 422 naming the field and dead-lettered; nothing is appended, and another tenant's new capability is readable at once", async () => {
    const root = await stack.issue([OPEN]);
    const before = await streamCounts(root['id']);
    const res = await stack.http('POST', '/v1/capabilities', delegation(root['id'], '100000000000000000000'));
    expect(res.status).toBe(422);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(res.body).toMatchObject({ type: 'amount_out_of_range', status: 422 });
    expect(fieldsOf(res.body)).toEqual(['budget_share_units']);
    expect(await streamCounts(root['id'])).toEqual(before);
    // Refused input is visible to operators, as a 400 is.
    await eventually(
      () => stack.deadLetters(),
      (letters) =>
        letters.some((d) => d['reason'] === 'validation_failed' && String(d['detail']).includes('/v1/capabilities')),
      30_000,
      'the dead letter of the refused delegation',
    );
    // The projection never met an amount it cannot store: another tenant's issue is read back at once.
    const theirs = await fetch(`${stack.url}/v1/capabilities`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${acmeIssuer}` },
      body: JSON.stringify({ subject_public_key: newSubjectKey(), ttl_seconds: 600, grants: [OPEN] }),
    });
    expect(theirs.status).toBe(201);
    const id = String(((await theirs.json()) as Json)['id']);
    const usage = await fetch(`${stack.url}/v1/capabilities/${id}/usage`, {
      headers: { authorization: `Bearer ${acmeIssuer}` },
    });
    expect(usage.status).toBe(200);
    expect(usage.headers.get('tally-projection-stale')).toBeNull();
  });

  it('B19 max_total_cost_units of 2^63 is 422 naming the field; 2^63-1 is issued and answered exactly', async () => {
    const grant = { server_id: 'cost-srv', tool_name: 'compute', currency: 'USD' };
    const wide = await stack.http('POST', '/v1/capabilities', {
      subject_public_key: newSubjectKey(),
      ttl_seconds: 600,
      grants: [{ ...grant, max_total_cost_units: PAST_MAX }],
    });
    expect(wide.status).toBe(422);
    expect(fieldsOf(wide.body)).toEqual(['grants.0.max_total_cost_units']);
    const negative = await stack.http('POST', '/v1/capabilities', {
      subject_public_key: newSubjectKey(),
      ttl_seconds: 600,
      grants: [{ ...grant, max_total_cost_units: -1 }],
    });
    expect([negative.status, fieldsOf(negative.body)]).toEqual([422, ['grants.0.max_total_cost_units']]);
    // Malformed is still 400: leading zeros are not an amount.
    const padded = await stack.http('POST', '/v1/capabilities', {
      subject_public_key: newSubjectKey(),
      ttl_seconds: 600,
      grants: [{ ...grant, max_total_cost_units: '007' }],
    });
    expect([padded.status, padded.body['type']]).toEqual([400, 'validation']);
    const cap = await stack.issue([{ ...grant, max_total_cost_units: MAX }]);
    expect(cap['grants'][0]['max_total_cost_units']).toBe(MAX);
    expect((await stack.ok('GET', `/v1/capabilities/${cap['id']}`))['grants'][0]['max_total_cost_units']).toBe(MAX);
  });

  it("B19 a delegation whose siblings' shares would sum past 2^63-1 is refused with the reason and appends nothing", async () => {
    const root = await stack.issue([OPEN]);
    const first = await stack.http('POST', '/v1/capabilities', delegation(root['id'], MAX));
    expect(first.status).toBe(201);
    const before = await streamCounts(root['id']);
    const second = await stack.http('POST', '/v1/capabilities', delegation(root['id'], 1));
    expect(second.status).toBe(422);
    expect(second.body['type']).toBe('amount_out_of_range');
    expect(String(second.body['title'])).toMatch(
      /^budget_share_units: the siblings' shares would sum to 9223372036854775808, past the largest amount/,
    );
    expect(await streamCounts(root['id'])).toEqual(before);
  });

  it('B19 Admit and Settle over NATS with an amount past 2^63-1 are refused naming the field; a hold that would take usage past it is denied', async () => {
    const cap = await stack.issue([OPEN]);
    const admit = await stack.send(
      'admit',
      admitPayload(cap['token'], 'wide-1', 'standalone', { requested_cost: PAST_MAX }),
      stack.nextCommandId('wide'),
    );
    expect(admit.ok).toBe(false);
    const admitError = (admit as { error: Json }).error;
    expect([admitError['type'], fieldsOf(admitError)]).toEqual(['validation', ['requested_cost']]);
    const full = await stack.admit(admitPayload(cap['token'], 'max-1', 'standalone', { requested_cost: MAX }));
    expect(full['verdict']).toBe('allow');
    expect(await stack.usage(cap['id'])).toMatchObject({ exposed_cost_units: MAX, committed_cost_units: MAX });
    const over = await stack.admit(admitPayload(cap['token'], 'max-2', 'standalone', { requested_cost: 1 }));
    expect(over['verdict']).toBe('deny');
    expect(String(over['reason'])).toMatch(/would reach 9223372036854775808, past the largest amount/);
    for (const cost of [PAST_MAX, '-1', '1'.repeat(30)]) {
      const settle = await stack.send(
        'settle',
        stack.withProof({
          hold_id: full['hold_id'],
          outcome: { kind: 'completed', cost_units: cost, currency: 'USD' },
        }),
        stack.nextCommandId('wide-settle'),
      );
      expect(settle.ok).toBe(false);
      expect(fieldsOf((settle as { error: Json }).error)).toEqual(['outcome.cost_units']);
    }
    expect(await stack.usage(cap['id'])).toMatchObject({ exposed_cost_units: MAX, realized_cost_units: 0 });
  });

  it('B19 two trees each holding 2^63-1 are both counted: the exposure gauge sums past the range of a column without failing the scrape', async () => {
    for (const tree of ['a', 'b']) {
      const cap = await stack.issue([{ ...OPEN, currency: 'EUR' }]);
      const held = await stack.admit(
        admitPayload(cap['token'], `gauge-${tree}`, 'standalone', { requested_cost: MAX }),
      );
      expect(held['verdict']).toBe('allow');
      await eventually(
        () => stack.usage(cap['id']),
        (u) => u['exposed_cost_units'] === MAX,
      );
    }
    const metrics = await fetch(`${stack.metricsUrl}/metrics`);
    expect(metrics.status).toBe(200);
    const line = (await metrics.text()).split('\n').find((l) => l.startsWith('tally_exposure_units{currency="EUR"}'));
    expect(Number(line?.split(' ')[1])).toBeGreaterThan(1.8e19);
  });
});
