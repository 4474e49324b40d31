// JetStream suite: raw client publishes and replay, then the event store doing the same
// work, in one run on one private namespace. Each event-store row names its raw twin,
// so the ratio shows what the store's encoding, validation and bookkeeping cost.
import { testEventStreamSpec } from '@tally/testing';
import { performance } from 'node:perf_hooks';
import { DeliverPolicy, jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/nats-core';
import { EventRegistry, Headers, tallyNames, type EventMessage, type TallyNames } from '@tally/contracts';
import { connectNats, DIRECT_READ_EVENTS_MAX, ensureStream, JetStreamEventStore } from '@tally/platform-jetstream';
import { IsInt, IsString, Length, Min } from 'class-validator';
import { percentile, type BenchContext, type BenchRow, type BenchSuite } from './lib.js';

const SUITE = 'jetstream';
const IN_FLIGHT = 256;
const SUBJECTS = 256;

/** A payload shaped like a real budget event: ids, an amount and a currency. */
class BenchCharged {
  @IsString() @Length(1, 64) capability_id!: string;
  @IsString() @Length(1, 64) invocation_id!: string;
  @IsInt() @Min(0) amount_minor!: number;
  @IsString() @Length(3, 3) currency!: string;
}

const registry = new EventRegistry([{ type: 'BenchCharged', version: 1, payload: BenchCharged }]);

function benchEvent(aggregate: string, i: number): Omit<EventMessage, 'schemaVersion'> {
  return {
    eventId: `${aggregate}-${i}`,
    type: 'BenchCharged',
    aggregateId: aggregate,
    occurredAt: '2026-01-01T00:00:00.000Z',
    payload: { capability_id: aggregate, invocation_id: `inv-${i}`, amount_minor: 1000 + i, currency: 'USD' },
  };
}

interface Timed {
  readonly opsPerSecond: number;
  readonly latenciesMs: number[];
}

/**
 * Runs several sequential operations turn by turn (a, b, c, a, b, c, …), timing each.
 * Interleaving puts every contender under the same noise from the rest of the machine,
 * which a 2-core box shared with other work has plenty of.
 */
async function interleaved(count: number, ops: readonly ((i: number) => Promise<unknown>)[]): Promise<Timed[]> {
  // Wall time only: per-operation CPU readings (process.cpuUsage) include GC and helper threads, and
  // swung too much between identical operations to compare.
  const latencies = ops.map(() => [] as number[]);
  for (let i = 0; i < count; i++) {
    for (let k = 0; k < ops.length; k++) {
      const t = performance.now();
      await ops[k]!(i);
      latencies[k]!.push(performance.now() - t);
    }
  }
  return latencies.map((l) => ({
    opsPerSecond: count / (l.reduce((a, b) => a + b, 0) / 1000),
    latenciesMs: l.sort((a, b) => a - b),
  }));
}

/** Runs `laneCount` independent sequential loops at once, `perLane` operations each; returns ops/s. */
async function lanes(
  laneCount: number,
  perLane: number,
  op: (lane: number, i: number) => Promise<unknown>,
): Promise<number> {
  const started = performance.now();
  await Promise.all(
    Array.from({ length: laneCount }, async (_, lane) => {
      for (let i = 0; i < perLane; i++) await op(lane, i);
    }),
  );
  return (laneCount * perLane) / ((performance.now() - started) / 1000);
}

/** Alternates whole runs of each contender for `rounds` rounds; returns each one's median. */
async function alternating(rounds: number, runs: readonly ((round: number) => Promise<number>)[]): Promise<number[]> {
  const results = runs.map(() => [] as number[]);
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < runs.length; k++) results[k]!.push(await runs[k]!(round));
  }
  return results.map((r) => r.sort((a, b) => a - b)[Math.floor(r.length / 2)]!);
}

function seqRows(name: string, timed: Timed, baselineCase: string | undefined, note: string): BenchRow[] {
  const base = baselineCase === undefined ? {} : { baselineCase };
  return [
    { suite: SUITE, case: name, metric: 'ops/s', value: timed.opsPerSecond, ...base, note },
    { suite: SUITE, case: name, metric: 'p50 ms', value: percentile(timed.latenciesMs, 50), ...base },
    { suite: SUITE, case: name, metric: 'p99 ms', value: percentile(timed.latenciesMs, 99), ...base },
  ];
}

/** The headers the event store sets, so raw twins pay for the same bytes on the wire. */
function rawOccPublish(js: JetStreamClient, subject: string, data: Uint8Array, msgID: string, expected: number) {
  const hdrs = natsHeaders();
  hdrs.set(Headers.eventType, 'BenchCharged');
  return js.publish(subject, data, {
    msgID,
    expect: { lastSubjectSequence: expected },
    headers: hdrs,
    timeout: 10_000,
  });
}

async function replayRaw(js: JetStreamClient, stream: string, subject: string, count: number): Promise<number> {
  const started = performance.now();
  const consumer = await js.consumers.get(stream, { filter_subjects: subject, deliver_policy: DeliverPolicy.All });
  const messages = await consumer.consume({ max_messages: 512, idle_heartbeat: 5000 });
  let seen = 0;
  for await (const msg of messages) {
    JSON.parse(new TextDecoder().decode(msg.data));
    if (++seen >= count) break;
  }
  await messages.close();
  return count / ((performance.now() - started) / 1000);
}

export const jetstreamSuite: BenchSuite = {
  name: SUITE,
  async run(ctx: BenchContext): Promise<BenchRow[]> {
    const nc = await connectNats({
      url: ctx.natsUrl,
      name: 'bench-jetstream',
      connectTimeoutMs: 5000,
      maxReconnectAttempts: 10,
      reconnectTimeWaitMs: 200,
    });
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const names = tallyNames(`bench${Date.now().toString(36)}`);
    try {
      await ensureStream(
        jsm,
        testEventStreamSpec(names.workEventsStream, [names.workEventsWildcard], 1024 * 1024 * 1024, false),
      );
      return await measure(ctx, js, jsm, names);
    } finally {
      await jsm.streams.delete(names.workEventsStream).catch(() => undefined);
      await nc.drain();
    }
  },
};

type Jsm = Awaited<ReturnType<typeof jetstreamManager>>;

async function measure(ctx: BenchContext, js: JetStreamClient, jsm: Jsm, names: TallyNames): Promise<BenchRow[]> {
  const storeOptions = {
    stream: names.workEventsStream,
    registry,
    publishTimeoutMs: 10_000,
    loadEventsMax: 1_000_000,
    loadIdleTimeoutMs: 5000,
  };
  const store = new JetStreamEventStore(js, jsm, storeOptions);
  const seqCount = Math.max(50, Math.round(2000 * ctx.scale));
  const perLane = Math.max(4, Math.round(8 * ctx.scale));
  // Short runs, many rounds, the median: pipelined throughput is CPU-bound and swings with whatever else the machine runs.
  const rounds = 9;
  const payload = registry.encode(benchEvent('raw', 0));
  const subject = (name: string) => names.workEventSubject(name);
  const rows: BenchRow[] = [];

  ctx.log('jetstream: warm-up');
  let warm = 0;
  await interleaved(200, [
    (i) => js.publish(subject('warm-raw'), payload, { msgID: `warm-${i}`, timeout: 10_000 }),
    async (i) => (warm = (await store.append(subject('warm-store'), [benchEvent('warm-store', i)], warm)).lastSequence),
  ]);

  ctx.log(
    `jetstream: sequential, ${seqCount} each of raw publish, raw OCC publish (bare and with encode) and store append, interleaved`,
  );
  let rawLast = 0;
  let encodedLast = 0;
  let storeLast = 0;
  const [rawSeq, rawOcc, rawEncoded, storeSeq] = await interleaved(seqCount, [
    (i) => js.publish(subject('raw-plain'), payload, { msgID: `plain-${i}`, timeout: 10_000 }),
    async (i) => (rawLast = (await rawOccPublish(js, subject('raw-occ'), payload, `occ-${i}`, rawLast)).seq),
    // Diagnostic: the raw twin plus the registry's encode, to show what the rest of the store costs.
    async (i) =>
      (encodedLast = (
        await rawOccPublish(js, subject('raw-enc'), registry.encode(benchEvent('raw-enc', i)), `enc-${i}`, encodedLast)
      ).seq),
    async (i) =>
      (storeLast = (await store.append(subject('store-seq'), [benchEvent('store-seq', i)], storeLast)).lastSequence),
  ]);
  rows.push(...seqRows('raw publish sequential', rawSeq!, undefined, 'await each ack'));
  rows.push(
    ...seqRows('raw OCC publish sequential', rawOcc!, 'raw publish sequential', 'msg id + expected last subject seq'),
  );
  rows.push(
    ...seqRows(
      'raw OCC + registry.encode sequential',
      rawEncoded!,
      'raw OCC publish sequential',
      'diagnostic: encode cost alone',
    ),
  );
  rows.push(...seqRows('store append sequential', storeSeq!, 'raw OCC publish sequential', 'encode + validate + OCC'));

  ctx.log(`jetstream: pipelined, ${rounds} alternating rounds of ${IN_FLIGHT * perLane} each`);
  const rawByLane = new Array<number>(SUBJECTS).fill(0);
  const storeByLane = new Array<number>(SUBJECTS).fill(0);
  const [rawWindow, rawOccPipe, storePipe] = await alternating(rounds, [
    (round) =>
      lanes(IN_FLIGHT, perLane, (lane, i) =>
        js.publish(subject('raw-window'), payload, { msgID: `window-${round}-${lane}-${i}`, timeout: 10_000 }),
      ),
    (round) =>
      lanes(SUBJECTS, perLane, async (lane, i) => {
        rawByLane[lane] = (
          await rawOccPublish(js, subject(`raw-occ-${lane}`), payload, `occp-${round}-${lane}-${i}`, rawByLane[lane]!)
        ).seq;
      }),
    (round) =>
      lanes(SUBJECTS, perLane, async (lane, i) => {
        const agg = `store-p${lane}`;
        storeByLane[lane] = (
          await store.append(subject(agg), [benchEvent(agg, round * perLane + i)], storeByLane[lane]!)
        ).lastSequence;
      }),
  ]);
  rows.push({
    suite: SUITE,
    case: `raw publish ${IN_FLIGHT} in flight`,
    metric: 'ops/s',
    value: rawWindow!,
    baselineCase: 'raw publish sequential',
    note: `median of ${rounds}`,
  });
  rows.push({
    suite: SUITE,
    case: `raw OCC pipelined ${SUBJECTS} subjects`,
    metric: 'ops/s',
    value: rawOccPipe!,
    baselineCase: `raw publish ${IN_FLIGHT} in flight`,
    note: 'one in flight per subject',
  });
  rows.push({
    suite: SUITE,
    case: `store append pipelined ${SUBJECTS} aggregates`,
    metric: 'ops/s',
    value: storePipe!,
    baselineCase: `raw OCC pipelined ${SUBJECTS} subjects`,
    note: 'one in flight per aggregate',
  });

  ctx.log(`jetstream: replay of ${seqCount} events, ${rounds} alternating rounds`);
  const [rawReplay, storeLoad] = await alternating(rounds, [
    () => replayRaw(js, names.workEventsStream, subject('raw-occ'), seqCount),
    async () => {
      const started = performance.now();
      const loaded = await store.load(subject('store-seq'));
      if (loaded.events.length !== seqCount)
        throw new Error(`store load returned ${loaded.events.length} events, expected ${seqCount}`);
      return seqCount / ((performance.now() - started) / 1000);
    },
  ]);
  rows.push({
    suite: SUITE,
    case: 'raw ordered-consumer replay',
    metric: 'events/s',
    value: rawReplay!,
    note: 'JSON.parse only',
  });
  rows.push({
    suite: SUITE,
    case: 'store load',
    metric: 'events/s',
    value: storeLoad!,
    baselineCase: 'raw ordered-consumer replay',
    note: 'decode + validate + upcast',
  });

  rows.push(...(await smallLoads(ctx, js, jsm, storeOptions, subject('catchup'))));
  return rows;
}

/**
 * decide-and-append reloads an aggregate before every decision, and a cached state
 * only needs the events after it, so small catch-ups dominate: the default store
 * (direct gets for a gap of at most DIRECT_READ_EVENTS_MAX) against the ordered consumer.
 */
async function smallLoads(
  ctx: BenchContext,
  js: JetStreamClient,
  jsm: Jsm,
  storeOptions: ConstructorParameters<typeof JetStreamEventStore>[2],
  subject: string,
): Promise<BenchRow[]> {
  const direct = new JetStreamEventStore(js, jsm, storeOptions);
  const ordered = new JetStreamEventStore(js, jsm, { ...storeOptions, directReadEventsMax: 0 });
  const sequences: number[] = [];
  for (let i = 0; i < 8; i++)
    sequences.push((await direct.append(subject, [benchEvent('catchup', i)], sequences.at(-1) ?? 0)).lastSequence);
  const count = Math.max(20, Math.round(150 * ctx.scale));
  const rows: BenchRow[] = [];
  for (const events of [1, DIRECT_READ_EVENTS_MAX]) {
    ctx.log(`jetstream: ${count} catch-up loads of ${events} event(s), direct get and ordered consumer interleaved`);
    const after = sequences[sequences.length - 1 - events]!;
    const [viaDirect, viaOrdered] = await interleaved(count, [
      () => direct.load(subject, after),
      () => ordered.load(subject, after),
    ]);
    const orderedCase = `store load catch-up ${events}, ordered consumer`;
    const directCase = `store load catch-up ${events}, direct get`;
    rows.push(
      {
        suite: SUITE,
        case: orderedCase,
        metric: 'p50 ms',
        value: percentile(viaOrdered!.latenciesMs, 50),
        note: 'directReadEventsMax: 0',
      },
      { suite: SUITE, case: orderedCase, metric: 'p99 ms', value: percentile(viaOrdered!.latenciesMs, 99) },
      {
        suite: SUITE,
        case: directCase,
        metric: 'p50 ms',
        value: percentile(viaDirect!.latenciesMs, 50),
        baselineCase: orderedCase,
        note: `default (first ${DIRECT_READ_EVENTS_MAX} messages by direct get)`,
      },
      {
        suite: SUITE,
        case: directCase,
        metric: 'p99 ms',
        value: percentile(viaDirect!.latenciesMs, 99),
        baselineCase: orderedCase,
      },
    );
  }
  return rows;
}
