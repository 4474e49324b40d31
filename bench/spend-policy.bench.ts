// Spend-policy suite (issue 11): Admit+Settle pairs/s against one real budget-authority
// process over core NATS (the orchestrator's default transport), with a plain grant and with a
// grant that carries a daily period, all three rate limits and alert thresholds, in the same
// run on the same process, windows interleaved so drift hits both alike. A tenant webhook is
// registered, so the outbox's fan-out reads every commit while the pairs run. The ratio of the
// policy grant's rate to the plain grant's is the figure (goal ≥ 0.9); it is reported, not asserted.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { NatsConnection } from '@nats-io/nats-core';
import { tallyNames } from '@tally/contracts';
import { connectNats } from '@tally/platform-jetstream';
import { CoreCommandClient } from '@tally/platform-nest';
import { deleteNamespaceStreams, ServiceProcess } from '@tally/testing';
import type { BenchContext, BenchRow, BenchSuite } from './lib.js';
import { adminHeaders, TEST_ADMIN_KEY } from '../test/support/auth.js';

const SUITE = 'spend-policy';
const CALLERS = 32;
const TREES = 32;
const ROUNDS = 5;
const WINDOW_MS = 3_000;
const SEND = { timeoutMs: 30_000, attemptsMax: 2 } as const;
type Json = Record<string, unknown>;

const PLAIN = { server_id: 'cost-srv', tool_name: 'compute', max_cost_per_invocation: 10, currency: 'USD' };
/** Every policy feature on, with limits the run never reaches: the cost of checking them, not of refusals. */
const POLICY = {
  ...PLAIN,
  max_total_cost_units: 1_000_000_000_000,
  reset: { every: 'day', timezone: 'Europe/Berlin' },
  rate_limits: { requests_per_minute: 10_000_000, tokens_per_minute: 1_000_000_000, max_concurrent: 100_000 },
  alert_at_percent: [50, 80, 95],
};

interface Authority {
  readonly url: string;
  readonly client: CoreCommandClient;
  dispose(): Promise<void>;
}

async function startAuthority(ctx: BenchContext): Promise<Authority> {
  const namespace = `bpol${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
  const dir = mkdtempSync(join(tmpdir(), 'tally-bench-policy-'));
  const process = await ServiceProcess.start({
    service: 'budget-authority',
    env: {
      NATS_URL: ctx.natsUrl,
      TALLY_NAMESPACE: namespace,
      TALLY_SQLITE_PATH: join(dir, 'projections.sqlite'),
      DATABASE_URL: '',
      TALLY_SIGNING_KEY: randomBytes(32).toString('base64url'),
      TALLY__STREAMS__QUEUE_MAX_BYTES: String(256 * 1024 * 1024),
      TALLY__STREAMS__DEAD_LETTER_MAX_BYTES: String(64 * 1024 * 1024),
      TALLY__WEBHOOKS__ALLOW_HTTP_LOOPBACK: 'true',
      TALLY_ADMIN_KEY: TEST_ADMIN_KEY,
      TALLY__AUTHORITY__EXPIRY_INTERVAL_MS: '3600000',
      TALLY__AUTHORITY__RECONCILE_INTERVAL_MS: '3600000',
      LOG_LEVEL: 'warn',
    },
    readyTimeoutMs: 120_000,
  });
  const nc: NatsConnection = await connectNats({
    url: ctx.natsUrl,
    name: `bench-${namespace}`,
    connectTimeoutMs: 5_000,
    maxReconnectAttempts: 10,
    reconnectTimeWaitMs: 200,
  });
  const client = new CoreCommandClient(nc, { names: tallyNames(namespace), retryDelayMs: 100 });
  return {
    url: process.url,
    client,
    async dispose() {
      await client.close().catch(() => undefined);
      await nc.drain().catch(() => undefined);
      await process.stop();
      await deleteNamespaceStreams(ctx.natsUrl, namespace);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function post(a: Authority, path: string, body: Json): Promise<Json> {
  const res = await fetch(`${a.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...adminHeaders() },
    body: JSON.stringify(body),
  });
  if (res.status !== 201) throw new Error(`${path} -> ${res.status} ${await res.text()}`);
  return (await res.json()) as Json;
}

async function issue(a: Authority, grant: Json, count: number): Promise<string[]> {
  const tokens: string[] = [];
  for (let i = 0; i < count; i++) {
    const subject_public_key = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!;
    const cap = await post(a, '/v1/capabilities', { subject_public_key, ttl_seconds: 86_400, grants: [grant] });
    tokens.push(cap['token'] as string);
  }
  return tokens;
}

async function pair(a: Authority, token: string, id: string): Promise<void> {
  const admit = await a.client.send<Json>(
    'budget',
    'admit',
    `a-${id}`,
    { request_id: id, token, server_id: 'cost-srv', tool_name: 'compute', requested_cost: 10, requested_tokens: 100 },
    SEND,
  );
  if (!admit.ok || admit.value['verdict'] !== 'allow') throw new Error(`admit ${id}: ${JSON.stringify(admit)}`);
  const settle = await a.client.send<Json>(
    'budget',
    'settle',
    `s-${id}`,
    {
      hold_id: admit.value['hold_id'],
      outcome: { kind: 'completed', cost_units: 5, currency: 'USD', tokens_used: 60 },
    },
    SEND,
  );
  if (!settle.ok) throw new Error(`settle ${id}: ${JSON.stringify(settle.error)}`);
}

/** Closed loop, CALLERS at once, each on its own tree: pairs per second over the window. */
async function window(a: Authority, tokens: string[], label: string, windowMs: number): Promise<number> {
  const until = performance.now() + windowMs;
  let done = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CALLERS }, async (_, caller) => {
      for (let i = 0; performance.now() < until; i++) {
        await pair(a, tokens[caller % tokens.length]!, `${label}-${caller}-${i}`);
        done++;
      }
    }),
  );
  return done / ((performance.now() - started) / 1000);
}

export const spendPolicySuite: BenchSuite = {
  name: SUITE,
  async run(ctx: BenchContext): Promise<BenchRow[]> {
    const receiver = createServer((_req, res) => res.writeHead(204).end());
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const a = await startAuthority(ctx);
    try {
      const port = (receiver.address() as { port: number }).port;
      const events = ['budget.threshold_crossed', 'budget.exhausted', 'hold.expired'];
      await post(a, '/v1/tenants/default/webhooks', { url: `http://127.0.0.1:${port}/hook`, events });
      const plain = await issue(a, PLAIN, TREES);
      const policy = await issue(a, POLICY, TREES);
      const windowMs = Math.max(1_000, Math.round(WINDOW_MS * Math.min(1, ctx.scale)));
      ctx.log('spend-policy: warm-up');
      await window(a, plain, 'warm-plain', 1_000);
      await window(a, policy, 'warm-policy', 1_000);
      const rates = { plain: [] as number[], policy: [] as number[] };
      for (let round = 0; round < ROUNDS; round++) {
        // Alternate which goes first, so neither always runs on a warmer (or more loaded) process.
        const order = round % 2 === 0 ? (['plain', 'policy'] as const) : (['policy', 'plain'] as const);
        for (const kind of order)
          rates[kind].push(await window(a, kind === 'plain' ? plain : policy, `${kind}-${round}`, windowMs));
        ctx.log(
          `spend-policy: round ${round}: plain ${rates.plain.at(-1)!.toFixed(0)}/s, policy ${rates.policy.at(-1)!.toFixed(0)}/s`,
        );
      }
      const mean = (xs: number[]) => xs.reduce((sum, x) => sum + x, 0) / xs.length;
      // Each round's two windows ran back to back, so their ratio is the least noisy figure on a shared machine.
      const perRound = rates.policy.map((p, i) => p / rates.plain[i]!).sort((x, y) => x - y);
      const median = perRound[Math.floor(perRound.length / 2)]!;
      const note = `${CALLERS} callers on ${TREES} trees, ${ROUNDS} interleaved ${windowMs} ms windows, core NATS`;
      return [
        { suite: SUITE, case: 'plain grant Admit+Settle', metric: 'pairs/s', value: mean(rates.plain), note },
        {
          suite: SUITE,
          case: 'policy grant Admit+Settle',
          metric: 'pairs/s',
          value: mean(rates.policy),
          baselineCase: 'plain grant Admit+Settle',
          note: 'daily period, requests/tokens per minute, max_concurrent, 3 alert thresholds; goal ratio ≥ 0.9',
        },
        {
          suite: SUITE,
          case: 'policy grant Admit+Settle',
          metric: 'median round ratio',
          value: median,
          note: `per-round policy ÷ plain: ${perRound.map((r) => r.toFixed(2)).join(', ')}; goal ≥ 0.9`,
        },
      ];
    } finally {
      await a.dispose();
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  },
};
