// Authority suite: Admit+Settle pairs against real budget-authority processes (simulated
// rail, zero latency), sent the way the orchestrator sends them: core NATS requests (ADR
// 0025), or durable JetStream commands with BENCH_BUDGET_COMMANDS=jetstream. One hot delegation tree and 1,000 trees, with one replica and with two. Reports
// calls/s, Admit p50/p99, events appended per call, events/s against the raw pipelined
// OCC publish rate of the jetstream suite (append efficiency, target ≥ 0.6 across 1,000
// trees), and the Admit p99 at half saturation (target ≤ 10 ms). Targets are reported, not asserted.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { tallyNames, type TallyNames } from '@tally/contracts';
import { connectNats } from '@tally/platform-jetstream';
import { CoreCommandClient, JetStreamCommandClient, type CommandSender } from '@tally/platform-nest';
import { deleteNamespaceStreams, ServiceProcess } from '@tally/testing';
import { natsServers, percentile, type BenchContext, type BenchRow, type BenchSuite } from './lib.js';
import { adminHeaders, TEST_ADMIN_KEY } from '../test/support/auth.js';

const SUITE = 'authority';
const RAW_OCC_CASE = 'raw OCC pipelined 256 subjects';
const CALLERS = 64;
const SEND = { timeoutMs: 30_000, attemptsMax: 2 } as const;
type Json = Record<string, unknown>;

interface Fleet {
  readonly names: TallyNames;
  readonly processes: ServiceProcess[];
  readonly nc: NatsConnection;
  readonly client: CommandSender;
  dispose(): Promise<void>;
}

/** How Admit and Settle travel: core requests (the default since ADR 0025) or the durable command stream. */
function budgetCommands(): 'core' | 'jetstream' {
  const mode = process.env['BENCH_BUDGET_COMMANDS'] ?? 'core';
  if (mode !== 'core' && mode !== 'jetstream')
    throw new Error(`BENCH_BUDGET_COMMANDS must be core or jetstream, got ${mode}`);
  return mode;
}

async function startFleet(ctx: BenchContext, replicas: number, extraEnv: Record<string, string>): Promise<Fleet> {
  const namespace = `bauth${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
  const dir = mkdtempSync(join(tmpdir(), 'tally-bench-authority-'));
  const env = {
    NATS_URL: ctx.natsUrl,
    TALLY_NAMESPACE: namespace,
    TALLY_SQLITE_PATH: join(dir, 'projections.sqlite'),
    DATABASE_URL: '',
    TALLY_SIGNING_KEY: randomBytes(32).toString('base64url'),
    TALLY__STREAMS__QUEUE_MAX_BYTES: String(512 * 1024 * 1024),
    TALLY__STREAMS__DEAD_LETTER_MAX_BYTES: String(64 * 1024 * 1024),
    TALLY_ADMIN_KEY: TEST_ADMIN_KEY,
    // The sweeps have nothing to do here; keep them out of the measurement.
    TALLY__AUTHORITY__EXPIRY_INTERVAL_MS: '3600000',
    TALLY__AUTHORITY__RECONCILE_INTERVAL_MS: '3600000',
    LOG_LEVEL: 'warn',
    TALLY__NATS__BUDGET_COMMANDS: budgetCommands(),
    ...ctx.serviceEnv,
    ...extraEnv,
  };
  const processes = await Promise.all(
    Array.from({ length: replicas }, () =>
      ServiceProcess.start({ service: 'budget-authority', env, readyTimeoutMs: 120_000 }),
    ),
  );
  const nc = await connectNats({
    url: ctx.natsUrl,
    name: `bench-${namespace}`,
    connectTimeoutMs: 5_000,
    maxReconnectAttempts: 10,
    reconnectTimeWaitMs: 200,
  });
  const names = tallyNames(namespace);
  const client: CommandSender =
    budgetCommands() === 'jetstream'
      ? await new JetStreamCommandClient(nc, {
          names,
          publishTimeoutMs: 10_000,
          cacheTimeoutMs: 5_000,
          cachePollMs: 50,
        }).start()
      : new CoreCommandClient(nc, { names, retryDelayMs: 50 });
  return {
    names,
    processes,
    nc,
    client,
    async dispose() {
      await client.close();
      await nc.drain();
      await Promise.all(processes.map((p) => p.stop()));
      await deleteNamespaceStreams(natsServers(ctx)[0]!, namespace);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function issueTrees(fleet: Fleet, count: number): Promise<string[]> {
  const tokens: string[] = [];
  const grant = { server_id: 'cost-srv', tool_name: 'compute', max_cost_per_invocation: 10, currency: 'USD' };
  for (let i = 0; i < count; i += 16) {
    const batch = Array.from({ length: Math.min(16, count - i) }, async () => {
      const subject_public_key = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!;
      const res = await fetch(`${fleet.processes[0]!.url}/v1/capabilities`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...adminHeaders() },
        body: JSON.stringify({ subject_public_key, ttl_seconds: 86_400, grants: [grant] }),
      });
      if (res.status !== 201) throw new Error(`issue -> ${res.status} ${await res.text()}`);
      return ((await res.json()) as { token: string }).token;
    });
    tokens.push(...(await Promise.all(batch)));
  }
  return tokens;
}

/** One Admit+Settle pair; returns the Admit latency in ms. */
async function pair(fleet: Fleet, token: string, id: string): Promise<number> {
  const started = performance.now();
  const admit = await fleet.client.send<Json>(
    'budget',
    'admit',
    `a-${id}`,
    { request_id: id, token, server_id: 'cost-srv', tool_name: 'compute', requested_cost: 10, parameters: {} },
    SEND,
  );
  const admitMs = performance.now() - started;
  if (!admit.ok || admit.value['verdict'] !== 'allow')
    throw new Error(`admit ${id} was not allowed: ${JSON.stringify(admit)}`);
  const settle = await fleet.client.send<Json>(
    'budget',
    'settle',
    `s-${id}`,
    // As the orchestrator settles: with the hold's admission proof (Issue 8), which the authority verifies.
    {
      hold_id: admit.value['hold_id'],
      outcome: { kind: 'completed', cost_units: 5, currency: 'USD' },
      admission_proof: admit.value['admission_proof'],
    },
    SEND,
  );
  if (!settle.ok) throw new Error(`settle ${id} failed: ${JSON.stringify(settle.error)}`);
  if ((settle.value['receipt'] as Json | undefined)?.['verdict'] !== 'allow')
    throw new Error(`settle ${id} was not applied: ${JSON.stringify(settle.value['receipt'])}`);
  return admitMs;
}

async function lastSequence(fleet: Fleet): Promise<number> {
  const jsm = await jetstreamManager(fleet.nc);
  return (await jsm.streams.info(fleet.names.budgetEventsStream)).state.last_seq;
}

interface Closed {
  readonly pairsPerSecond: number;
  /** Stream messages (commits) per pair. */
  readonly eventsPerPair: number;
  /** Commits appended per second. */
  readonly eventsPerSecond: number;
  /** Domain events per second: a commit may carry several (Tally-Commit-Events). */
  readonly domainEventsPerSecond: number;
  readonly domainEventsPerPair: number;
  readonly admitMs: number[];
}

/** Events in the commits (from, to]: each commit's Tally-Commit-Events header, 1 when absent. Reads headers only. */
async function eventsIn(fleet: Fleet, from: number, to: number): Promise<number> {
  if (to <= from) return 0;
  const consumer = await jetstream(fleet.nc).consumers.get(fleet.names.budgetEventsStream, {
    deliver_policy: DeliverPolicy.StartSequence,
    opt_start_seq: from + 1,
    headers_only: true,
  });
  const messages = await consumer.consume({ max_messages: 1024 });
  let events = 0;
  try {
    for await (const msg of messages) {
      events += Number(msg.headers?.get('Tally-Commit-Events') || '1');
      if (msg.seq >= to) break;
    }
  } finally {
    await messages.close();
  }
  return events;
}

async function closedLoop(fleet: Fleet, tokens: string[], pairs: number, label: string): Promise<Closed> {
  const before = await lastSequence(fleet);
  const admitMs: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      for (let i = next++; i < pairs; i = next++)
        admitMs.push(await pair(fleet, tokens[i % tokens.length]!, `${label}-${i}`));
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const after = await lastSequence(fleet);
  const events = after - before;
  const domainEvents = await eventsIn(fleet, before, after);
  return {
    pairsPerSecond: pairs / seconds,
    eventsPerPair: events / pairs,
    eventsPerSecond: events / seconds,
    domainEventsPerSecond: domainEvents / seconds,
    domainEventsPerPair: domainEvents / pairs,
    admitMs: admitMs.sort((a, b) => a - b),
  };
}

async function openLoop(
  fleet: Fleet,
  tokens: string[],
  ratePerSec: number,
  windowMs: number,
  label: string,
): Promise<number[]> {
  const intervalMs = 1000 / ratePerSec;
  const samples: Promise<number>[] = [];
  const start = performance.now();
  for (let k = 0; performance.now() - start < windowMs; k++) {
    const wait = start + k * intervalMs - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    samples.push(pair(fleet, tokens[k % tokens.length]!, `${label}-${k}`));
  }
  return (await Promise.all(samples)).sort((a, b) => a - b);
}

/** The authority as it ran before ADR 0041: authorize and capture in commits of their own. */
const STEPWISE_CAPTURE = { TALLY__AUTHORITY__CAPTURE_WITH_AUTHORIZE: 'false' };

export async function measureCase(
  ctx: BenchContext,
  replicas: number,
  trees: number,
  variant: { readonly label: string; readonly env: Record<string, string> } = { label: '', env: {} },
): Promise<BenchRow[]> {
  const name = `admit+settle ${trees === 1 ? 'one hot tree' : `${trees.toLocaleString('en-US')} trees`}, ${replicas} replica${replicas > 1 ? 's' : ''}${variant.label}`;
  ctx.log(`authority: ${name}`);
  const fleet = await startFleet(ctx, replicas, variant.env);
  try {
    const tokens = await issueTrees(fleet, trees);
    await closedLoop(fleet, tokens, Math.max(50, Math.round(200 * ctx.scale)), 'warm');
    const pairs = Math.max(200, Math.round(3_000 * ctx.scale));
    const closed = await closedLoop(fleet, tokens, pairs, 'run');
    const rows: BenchRow[] = [
      {
        suite: SUITE,
        case: name,
        metric: 'calls/s',
        value: closed.pairsPerSecond,
        note: `${pairs} Admit+Settle pairs, ${CALLERS} callers, ${budgetCommands()} commands`,
      },
      { suite: SUITE, case: name, metric: 'admit p50 ms', value: percentile(closed.admitMs, 50) },
      {
        suite: SUITE,
        case: name,
        metric: 'admit p99 ms',
        value: percentile(closed.admitMs, 99),
        note: 'closed loop (saturated)',
      },
      {
        suite: SUITE,
        case: name,
        metric: 'appends/call',
        value: closed.eventsPerPair,
        note: 'stream messages (OCC commits, each may carry several events) per Admit+Settle pair',
      },
      {
        suite: SUITE,
        case: name,
        metric: 'events/call',
        value: closed.domainEventsPerPair,
        note: 'domain events per Admit+Settle pair',
      },
      {
        suite: SUITE,
        case: name,
        metric: 'events/s',
        value: closed.domainEventsPerSecond,
        baselineCase: RAW_OCC_CASE,
        baselineMetric: 'ops/s',
        note: "events appended/s; ratio = the issue's append efficiency (target ≥ 0.6 across 1,000 trees)",
      },
      {
        suite: SUITE,
        case: name,
        metric: 'ops/s',
        value: closed.eventsPerSecond,
        baselineCase: RAW_OCC_CASE,
        note: 'commits (stream messages) appended/s: the stricter reading of the same ratio',
      },
    ];
    const rate = closed.pairsPerSecond / 2;
    const windowMs = Math.max(1_000, Math.round(5_000 * Math.min(1, ctx.scale)));
    const half = await openLoop(fleet, tokens, rate, windowMs, 'half');
    rows.push(
      {
        suite: SUITE,
        case: name,
        metric: 'admit p50 ms @half',
        value: percentile(half, 50),
        note: `${Math.round(rate)} pairs/s open loop`,
      },
      { suite: SUITE, case: name, metric: 'admit p99 ms @half', value: percentile(half, 99), note: 'target ≤ 10 ms' },
    );
    return rows;
  } finally {
    await fleet.dispose();
  }
}

export const authoritySuite: BenchSuite = {
  name: SUITE,
  async run(ctx: BenchContext): Promise<BenchRow[]> {
    const rows: BenchRow[] = [];
    const trees = Math.max(10, Math.round(1_000 * Math.min(1, ctx.scale)));
    for (const replicas of [1, 2])
      for (const treeCount of [1, trees]) rows.push(...(await measureCase(ctx, replicas, treeCount)));
    // Before and after ADR 0041 in the same run.
    rows.push(...(await measureCase(ctx, 1, trees, { label: ', stepwise capture', env: STEPWISE_CAPTURE })));
    return rows;
  },
};
