// Proves the spend policy (issue 11) on two real authority replicas over NATS: 1,000 concurrent admissions against
// requests_per_minute and against max_concurrent admit exactly the allowed number, refusals are rate_limited with
// retry_after_ms at the top level; usage shows its period; a delegated grant inherits its parent's reset; and holds
// are raised by increases over HTTP and NATS, each with its own receipt, within hold_cap_units and the bound.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { admitPayload, AuthorityStack, eventually, type Json } from './support/authority-stack.js';

const ADMITS = 1_000;
const GRANT = { server_id: 'cost-srv', tool_name: 'compute', max_cost_per_invocation: 10, currency: 'USD' };

let stack: AuthorityStack;
beforeAll(async () => {
  stack = await AuthorityStack.create('bpolicy', { env: { TALLY__AUTHORITY__HOLD_INCREASES_MAX: '2' } });
  await Promise.all([stack.start(), stack.start()]);
}, 240_000);
afterAll(async () => stack?.dispose(), 120_000);

async function admitAll(token: string, label: string): Promise<Json[]> {
  return Promise.all(
    Array.from({ length: ADMITS }, (_, i) =>
      stack.admit(admitPayload(token, `${label}-${i}`, 'standalone', { requested_cost: 1 })),
    ),
  );
}

describe('spend policy on two replicas (issue 11)', () => {
  it('issue 11 1,000 concurrent admissions against requests_per_minute 100 admit exactly 100; refusals are rate_limited with retry_after_ms', async () => {
    const cap = await stack.issue([{ ...GRANT, rate_limits: { requests_per_minute: 100 } }]);
    const answers = await admitAll(cap['token'], 'rpm');
    expect(answers.filter((a) => a['verdict'] === 'allow')).toHaveLength(100);
    const refused = answers.filter((a) => a['verdict'] === 'deny');
    expect(refused).toHaveLength(ADMITS - 100);
    for (const a of refused) {
      expect(a['reason']).toBe('rate_limited');
      expect(a['retry_after_ms']).toBeGreaterThan(0);
      expect(a['retry_after_ms']).toBeLessThanOrEqual(60_000);
    }
    // Settling frees nothing in a request window: the next admission is still refused.
    const allowed = answers.filter((a) => a['verdict'] === 'allow');
    await Promise.all(
      allowed.map((a) => stack.settle({ hold_id: a['hold_id'], outcome: { kind: 'completed', cost_units: 1 } })),
    );
    const after = await stack.admit(admitPayload(cap['token'], 'rpm-after', 'standalone', { requested_cost: 1 }));
    expect(after).toMatchObject({ verdict: 'deny', reason: 'rate_limited' });
  }, 300_000);

  it('issue 11 1,000 concurrent admissions against max_concurrent 50 admit exactly 50, and a settlement frees one place', async () => {
    const cap = await stack.issue([{ ...GRANT, rate_limits: { max_concurrent: 50 } }]);
    const answers = await admitAll(cap['token'], 'conc');
    const allowed = answers.filter((a) => a['verdict'] === 'allow');
    expect(allowed).toHaveLength(50);
    expect(answers.filter((a) => a['reason'] === 'rate_limited' && a['retry_after_ms'] > 0)).toHaveLength(ADMITS - 50);
    await stack.settle({ hold_id: allowed[0]!['hold_id'], outcome: { kind: 'completed', cost_units: 1 } });
    const next = await stack.admit(admitPayload(cap['token'], 'conc-next', 'standalone', { requested_cost: 1 }));
    expect(next['verdict']).toBe('allow');
    const full = await stack.admit(admitPayload(cap['token'], 'conc-full', 'standalone', { requested_cost: 1 }));
    expect(full).toMatchObject({ verdict: 'deny', reason: 'rate_limited' });
  }, 300_000);

  it('issue 11 usage of a grant with a reset shows its period and that period figures; past periods are queryable; a delegated grant inherits the reset', async () => {
    const reset = { every: 'day', timezone: 'Europe/Berlin' };
    const root = await stack.issue([{ ...GRANT, max_total_cost_units: 100, reset }, GRANT]);
    const child = await stack.issue([{ ...GRANT, max_total_cost_units: 50 }], {
      parent_id: root['id'],
      ttl_seconds: 3000,
    });
    expect((child['grants'] as Json[])[0]!['reset']).toEqual(reset);
    const admitted = await stack.admit(admitPayload(child['token'], 'period-1', 'standalone', { requested_cost: 7 }));
    expect(admitted['verdict']).toBe('allow');
    await stack.settle({ hold_id: admitted['hold_id'], outcome: { kind: 'completed', cost_units: 5 } });
    const usage = await eventually(
      () => stack.ok('GET', `/v1/capabilities/${root['id']}/usage`),
      (u) => (u['grants'] as Json[])[0]!['committed_cost_units'] === 5,
      60_000,
      'period usage',
    );
    const [daily, lifetime] = usage['grants'] as Json[];
    const start = Date.parse(daily!['period_start']);
    const end = Date.parse(daily!['period_end']);
    expect(start <= Date.now() && Date.now() < end).toBe(true);
    expect(end - start).toBeGreaterThanOrEqual(23 * 3_600_000);
    expect(new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Berlin', timeStyle: 'short' }).format(start)).toBe(
      '00:00',
    );
    expect(daily).toMatchObject({ invocation_count: 1, realized_cost_units: 5, exposed_cost_units: 0 });
    expect(lifetime!['period_start']).toBeUndefined();
    const previous = await stack.ok('GET', `/v1/capabilities/${root['id']}/usage?period=previous`);
    expect((previous['grants'] as Json[])[0]).toMatchObject({
      period_end: daily!['period_start'],
      committed_cost_units: 0,
    });
    const atStart = await stack.ok('GET', `/v1/capabilities/${root['id']}/usage?period=${daily!['period_start']}`);
    expect((atStart['grants'] as Json[])[0]).toEqual(daily);
    const bad = await stack.http('GET', `/v1/capabilities/${root['id']}/usage?period=yesterday`);
    expect(bad.status).toBe(400);
  }, 120_000);

  it('issue 11 a hold is raised by increases over HTTP and NATS, each with its own receipt, within hold_cap_units and the configured bound', async () => {
    const cap = await stack.issue([
      { ...GRANT, max_cost_per_invocation: 100, max_total_cost_units: 1000, hold_cap_units: 50 },
    ]);
    const admitted = await stack.admit(admitPayload(cap['token'], 'inc-1', 'standalone', { requested_cost: 10 }));
    expect(admitted).toMatchObject({ verdict: 'allow', hold_units: 10 });
    const holdId = admitted['hold_id'] as string;
    const path = `/v1/holds/${encodeURIComponent(holdId)}/increase`;
    const first = await stack.http(
      'POST',
      path,
      { amount_units: 30, admission_proof: admitted['admission_proof'] },
      {
        authorization: '',
      },
    );
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ verdict: 'allow', hold_units: 40, increase: 1 });
    expect(first.body['receipt']).toMatchObject({ kind: 'increase', verdict: 'allow', hold_id: holdId });
    const overCap = await stack.ok('POST', path, { amount_units: 20 });
    expect(overCap).toMatchObject({ verdict: 'deny' });
    expect(overCap['receipt']['id']).not.toBe(first.body['receipt']['id']);
    const second = await stack.send(
      'increase',
      { hold_id: holdId, amount_units: 10, admission_proof: admitted['admission_proof'] },
      stack.nextCommandId('inc'),
    );
    expect(second.ok && second.value).toMatchObject({ verdict: 'allow', hold_units: 50, increase: 2 });
    const third = await stack.ok('POST', path, { amount_units: 1 });
    expect(third['verdict']).toBe('deny');
    const anonymous = await stack.http('POST', path, { amount_units: 1 }, { authorization: '' });
    expect(anonymous.status).toBe(401);
    const settled = await stack.settle({ hold_id: holdId, outcome: { kind: 'completed', cost_units: 45 } });
    expect(settled['receipt']['verdict']).toBe('allow');
    const usage = await eventually(
      () => stack.usage(cap['id']),
      (u) => u['realized_cost_units'] === 45,
      60_000,
      'settled at the increased hold',
    );
    expect(usage['exposed_cost_units']).toBe(0);
    const events = await stack.events(cap['id']);
    expect(events.filter((e) => e['kind'] === 'increase_exposure')).toHaveLength(2);
  }, 120_000);
});
