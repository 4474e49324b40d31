// Admit latency against the real nats-server: one 3-event commit against three chained
// single-event appends, sequential Admits on one tree (p50/p99 and appends per Admit),
// then many concurrent Admits on one tree across two authority processes (wall time). Run: node --import ./tools/register.mjs bench/admit-latency.ts
// ADMITS_SEQUENTIAL and ADMITS_CONCURRENT size the two phases. It reports; it asserts nothing.
import { performance } from 'node:perf_hooks';
import type { EventMessage } from '@tally/contracts';
import type { AppendResult, EventStore, LoadResult } from '@tally/eventing';
import { AuthorityFixture, MONETARY } from '../libs/budget/application/test/authority.fixture.js';
import { percentile } from './lib.js';

/** Counts appends (round trips that write) and the events they carry. */
class CountingStore implements EventStore {
  appends = 0;
  events = 0;
  constructor(private readonly inner: EventStore) {}
  append(
    subject: string,
    events: readonly Omit<EventMessage, 'schemaVersion'>[],
    expectedSequence: number,
  ): Promise<AppendResult> {
    this.appends++;
    this.events += events.length;
    return this.inner.append(subject, events, expectedSequence);
  }
  load(subject: string, afterSequence?: number): Promise<LoadResult> {
    return this.inner.load(subject, afterSequence);
  }
}

const sequentialAdmits = Number(process.env['ADMITS_SEQUENTIAL'] ?? '300');
const concurrentAdmits = Number(process.env['ADMITS_CONCURRENT'] ?? '2000');
const unlimited = { ...MONETARY, max_total_cost_units: 10n ** 15n };

/** The store alone: three events as one commit, against the same three as chained single-event appends. */
async function storeAppends(f: AuthorityFixture): Promise<void> {
  const rounds = 200;
  const commit: number[] = [];
  const chained: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const subject = f.names.budgetEventSubject(`store-${i}`);
    const events = [0, 1, 2].map((n) => ({
      eventId: `store-${i}-${n}`,
      type: 'CapabilityRevoked',
      aggregateId: `store-${i}`,
      occurredAt: new Date().toISOString(),
      payload: { capability_id: `store-${i}`, revoked_ids: [`store-${i}`], at_ms: n },
    }));
    let t0 = performance.now();
    const one = await f.store.append(subject, events, 0);
    commit.push(performance.now() - t0);
    t0 = performance.now();
    let expected = one.lastSequence;
    for (const event of events)
      expected = (await f.store.append(subject, [{ ...event, eventId: `${event.eventId}-single` }], expected))
        .lastSequence;
    chained.push(performance.now() - t0);
  }
  for (const list of [commit, chained]) list.sort((a, b) => a - b);
  console.log(
    `store: 3-event commit p50 ${percentile(commit, 50).toFixed(2)} ms p99 ${percentile(commit, 99).toFixed(2)} ms; 3 single appends p50 ${percentile(chained, 50).toFixed(2)} ms p99 ${percentile(chained, 99).toFixed(2)} ms`,
  );
}

async function sequential(f: AuthorityFixture): Promise<void> {
  const counting = new CountingStore(f.store);
  const authority = f.newAuthority({ store: counting });
  const cap = await f.issue([unlimited]);
  const latencies: number[] = [];
  for (let i = 0; i < sequentialAdmits; i++) {
    const started = performance.now();
    const decision = await authority.admit(f.admitCommand(`seq-${i}`, cap, { requested_cost: 10n }));
    latencies.push(performance.now() - started);
    if (decision.verdict !== 'allow') throw new Error(`sequential admit ${i} denied: ${decision.reason}`);
  }
  latencies.sort((a, b) => a - b);
  const perAdmit = (n: number) => (n / sequentialAdmits).toFixed(2);
  console.log(
    `sequential: ${sequentialAdmits} admits, p50 ${percentile(latencies, 50).toFixed(2)} ms, p99 ${percentile(latencies, 99).toFixed(2)} ms, appends/admit ${perAdmit(counting.appends)}, events/admit ${perAdmit(counting.events)}`,
  );
}

async function concurrent(f: AuthorityFixture): Promise<void> {
  const cap = await f.issue([unlimited]);
  const authorities = [f.newAuthority(), f.newAuthority()];
  const latencies: number[] = [];
  const started = performance.now();
  const verdicts = await Promise.all(
    Array.from({ length: concurrentAdmits }, async (_, i) => {
      const t0 = performance.now();
      const decision = await authorities[i % 2]!.admit(f.admitCommand(`con-${i}`, cap, { requested_cost: 10n }));
      latencies.push(performance.now() - t0);
      return decision.verdict;
    }),
  );
  const wallMs = performance.now() - started;
  latencies.sort((a, b) => a - b);
  const allowed = verdicts.filter((v) => v === 'allow').length;
  console.log(
    `concurrent: ${concurrentAdmits} admits on one tree, two processes: wall ${(wallMs / 1000).toFixed(2)} s, ${(concurrentAdmits / (wallMs / 1000)).toFixed(0)} admits/s, allowed ${allowed}, p50 ${percentile(latencies, 50).toFixed(0)} ms, p99 ${percentile(latencies, 99).toFixed(0)} ms`,
  );
}

const f = await AuthorityFixture.start({ limits: { appendAttemptsMax: 1_000, queueWaitingMax: 100_000 } });
try {
  await storeAppends(f);
  await sequential(f);
  await concurrent(f);
} finally {
  await f.dispose();
}
