// Proves B19 on real NATS with two authority processes: 2,000 concurrent Admits at one
// delegation tree whose budget allows 500 admit exactly 500; settled with random outcomes,
// usage equals the sum of the outcomes on every level of the tree; and a replay of the
// stream into an empty database gives the same usage and the same signed receipts.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { admitPayload, AuthorityStack, eventually, type Json } from './support/authority-stack.js';
import { compareWithLive, liveDatabase, rebuildIntoEmptyDatabase, waitForLiveCheckpoint } from './support/replay.js';

const ADMITS = 2_000;
const COST = 10;
const ALLOWED = 500;

let stack: AuthorityStack;
beforeAll(async () => {
  stack = await AuthorityStack.create('bstress');
  await Promise.all([stack.start(), stack.start()]);
}, 240_000);
afterAll(async () => stack?.dispose(), 120_000);

/** A small deterministic generator, so a failing run can be repeated. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

type Outcome =
  | { kind: 'completed'; cost_units: number; currency: string }
  | { kind: 'failed_after_dispatch'; failure: string }
  | { kind: 'elicitation_required'; message: string }
  | { kind: 'not_dispatched'; reason: string };

function outcomeFor(r: number, cost: number): { outcome: Outcome; invocations: number; committed: number } {
  if (r < 0.55)
    return { outcome: { kind: 'completed', cost_units: cost, currency: 'USD' }, invocations: 1, committed: cost };
  if (r < 0.75)
    return { outcome: { kind: 'failed_after_dispatch', failure: 'generic' }, invocations: 1, committed: COST };
  if (r < 0.9)
    return { outcome: { kind: 'elicitation_required', message: 'needs input' }, invocations: 0, committed: 0 };
  return { outcome: { kind: 'not_dispatched', reason: 'worker stopped' }, invocations: 0, committed: 0 };
}

describe('B19 no overspend under concurrency, two replicas', () => {
  it('B19 2,000 concurrent Admits on one delegation tree allowing 500 admit exactly 500; usage is the sum of settled outcomes on every level; a replay rebuilds the same usage and receipts', async () => {
    const grant = { server_id: 'cost-srv', tool_name: 'compute', max_cost_per_invocation: COST, currency: 'USD' };
    const root = await stack.issue([{ ...grant, max_total_cost_units: ALLOWED * COST }]);
    const share = (ALLOWED / 2) * COST;
    const children = [
      await stack.issue([{ ...grant, max_total_cost_units: share }], {
        parent_id: root['id'],
        budget_share_units: share,
        ttl_seconds: 3000,
      }),
      await stack.issue([{ ...grant, max_total_cost_units: share }], {
        parent_id: root['id'],
        budget_share_units: share,
        ttl_seconds: 3000,
      }),
    ];
    const answers = await Promise.all(
      Array.from({ length: ADMITS }, (_, i) =>
        stack.admit(admitPayload(children[i % 2]!['token'], `stress-${i}`, i % 3 === 0 ? 'session' : 'standalone')),
      ),
    );
    const allowed = answers.filter((a) => a['verdict'] === 'allow');
    expect(allowed).toHaveLength(ALLOWED);
    expect(answers.filter((a) => a['verdict'] === 'deny')).toHaveLength(ADMITS - ALLOWED);
    for (const child of children)
      expect(allowed.filter((a) => (a['hold_id'] as string).includes(child['id'])).length).toBe(ALLOWED / 2);

    const random = prng(19);
    const expected = { invocations: 0, committed: 0 };
    const settles = allowed.map((a) => {
      const planned = outcomeFor(random(), Math.floor(random() * (COST + 1)));
      expected.invocations += planned.invocations;
      expected.committed += planned.committed;
      return stack.settle({ hold_id: a['hold_id'], outcome: planned.outcome });
    });
    const receipts = (await Promise.all(settles)).map((s) => s['receipt'] as Json);
    expect(receipts.filter((r) => r['settlement'] === 'rejected').map((r) => r['reason'])).toEqual([]);

    const rootUsage = await eventually(
      () => stack.usage(root['id']),
      (u) => u['committed_cost_units'] === expected.committed,
      120_000,
      'root usage = sum of outcomes',
    );
    expect(rootUsage['invocation_count']).toBe(expected.invocations);
    const childUsage = await Promise.all(children.map((c) => stack.usage(c['id'])));
    expect(childUsage.reduce((n, u) => n + (u['committed_cost_units'] as number), 0)).toBe(expected.committed);
    for (const u of childUsage) expect(u['committed_cost_units']).toBeLessThanOrEqual(share);

    const live = await liveDatabase(stack);
    const replayed = await rebuildIntoEmptyDatabase(stack);
    try {
      await waitForLiveCheckpoint(live, stack.names.budgetEventsStream, replayed.checkpoint, 120_000);
      const comparison = await compareWithLive(live, replayed.dataSource);
      expect(comparison).toMatchObject({ usageEqual: true, receiptsEqual: true, digestEqual: true });
      expect(comparison.receipts).toBeGreaterThanOrEqual(ADMITS + ALLOWED);
      expect(comparison.resigned).toBe(comparison.receipts);
      // Two authority processes raced on one tree, and every receipt's hash chain still links (issue 12 item 2).
      expect(comparison.linked).toBe(comparison.receipts);
    } finally {
      await replayed.dispose();
      await live.destroy();
    }
  }, 900_000);
});
