// Orchestrator suite: what the orchestrator adds to each dispatch, how many dispatches one
// worker keeps in flight, and how throughput scales with workers. Services run as real
// processes against the scripted provider over real HTTP. Targets (reported, not asserted):
// added p99 <= 5 ms unmetered and <= 15 ms metered; >= 1,000 in flight per worker.
//
// overhead: one unit at a time; (POST /v1/work → WorkCompleted observed on the event subject)
//   minus a direct call to the same zero-latency provider, measured interleaved in the same run.
//   A second row starts the clock when the unit reaches the work queue: what the dispatch
//   path adds (pick-up, admission, the attempt's commits, conclusion), without submission.
// concurrency: units queued while no worker runs, then one worker starts against 500 ms latency;
//   the provider's peak in-flight requests and units/s from first dispatch to last completion.
// scaling: the same with 1 and then 2 workers against 200 ms latency.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { deleteNamespaceStreams, ScriptedProvider, ServiceProcess, uniqueNamespace } from '@tally/testing';
import { natsServers, percentile, type BenchContext, type BenchRow, type BenchSuite } from './lib.js';
import { adminHeaders, TEST_ADMIN_KEY, TokenMint, untilAccepted } from '../test/support/auth.js';

const UNMETERED_PLACEHOLDER = 'minted-when-the-orchestrator-starts';

const SUITE = 'orchestrator';
const DIRECT_CASE = 'direct provider call (zero latency)';
const PRICE = { input_per_mtok_units: 1, output_per_mtok_units: 1, currency: 'USD' };
const SUBMIT_IN_FLIGHT = 32;

export interface Stack {
  readonly ns: string;
  readonly provider: ScriptedProvider;
  readonly nc: NatsConnection;
  readonly processes: ServiceProcess[];
  /** Set once the first orchestrator runs when unmetered (a minted token). */
  token: string;
  /** Resolves when the unit's WorkCompleted (or WorkFailed/WorkAborted) is on its subject. */
  ended(workId: string): Promise<number>;
  /** When the unit's work-queue message was seen, if it was. */
  queuedAt(workId: string): number | undefined;
  startOrchestrator(env?: Record<string, string>): Promise<ServiceProcess>;
  dispose(): Promise<void>;
}

/** A namespace with the scripted provider, the authority when metered, and orchestrators started on demand. */
export async function stack(ctx: BenchContext, prefix: string, metered: boolean): Promise<Stack> {
  const ns = uniqueNamespace(prefix);
  const dir = mkdtempSync(join(tmpdir(), `tally-bench-${prefix}-`));
  const provider = await ScriptedProvider.start();
  const config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      providers: [
        {
          name: 'scripted',
          kind: 'openai',
          base_url: provider.url,
          api_key_env: 'SCRIPTED_API_KEY',
          models: { 'bench-model': PRICE },
        },
      ],
    }),
  );
  const base = {
    NATS_URL: ctx.natsUrl,
    TALLY_NAMESPACE: ns,
    TALLY__STREAMS__QUEUE_MAX_BYTES: String(256 * 1024 * 1024),
    TALLY__STREAMS__DEAD_LETTER_MAX_BYTES: String(64 * 1024 * 1024),
    TALLY_ADMIN_KEY: TEST_ADMIN_KEY,
    LOG_LEVEL: 'warn',
    ...ctx.serviceEnv,
  };
  const db = (name: string): Record<string, string> => ({
    DATABASE_URL: '',
    TALLY_SQLITE_PATH: join(dir, `${name}.sqlite`),
  });
  const processes: ServiceProcess[] = [];
  let token = UNMETERED_PLACEHOLDER;
  let mint: TokenMint | undefined;
  if (metered) {
    const authority = await ServiceProcess.start({
      service: 'budget-authority',
      readyTimeoutMs: 120_000,
      env: { ...base, ...db('authority'), TALLY_SIGNING_KEY: randomBytes(32).toString('base64url') },
    });
    processes.push(authority);
    const subject = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!;
    const grants = [
      {
        server_id: 'scripted',
        tool_name: 'bench-model',
        max_invocations: 1_000_000_000,
        max_cost_per_invocation: 1_000_000,
        max_total_cost_units: '1000000000000',
        currency: 'USD',
      },
    ];
    const res = await fetch(`${authority.url}/v1/capabilities`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...adminHeaders() },
      body: JSON.stringify({ subject_public_key: subject, ttl_seconds: 86_400, grants }),
    });
    if (res.status !== 201) throw new Error(`capability issue failed: ${res.status} ${await res.text()}`);
    token = ((await res.json()) as { token: string }).token;
  }
  const nc = await connect({ servers: natsServers(ctx) });
  const waiters = new Map<string, (at: number) => void>();
  const done = new Map<string, number>();
  nc.subscribe(`${ns}.work.evt.>`, {
    callback: (_e, msg) => {
      // A commit may carry several events (the last step and the conclusion); any of them may end the unit.
      const types = (msg.headers?.get('Tally-Event-Types') || msg.headers?.get('Tally-Event-Type') || '').split(',');
      if (!types.some((t) => t === 'WorkCompleted' || t === 'WorkFailed' || t === 'WorkAborted')) return;
      const at = performance.now();
      const id = msg.subject.slice(msg.subject.lastIndexOf('.') + 1);
      done.set(id, at);
      waiters.get(id)?.(at);
    },
  });
  const queued = new Map<string, number>();
  nc.subscribe(`${ns}.work.queue`, {
    callback: (_e, msg) => {
      const at = performance.now();
      const id = (msg.json() as { work_id?: unknown }).work_id;
      if (typeof id === 'string') queued.set(id, at);
    },
  });
  await nc.flush();
  const orchestratorEnv = {
    ...base,
    ...db('orchestrator'),
    TALLY_CONFIG: config,
    SCRIPTED_API_KEY: 'bench-key',
    TALLY__ORCHESTRATOR__BUDGET_MODE: metered ? 'metered' : 'unmetered',
    TALLY__ORCHESTRATOR__WORKER_CONCURRENCY: '1024',
    TALLY__CONSUMERS__ACK_PENDING_MAX: '4096',
    TALLY__CONSUMERS__FETCH_BATCH: '256',
  };
  const setup: Stack = {
    ns,
    provider,
    nc,
    processes,
    token,
    queuedAt: (id) => queued.get(id),
    ended: (id) => {
      const at = done.get(id);
      return at !== undefined ? Promise.resolve(at) : new Promise((resolve) => waiters.set(id, resolve));
    },
    async startOrchestrator(env = {}) {
      const svc = await ServiceProcess.start({
        service: 'agent-orchestrator',
        readyTimeoutMs: 120_000,
        env: { ...orchestratorEnv, ...env },
      });
      processes.push(svc);
      // Unmetered there is no authority: a test signing key in the directory seals the token.
      if (!metered) {
        mint ??= await TokenMint.open(ctx.natsUrl, ns);
        if (setup.token === UNMETERED_PLACEHOLDER) setup.token = mint.seal();
        await untilAccepted(svc.url, setup.token);
      }
      return svc;
    },
    async dispose() {
      await Promise.all(processes.map((p) => p.stop()));
      await provider.stop();
      await nc.drain();
      await deleteNamespaceStreams(natsServers(ctx)[0]!, ns);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return setup;
}

let seq = 0;
function work(token: string): Record<string, unknown> {
  return {
    work_id: `b${Date.now().toString(36)}${(seq++).toString(36)}`,
    purpose: 'execute',
    token,
    route: [{ provider: 'scripted', model: 'bench-model' }],
    messages: [{ role: 'user', content: 'hi' }],
    limits: { max_tokens: 16, timeout_ms: 60_000, max_retries: 0 },
  };
}

async function post(url: string, body: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${url}/v1/work`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status !== 202) throw new Error(`submit failed: ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
}

export async function directCall(provider: ScriptedProvider): Promise<number> {
  const started = performance.now();
  const res = await fetch(`${provider.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer bench-key' },
    body: JSON.stringify({
      model: 'bench-model',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 16,
    }),
  });
  await res.text();
  return performance.now() - started;
}

export async function overhead(ctx: BenchContext, metered: boolean): Promise<BenchRow[]> {
  const s = await stack(ctx, metered ? 'bom' : 'bou', metered);
  try {
    const svc = await s.startOrchestrator();
    const units = Math.max(20, Math.round(300 * ctx.scale));
    const warmup = Math.max(5, Math.round(units / 10));
    const endToEnd: number[] = [];
    const fromQueue: number[] = [];
    const direct: number[] = [];
    for (let i = 0; i < units + warmup; i++) {
      const body = work(s.token);
      const started = performance.now();
      await post(svc.url, body);
      const ended = await s.ended(body['work_id'] as string);
      const d = await directCall(s.provider);
      if (i >= warmup) {
        const queuedAt = s.queuedAt(body['work_id'] as string);
        if (queuedAt === undefined)
          throw new Error(`the work-queue message of ${String(body['work_id'])} was not seen`);
        endToEnd.push(ended - started);
        fromQueue.push(ended - queuedAt);
        direct.push(d);
      }
    }
    const mode = metered ? 'metered' : 'unmetered';
    const added = endToEnd.map((e, i) => e - direct[i]!).sort((a, b) => a - b);
    const dispatchAdded = fromQueue.map((e, i) => e - direct[i]!).sort((a, b) => a - b);
    direct.sort((a, b) => a - b);
    const note = `${units} units one at a time; submit → WorkCompleted minus a direct call`;
    const rows: BenchRow[] = [
      {
        suite: SUITE,
        case: `orchestrator-added latency (${mode})`,
        metric: 'p50 ms',
        value: percentile(added, 50),
        note,
      },
      {
        suite: SUITE,
        case: `orchestrator-added latency (${mode})`,
        metric: 'p99 ms',
        value: percentile(added, 99),
        note: `target <= ${metered ? 15 : 5} ms`,
      },
      {
        suite: SUITE,
        case: `dispatch-path latency (${mode})`,
        metric: 'p50 ms',
        value: percentile(dispatchAdded, 50),
        note: 'queued → WorkCompleted minus a direct call',
      },
      { suite: SUITE, case: `dispatch-path latency (${mode})`, metric: 'p99 ms', value: percentile(dispatchAdded, 99) },
    ];
    if (!metered)
      rows.push(
        { suite: SUITE, case: DIRECT_CASE, metric: 'p50 ms', value: percentile(direct, 50) },
        { suite: SUITE, case: DIRECT_CASE, metric: 'p99 ms', value: percentile(direct, 99) },
      );
    return rows;
  } finally {
    await s.dispose();
  }
}

/** Queues `units` with the API replica's workers off, then starts `workers` worker replicas and times the drain. */
async function drain(
  ctx: BenchContext,
  prefix: string,
  units: number,
  workers: number,
  latencyMs: number,
  concurrency: number,
): Promise<{ unitsPerS: number; peakInFlight: number }> {
  const s = await stack(ctx, prefix, false);
  try {
    s.provider.always('bench-model', { kind: 'stream', chunks: ['ok'], latencyMs });
    const api = await s.startOrchestrator({ TALLY__ORCHESTRATOR__RUN_WORKERS: 'false' });
    const ids: string[] = [];
    const queue = Array.from({ length: units }, () => work(s.token));
    await Promise.all(
      Array.from({ length: SUBMIT_IN_FLIGHT }, async () => {
        for (let body = queue.pop(); body; body = queue.pop()) {
          await post(api.url, body);
          ids.push(body['work_id'] as string);
        }
      }),
    );
    const started = performance.now();
    await Promise.all(
      Array.from({ length: workers }, () =>
        s.startOrchestrator({ TALLY__ORCHESTRATOR__WORKER_CONCURRENCY: String(concurrency) }),
      ),
    );
    let first = Number.POSITIVE_INFINITY;
    const poll = setInterval(
      () => s.provider.calls() > 0 && first === Number.POSITIVE_INFINITY && (first = performance.now()),
      5,
    );
    const ends = await Promise.all(ids.map((id) => s.ended(id)));
    clearInterval(poll);
    const from = Math.min(first, started + 1);
    const last = Math.max(...ends);
    return { unitsPerS: (units / (last - from)) * 1000, peakInFlight: s.provider.peakInFlight };
  } finally {
    await s.dispose();
  }
}

export const orchestratorSuite: BenchSuite = {
  name: SUITE,
  async run(ctx) {
    const rows: BenchRow[] = [];
    ctx.log('orchestrator: overhead, unmetered');
    rows.push(...(await overhead(ctx, false)));
    ctx.log('orchestrator: overhead, metered by the real budget-authority');
    rows.push(...(await overhead(ctx, true)));
    const concurrencyUnits = Math.max(200, Math.round(2_000 * ctx.scale));
    ctx.log(`orchestrator: concurrency, ${concurrencyUnits} units, one worker, 500 ms latency`);
    const one = await drain(ctx, 'boc', concurrencyUnits, 1, 500, 1024);
    rows.push(
      {
        suite: SUITE,
        case: 'one worker vs 500 ms latency',
        metric: 'peak in-flight',
        value: one.peakInFlight,
        note: 'target >= 1,000 (worker_concurrency 1024)',
      },
      {
        suite: SUITE,
        case: 'one worker vs 500 ms latency',
        metric: 'units/s',
        value: one.unitsPerS,
        note: `${concurrencyUnits} units`,
      },
    );
    const scalingUnits = Math.max(100, Math.round(1_000 * ctx.scale));
    for (const workers of [1, 2]) {
      ctx.log(`orchestrator: scaling, ${workers} worker(s), 200 ms latency`);
      const r = await drain(ctx, `bos${workers}`, scalingUnits, workers, 200, 64);
      rows.push({
        suite: SUITE,
        case: `${workers} worker(s) vs 200 ms latency`,
        metric: 'units/s',
        value: r.unitsPerS,
        note: `${scalingUnits} units, worker_concurrency 64`,
        ...(workers === 2 ? { baselineCase: '1 worker(s) vs 200 ms latency' } : {}),
      });
    }
    return rows;
  },
};
