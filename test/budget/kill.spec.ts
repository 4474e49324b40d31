// Proves that a crash loses nothing: one of two authority processes is SIGKILLed in the
// middle of an Admit storm. Every command still gets an answer (its caller re-sends the
// same command id, which the survivor answers or finishes from the ledger), no hold is
// captured twice, the tree's limits hold (B19), and with a short hold TTL no reservation
// outlives it (B20): the survivor's expiry loop reverses them.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { admitPayload, AuthorityStack, eventually, type Json } from './support/authority-stack.js';

const ADMITS = 600;
const COST = 10;
const ALLOWED = 200;
const HOLD_TTL_MS = 2_000;

let stack: AuthorityStack;
beforeAll(async () => {
  stack = await AuthorityStack.create('bkill', {
    // A command in flight on the killed replica gets no reply: its caller re-sends after this.
    commandTimeoutMs: 5_000,
    commandAttemptsMax: 24,
    env: {
      TALLY__AUTHORITY__HOLD_TTL_MS: String(HOLD_TTL_MS),
      TALLY__AUTHORITY__EXPIRY_INTERVAL_MS: '250',
    },
  });
  await Promise.all([stack.start(), stack.start()]);
}, 240_000);
afterAll(async () => stack?.dispose(), 120_000);

describe('crash of one replica mid-storm', () => {
  it('B19 B20 SIGKILL of one authority mid-storm: every command answered, nothing double-captured, limits held, no hold leaks past its TTL', async () => {
    const grant = {
      server_id: 'cost-srv',
      tool_name: 'compute',
      max_cost_per_invocation: COST,
      max_total_cost_units: ALLOWED * COST,
      currency: 'USD',
    };
    const cap = await stack.issue([grant]);
    let answered = 0;
    const storm = Array.from({ length: ADMITS }, (_, i) =>
      stack.admit(admitPayload(cap['token'], `kill-${i}`, 'standalone')).then((a) => {
        answered++;
        return a;
      }),
    );
    await eventually(
      async () => answered,
      (n) => n >= ADMITS / 10,
      120_000,
      'storm under way',
    );
    await stack.processes[0]!.stop('SIGKILL');
    const answers = await Promise.all(storm);
    expect(answers).toHaveLength(ADMITS);
    const allowed = answers.filter((a) => a['verdict'] === 'allow');
    expect(allowed.length).toBeLessThanOrEqual(ALLOWED);
    expect(allowed.length).toBeGreaterThan(0);

    // No hold outlives its TTL: the survivor's expiry loop reverses whatever the killed replica left authorized.
    await eventually(
      async () => (await stack.ok('GET', `/v1/capabilities/${cap['id']}/holds?status=authorized`))['holds'] as Json[],
      (holds) => holds.length === 0,
      120_000,
      'no authorized hold left',
    );
    const events = await stack.events(cap['id'], 0, 1_000);
    const captures = new Map<string, number>();
    for (const e of events.filter((x) => x['kind'] === 'capture_invocation'))
      captures.set(e['hold_id'], (captures.get(e['hold_id']) ?? 0) + 1);
    expect([...captures.values()].every((n) => n === 1)).toBe(true);
    for (const a of allowed) expect(captures.get(a['hold_id'])).toBe(1);
    // Captured holds whose Admit the killed replica never answered stay counted (fail closed); nothing else does.
    const usage = await stack.usage(cap['id']);
    expect(usage['invocation_count']).toBeGreaterThanOrEqual(allowed.length);
    expect(usage['invocation_count']).toBeLessThanOrEqual(captures.size);
    expect(usage['committed_cost_units']).toBeLessThanOrEqual(ALLOWED * COST);

    const settled = await Promise.all(
      allowed.map((a) =>
        stack.settle({ hold_id: a['hold_id'], outcome: { kind: 'completed', cost_units: 4, currency: 'USD' } }),
      ),
    );
    expect(settled.every((s) => s['receipt']['settlement'] === 'completed')).toBe(true);
    const after = await eventually(
      () => stack.usage(cap['id']),
      (u) => (u['realized_cost_units'] as number) === allowed.length * 4,
      120_000,
      'settled usage',
    );
    expect(after['committed_cost_units']).toBeLessThanOrEqual(ALLOWED * COST);
  }, 900_000);
});
