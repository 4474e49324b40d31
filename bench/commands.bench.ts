// Command suite: the durable command round trip (client publish → PubAck → delivery →
// reply-cache read → handler → cache write → reply → ack) and the core NATS command of
// ADR 0025 (request → queue-group member → handler → reply) on the local nats-server,
// sequentially and open-loop at half of each one's saturation rate, the operating point
// the Admit latency budget (p99 ≤ 10 ms) is set for. The raw JetStream publish (one PubAck)
// and the raw core NATS request/reply (a responder on its own connection that answers at
// once) are measured in the same run under the same conditions and named as baselines.
import { performance } from 'node:perf_hooks';
import type { NatsConnection, Subscription } from '@nats-io/nats-core';
import { connectNats } from '@tally/platform-jetstream';
import type { CoreCommandClient, JetStreamCommandClient } from '@tally/platform-nest';
import { Harness } from '../libs/platform/nest/test/fixtures.js';
import { percentile, type BenchContext, type BenchRow, type BenchSuite } from './lib.js';

const SUITE = 'commands';
const SEND = { timeoutMs: 10_000, attemptsMax: 1 } as const;
const SATURATION_CALLERS = 64;
const SATURATION_WINDOW_MS = 2_000;
const OPEN_LOOP_WINDOW_MS = 3_000;

type Op = (i: number) => Promise<unknown>;

interface Probe {
  readonly harness: Harness;
  readonly client: JetStreamCommandClient;
  /** The same commands over core NATS request/reply (ADR 0025). */
  readonly core: CoreCommandClient;
  /** The raw core request/reply responder's connection and subject. */
  readonly raw: { readonly nc: NatsConnection; readonly subject: string };
  next: number;
}

/** A core NATS responder on a connection of its own, as a service replica would have: it answers at once. */
async function rawResponder(natsUrl: string, subject: string): Promise<{ nc: NatsConnection; sub: Subscription }> {
  const nc = await connectNats({
    url: natsUrl,
    name: 'bench-raw-responder',
    connectTimeoutMs: 5_000,
    maxReconnectAttempts: 10,
    reconnectTimeWaitMs: 200,
  });
  const reply = Buffer.from(JSON.stringify({ ok: true, value: { pong: true } }));
  const sub = nc.subscribe(subject, { queue: 'bench-raw', callback: (_error, msg) => void msg.respond(reply) });
  await nc.flush();
  return { nc, sub };
}

/** The raw twin of a command over core NATS: one request, one reply, nothing stored. */
function rawRequest(p: Probe): Op {
  const data = Buffer.from(JSON.stringify({}));
  return async () => {
    p.next++;
    await p.harness.nc.request(p.raw.subject, data, { timeout: 10_000 });
  };
}

function command(p: Probe, name: 'ping' | 'append'): Op {
  return async () => {
    const i = p.next++;
    const payload = name === 'ping' ? {} : { account: `acct-${i % 500}`, amount: 1 };
    const answer = await p.client.send('work', name, `bench-${i}`, payload, SEND);
    if (!answer.ok) throw new Error(`command failed: ${JSON.stringify(answer.error)}`);
  };
}

function coreCommand(p: Probe, name: 'ping' | 'append'): Op {
  return async () => {
    const i = p.next++;
    const payload = name === 'ping' ? {} : { account: `acct-${i % 500}`, amount: 1 };
    const answer = await p.core.send('work', name, `core-${i}`, payload, SEND);
    if (!answer.ok) throw new Error(`core command failed: ${JSON.stringify(answer.error)}`);
  };
}

/** The raw twin: one JetStream publish with a message id, acknowledged by the stream. */
function rawPublish(p: Probe): Op {
  const data = Buffer.from(JSON.stringify({ account: 'raw', amount: 1 }));
  return async () => {
    const i = p.next++;
    await p.harness.js.publish(p.harness.names.workEventSubject('raw'), data, { msgID: `raw-${i}`, timeout: 10_000 });
  };
}

async function sequential(count: number, op: Op): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    await op(i);
    samples.push(performance.now() - t);
  }
  return samples.sort((a, b) => a - b);
}

/** Closed loop with many callers for a fixed window: the saturation rate in ops/s. */
async function saturation(op: Op, windowMs: number): Promise<number> {
  const until = performance.now() + windowMs;
  let done = 0;
  await Promise.all(
    Array.from({ length: SATURATION_CALLERS }, async () => {
      while (performance.now() < until) {
        await op(done);
        done++;
      }
    }),
  );
  return done / (windowMs / 1000);
}

/** Open loop: arrivals at a fixed rate that do not wait for replies. */
async function openLoop(op: Op, ratePerSec: number, windowMs: number): Promise<number[]> {
  const intervalMs = 1000 / ratePerSec;
  const samples: Promise<number>[] = [];
  const start = performance.now();
  for (let k = 0; performance.now() - start < windowMs; k++) {
    const wait = start + k * intervalMs - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const t = performance.now();
    samples.push(op(k).then(() => performance.now() - t));
  }
  return (await Promise.all(samples)).sort((a, b) => a - b);
}

function latencyRows(name: string, sorted: number[], baselineCase: string | undefined, note?: string): BenchRow[] {
  const base = baselineCase === undefined ? {} : { baselineCase };
  return [
    {
      suite: SUITE,
      case: name,
      metric: 'p50 ms',
      value: percentile(sorted, 50),
      ...base,
      note: note ?? `n=${sorted.length}`,
    },
    { suite: SUITE, case: name, metric: 'p99 ms', value: percentile(sorted, 99), ...base },
  ];
}

export const commandsSuite: BenchSuite = {
  name: SUITE,
  async run(ctx: BenchContext): Promise<BenchRow[]> {
    const harness = await Harness.create('benchcmd');
    const subject = `${harness.names.namespace}.bench.raw-request`;
    const responder = await rawResponder(ctx.natsUrl, subject);
    try {
      await harness.startServer('a');
      await harness.startCoreServer('a');
      const probe: Probe = {
        harness,
        client: await harness.client(),
        core: harness.coreClient(),
        raw: { nc: responder.nc, subject },
        next: 0,
      };
      return [...(await measure(ctx, probe)), ...(await measureCore(ctx, probe))];
    } finally {
      await responder.nc.drain().catch(() => undefined);
      await harness.dispose();
    }
  },
};

async function measure(ctx: BenchContext, p: Probe): Promise<BenchRow[]> {
  const seqCount = Math.max(100, Math.round(2000 * ctx.scale));
  const ping = command(p, 'ping');
  const raw = rawPublish(p);
  const rawCore = rawRequest(p);
  ctx.log('commands: warm-up');
  await sequential(Math.max(50, Math.round(300 * ctx.scale)), ping);
  await sequential(50, raw);
  await sequential(50, rawCore);

  ctx.log(`commands: sequential, ${seqCount} each`);
  const rawSeq = await sequential(seqCount, raw);
  const rawCoreSeq = await sequential(seqCount, rawCore);
  const pingSeq = await sequential(seqCount, ping);
  const appendSeq = await sequential(Math.round(seqCount / 2), command(p, 'append'));
  const rows: BenchRow[] = [
    ...latencyRows('raw publish sequential (commands)', rawSeq, undefined, 'one PubAck'),
    ...latencyRows('raw core request sequential', rawCoreSeq, undefined, 'one core NATS request and reply'),
    ...latencyRows('ping command sequential', pingSeq, 'raw publish sequential (commands)'),
    ...latencyRows(
      'append command sequential',
      appendSeq,
      'raw publish sequential (commands)',
      'handler appends one event (OCC)',
    ),
  ];

  const windowMs = Math.max(500, Math.round(SATURATION_WINDOW_MS * Math.min(1, ctx.scale)));
  const saturated = await saturation(ping, windowMs);
  const rate = saturated / 2;
  ctx.log(`commands: saturation ${Math.round(saturated)}/s; open loop at ${Math.round(rate)}/s`);
  const openWindowMs = Math.max(750, Math.round(OPEN_LOOP_WINDOW_MS * Math.min(1, ctx.scale)));
  const rawHalf = await openLoop(raw, rate, openWindowMs);
  const rawCoreHalf = await openLoop(rawCore, rate, openWindowMs);
  const pingHalf = await openLoop(ping, rate, openWindowMs);
  rows.push(
    {
      suite: SUITE,
      case: 'ping command saturation',
      metric: 'ops/s',
      value: saturated,
      note: `${SATURATION_CALLERS} callers, closed loop`,
    },
    ...latencyRows('raw publish at the same rate', rawHalf, undefined, `${Math.round(rate)}/s open loop`),
    ...latencyRows('raw core request at the same rate', rawCoreHalf, undefined, `${Math.round(rate)}/s open loop`),
    ...latencyRows(
      'ping command at half saturation',
      pingHalf,
      'raw publish at the same rate',
      `${Math.round(rate)}/s open loop; target p99 ≤ 10 ms`,
    ),
    {
      suite: SUITE,
      case: 'ping command at half saturation',
      metric: 'p99 ÷ raw core request p99',
      value: percentile(pingHalf, 99) / percentile(rawCoreHalf, 99),
      note: 'same offered load; goal ≤ 2',
    },
  );
  return rows;
}

/** The do-nothing and one-append commands over core NATS (ADR 0025), against the raw core request at each one's rate. */
async function measureCore(ctx: BenchContext, p: Probe): Promise<BenchRow[]> {
  const seqCount = Math.max(100, Math.round(2000 * ctx.scale));
  const ping = coreCommand(p, 'ping');
  const rawCore = rawRequest(p);
  ctx.log('commands: core warm-up');
  await sequential(Math.max(50, Math.round(300 * ctx.scale)), ping);
  const rawCoreSeq = await sequential(seqCount, rawCore);
  const pingSeq = await sequential(seqCount, ping);
  const appendSeq = await sequential(Math.round(seqCount / 2), coreCommand(p, 'append'));
  const rows: BenchRow[] = [
    ...latencyRows('raw core request sequential (core)', rawCoreSeq, undefined, 'one core NATS request and reply'),
    ...latencyRows('core ping command sequential', pingSeq, 'raw core request sequential (core)'),
    ...latencyRows(
      'core append command sequential',
      appendSeq,
      'raw core request sequential (core)',
      'handler appends one event (OCC)',
    ),
  ];
  const windowMs = Math.max(500, Math.round(SATURATION_WINDOW_MS * Math.min(1, ctx.scale)));
  const saturated = await saturation(ping, windowMs);
  const rate = saturated / 2;
  ctx.log(`commands: core saturation ${Math.round(saturated)}/s; open loop at ${Math.round(rate)}/s`);
  const openWindowMs = Math.max(750, Math.round(OPEN_LOOP_WINDOW_MS * Math.min(1, ctx.scale)));
  const rawCoreHalf = await openLoop(rawCore, rate, openWindowMs);
  const pingHalf = await openLoop(ping, rate, openWindowMs);
  rows.push(
    {
      suite: SUITE,
      case: 'core ping command saturation',
      metric: 'ops/s',
      value: saturated,
      note: `${SATURATION_CALLERS} callers, closed loop`,
    },
    ...latencyRows('raw core request at the core ping rate', rawCoreHalf, undefined, `${Math.round(rate)}/s open loop`),
    ...latencyRows(
      'core ping command at half saturation',
      pingHalf,
      'raw core request at the core ping rate',
      `${Math.round(rate)}/s open loop`,
    ),
    {
      suite: SUITE,
      case: 'core ping command at half saturation',
      metric: 'p99 ÷ raw core request p99',
      value: percentile(pingHalf, 99) / percentile(rawCoreHalf, 99),
      note: 'same offered load; issue 13 goal ≤ 2',
    },
  );
  return rows;
}
