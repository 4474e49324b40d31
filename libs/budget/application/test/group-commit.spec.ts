// Proves group commit on real JetStream: concurrent steps on one tree share appends, and
// every Admit still gets its own hold, capture id (with its real authorize commit index) and receipt.
import { afterEach, describe, expect, it } from '@jest/globals';
import type { EventMessage } from '@tally/contracts';
import type { AppendResult, EventStore, LoadResult } from '@tally/eventing';
import { AuthorityFixture, MONETARY, holdOf } from './authority.fixture.js';

class CountingStore implements EventStore {
  appends = 0;
  constructor(private readonly inner: EventStore) {}
  append(
    subject: string,
    events: readonly Omit<EventMessage, 'schemaVersion'>[],
    expectedSequence: number,
  ): Promise<AppendResult> {
    this.appends++;
    return this.inner.append(subject, events, expectedSequence);
  }
  load(subject: string, afterSequence?: number): Promise<LoadResult> {
    return this.inner.load(subject, afterSequence);
  }
}

describe('group commit on one tree', () => {
  let f: AuthorityFixture;
  afterEach(async () => f?.dispose());

  it('B1 B2 concurrent Admits on one tree share commits, and each capture id names its own authorize commit index', async () => {
    f = await AuthorityFixture.start();
    const cap = await f.issue([{ ...MONETARY, max_total_cost_units: 100_000n }]);
    const counting = new CountingStore(f.store);
    const authority = f.newAuthority({ store: counting });
    const admits = 40;
    const decisions = await Promise.all(
      Array.from({ length: admits }, (_, i) =>
        authority.admit(f.admitCommand(`grp-${i}`, cap, { requested_cost: 10n })),
      ),
    );
    expect(decisions.every((d) => d.verdict === 'allow')).toBe(true);
    // Alone, each Admit makes three appends (authorize, capture, allow); grouped, far fewer in all.
    expect(counting.appends).toBeLessThan(3 * admits);
    const state = await f.newAuthority().treeState(cap.root_id);
    for (let i = 0; i < admits; i++) {
      const hold = state.holds.get(holdOf(`grp-${i}`, cap))!;
      expect(hold).toMatchObject({ status: 'captured', admitted: true });
      expect(hold.capture_event_id).toBe(`${hold.hold_id}:capture-invocation:${hold.authorize_commit_index}`);
      expect(hold.capture_commit_index!).toBeGreaterThan(hold.authorize_commit_index);
    }
    expect(await f.usage(cap)).toEqual({ invocations: admits, committed: BigInt(10 * admits) });
    expect(new Set(decisions.map((d) => d.receipt.id)).size).toBe(admits);
  });
});
