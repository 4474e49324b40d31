// JetStream suite: raw client publishes and replay, then the event store doing the same
// work, in one run on one private namespace. Each event-store row names its raw twin,
// so the ratio shows what the store's encoding, validation and bookkeeping cost.
import { performance } from 'node:perf_hooks';
import { DeliverPolicy, jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/nats-core';
import { EventRegistry, Headers, tallyNames, type EventMessage, type TallyNames } from '@tally/contracts';
import { connectNats, ensureStream, JetStreamEventStore } from '@tally/platform-jetstream';
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

/** Runs `op` count times, one at a time, timing each. */
async function sequential(count: number, op: (i: number) => Promise<unknown>): Promise<Timed> {
  const latenciesMs: number[] = [];
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    await op(i);
    latenciesMs.push(performance.now() - t);
  }
  return { opsPerSecond: count / ((performance.now() - started) / 1000), latenciesMs: latenciesMs.sort((a, b) => a - b) };
}

/** Runs `lanes` independent sequential loops at once, `perLane` operations each. */
async function lanes(laneCount: number, perLane: number, op: (lane: number, i: number) => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await Promise.all(
    Array.from({ length: laneCount }, async (_, lane) => {
      for (let i = 0; i < perLane; i++) await op(lane, i);
    }),
  );
  return (laneCount * perLane) / ((performance.now() - started) / 1000);
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
  return js.publish(subject, data, { msgID, expect: { lastSubjectSequence: expected }, headers: hdrs, timeout: 10_000 });
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
    const nc = await connectNats({ url: ctx.natsUrl, name: 'bench-jetstream', connectTimeoutMs: 5000, maxReconnectAttempts: 10, reconnectTimeWaitMs: 200 });
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const names = tallyNames(`bench${Date.now().toString(36)}`);
    try {
      await ensureStream(jsm, {
        name: names.workEventsStream,
        subjects: [names.workEventsWildcard],
        retention: 'limits',
        storage: 'file',
        replicas: 1,
        duplicateWindowMs: 120_000,
        maxAgeMs: 0,
        maxBytes: 1024 * 1024 * 1024,
        maxMsgSizeBytes: 1024 * 1024,
        denyDelete: false,
        denyPurge: false,
      });
      return await measure(ctx, js, jsm, names);
    } finally {
      await jsm.streams.delete(names.workEventsStream).catch(() => undefined);
      await nc.drain();
    }
  },
};

async function measure(ctx: BenchContext, js: JetStreamClient, jsm: Awaited<ReturnType<typeof jetstreamManager>>, names: TallyNames): Promise<BenchRow[]> {
  const store = new JetStreamEventStore(js, jsm, { stream: names.workEventsStream, registry, publishTimeoutMs: 10_000, loadEventsMax: 1_000_000, loadIdleTimeoutMs: 5000 });
  const seqCount = Math.max(50, Math.round(3000 * ctx.scale));
  const perLane = Math.max(4, Math.round(60 * ctx.scale));
  const pipelined = IN_FLIGHT * perLane;
  const payload = registry.encode(benchEvent('raw', 0));
  const subject = (name: string) => names.workEventSubject(name);
  const rows: BenchRow[] = [];

  ctx.log(`jetstream: raw publish, ${seqCount} sequential and ${pipelined} with ${IN_FLIGHT} in flight`);
  const rawSeq = await sequential(seqCount, (i) => js.publish(subject('raw-plain'), payload, { msgID: `plain-${i}`, timeout: 10_000 }));
  rows.push(...seqRows('raw publish sequential', rawSeq, undefined, 'await each ack'));
  const rawWindow = await lanes(IN_FLIGHT, perLane, (lane, i) => js.publish(subject('raw-window'), payload, { msgID: `window-${lane}-${i}`, timeout: 10_000 }));
  rows.push({ suite: SUITE, case: `raw publish ${IN_FLIGHT} in flight`, metric: 'ops/s', value: rawWindow, baselineCase: 'raw publish sequential' });

  ctx.log('jetstream: raw OCC publish (Nats-Expected-Last-Subject-Sequence)');
  let last = 0;
  const rawOcc = await sequential(seqCount, async (i) => (last = (await rawOccPublish(js, subject('raw-occ'), payload, `occ-${i}`, last)).seq));
  rows.push(...seqRows('raw OCC publish sequential', rawOcc, 'raw publish sequential', 'msg id + expected last subject seq'));
  const lastByLane = new Array<number>(SUBJECTS).fill(0);
  const rawOccPipe = await lanes(SUBJECTS, perLane, async (lane, i) => {
    lastByLane[lane] = (await rawOccPublish(js, subject(`raw-occ-${lane}`), payload, `occp-${lane}-${i}`, lastByLane[lane]!)).seq;
  });
  rows.push({ suite: SUITE, case: `raw OCC pipelined ${SUBJECTS} subjects`, metric: 'ops/s', value: rawOccPipe, baselineCase: `raw publish ${IN_FLIGHT} in flight`, note: 'one in flight per subject' });

  ctx.log('jetstream: event store append');
  let expected = 0;
  const storeSeq = await sequential(seqCount, async (i) => (expected = (await store.append(subject('store-seq'), [benchEvent('store-seq', i)], expected)).lastSequence));
  rows.push(...seqRows('store append sequential', storeSeq, 'raw OCC publish sequential', 'encode + validate + OCC'));
  const expectedByLane = new Array<number>(SUBJECTS).fill(0);
  const storePipe = await lanes(SUBJECTS, perLane, async (lane, i) => {
    const agg = `store-p${lane}`;
    expectedByLane[lane] = (await store.append(subject(agg), [benchEvent(agg, i)], expectedByLane[lane]!)).lastSequence;
  });
  rows.push({ suite: SUITE, case: `store append pipelined ${SUBJECTS} aggregates`, metric: 'ops/s', value: storePipe, baselineCase: `raw OCC pipelined ${SUBJECTS} subjects`, note: 'one in flight per aggregate' });

  ctx.log(`jetstream: replay of ${seqCount} events`);
  const rawReplay = await replayRaw(js, names.workEventsStream, subject('raw-occ'), seqCount);
  rows.push({ suite: SUITE, case: 'raw ordered-consumer replay', metric: 'events/s', value: rawReplay, note: 'JSON.parse only' });
  const loadStarted = performance.now();
  const loaded = await store.load(subject('store-seq'));
  if (loaded.events.length !== seqCount) throw new Error(`store load returned ${loaded.events.length} events, expected ${seqCount}`);
  const storeLoad = seqCount / ((performance.now() - loadStarted) / 1000);
  rows.push({ suite: SUITE, case: 'store load', metric: 'events/s', value: storeLoad, baselineCase: 'raw ordered-consumer replay', note: 'decode + validate + upcast' });

  rows.push(...(await smallLoads(store, subject)));
  return rows;
}

/** decide-and-append loads small aggregates; its latency matters more than replay speed. */
async function smallLoads(store: JetStreamEventStore, subject: (name: string) => string): Promise<BenchRow[]> {
  const small = subject('store-p0');
  const timed = await sequential(300, () => store.load(small));
  return [
    { suite: SUITE, case: 'store load small aggregate', metric: 'p50 ms', value: percentile(timed.latenciesMs, 50), note: 'whole aggregate of the pipelined run' },
    { suite: SUITE, case: 'store load small aggregate', metric: 'p99 ms', value: percentile(timed.latenciesMs, 99) },
  ];
}
