// Proves that the ledger projection, which runs in a worker thread of the authority
// (ADR 0008), survives that thread being killed in the middle of a stream of Admits and
// Settles: the service restarts the thread, reads still see their own writes, and the
// rows equal those of a clean rebuild (exactly-once across the kill).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { admitPayload, AuthorityStack, eventually, monetaryGrant, type Json } from './support/authority-stack.js';
import { compareWithLive, liveDatabase, rebuildIntoEmptyDatabase, waitForLiveCheckpoint } from './support/replay.js';

let stack: AuthorityStack;
beforeAll(async () => {
  stack = await AuthorityStack.create('pthread');
  await stack.start();
}, 180_000);
afterAll(async () => stack?.dispose(), 60_000);

const ADMITS = 60;
const COST = 10;

async function readiness(): Promise<{ status: number; projections: Json }> {
  const res = await fetch(`${stack.metricsUrl}/readyz`);
  const body = (await res.json()) as Json;
  return { status: res.status, projections: body['checks']['projections'] };
}

describe('projections in a worker thread', () => {
  it('a projection thread killed mid-stream is restarted; usage, receipts and the digest equal a clean rebuild', async () => {
    expect((await readiness()).projections['details']).toMatchObject({
      worker_thread: true,
      leader: true,
      thread_restarts: 0,
    });
    const cap = await stack.issue([
      monetaryGrant({ max_cost_per_invocation: COST, max_total_cost_units: ADMITS * COST }),
    ]);
    const pairs = Array.from({ length: ADMITS }, async (_, i) => {
      const admit = await stack.admit(
        admitPayload(cap['token'], `pthread-${i}`, 'standalone', { requested_cost: COST }),
      );
      expect(admit['verdict']).toBe('allow');
      return stack.settle({
        hold_id: admit['hold_id'],
        outcome: { kind: 'completed', cost_units: COST, currency: 'USD' },
      });
    });
    // The kill lands while the pairs are being appended and projected.
    await new Promise((r) => setTimeout(r, 150));
    await stack.faults({ kill_projection_thread: true });
    await Promise.all(pairs);

    const ready = await eventually(
      readiness,
      (r) =>
        r.status === 200 &&
        r.projections['details']['thread_restarts'] >= 1 &&
        r.projections['details']['leader'] === true,
      60_000,
      'projection thread restarted',
    );
    expect(ready.projections['details']).toMatchObject({ worker_thread: true, leader: true });
    const usage = await eventually(
      () => stack.usage(cap['id']),
      (u) => u['invocation_count'] === ADMITS,
      60_000,
      'usage after the restart',
    );
    expect(usage['committed_cost_units']).toBe(ADMITS * COST);

    const live = await liveDatabase(stack);
    const replayed = await rebuildIntoEmptyDatabase(stack);
    try {
      await waitForLiveCheckpoint(live, stack.names.budgetEventsStream, replayed.checkpoint, 60_000);
      expect(await compareWithLive(live, replayed.dataSource)).toMatchObject({
        usageEqual: true,
        receiptsEqual: true,
        digestEqual: true,
      });
    } finally {
      await replayed.dispose();
      await live.destroy();
    }
  });
});
