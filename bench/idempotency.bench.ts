// Idempotency suite (ADR 0016): what an Idempotency-Key costs on POST /v1/admissions. One
// budget-authority process; concurrent callers admit over HTTP on their own capabilities,
// first without a key (a fresh command id each call), then with a fresh key per call (one KV
// create each), then repeating keys already used (one KV create that fails and one read, then
// the ledger's answer for a known command id). The row without a key is the baseline.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { deleteNamespaceStreams, ServiceProcess } from '@tally/testing';
import { percentile, type BenchContext, type BenchRow, type BenchSuite } from './lib.js';
import { adminHeaders, TEST_ADMIN_KEY } from '../test/support/auth.js';

const SUITE = 'idempotency';
const BASELINE = 'HTTP admit, no key';
const CALLERS = 32;
const ROUNDS = 3;
type Json = Record<string, unknown>;

async function post(url: string, path: string, body: unknown, headers: Record<string, string>): Promise<Json> {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as Json;
  if (res.status >= 300) throw new Error(`${path} -> ${res.status} ${JSON.stringify(json)}`);
  return json;
}

async function issue(url: string): Promise<string> {
  const cap = await post(
    url,
    '/v1/capabilities',
    {
      subject_public_key: generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x,
      ttl_seconds: 3600,
      grants: [
        {
          server_id: 'srv',
          tool_name: 'tool',
          max_invocations: 1_000_000,
          max_cost_per_invocation: 10,
          currency: 'USD',
        },
      ],
    },
    adminHeaders(),
  );
  return String(cap['token']);
}

/** `calls` admissions spread over the callers; `keyOf(i)` is the Idempotency-Key of call i, if any. */
async function measure(
  url: string,
  tokens: readonly string[],
  calls: number,
  keyOf: (i: number) => string | undefined,
  requestOf: (i: number) => string,
): Promise<Measured> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    tokens.map(async (token, caller) => {
      for (let i = next++; i < calls; i = next++) {
        const key = keyOf(i);
        const t0 = performance.now();
        const out = await post(
          url,
          '/v1/admissions',
          { request_id: requestOf(i), token, server_id: 'srv', tool_name: 'tool', requested_cost: 1 },
          key === undefined ? {} : { 'idempotency-key': `${caller}-${key}` },
        );
        latencies.push(performance.now() - t0);
        if (out['verdict'] !== 'allow') throw new Error(`admission ${i} was ${String(out['verdict'])}`);
      }
    }),
  );
  return { calls, seconds: (performance.now() - started) / 1000, latencies };
}

interface Measured {
  readonly calls: number;
  readonly seconds: number;
  readonly latencies: number[];
}

function combined(rounds: readonly Measured[]): { opsPerS: number; p50: number; p99: number } {
  const calls = rounds.reduce((n, r) => n + r.calls, 0);
  const seconds = rounds.reduce((n, r) => n + r.seconds, 0);
  const latencies = rounds.flatMap((r) => r.latencies).sort((a, b) => a - b);
  return { opsPerS: calls / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

export const idempotencySuite: BenchSuite = {
  name: SUITE,
  async run(ctx: BenchContext): Promise<BenchRow[]> {
    const namespace = `bidem${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
    const dir = mkdtempSync(join(tmpdir(), 'tally-bench-idem-'));
    const svc = await ServiceProcess.start({
      service: 'budget-authority',
      env: {
        NATS_URL: ctx.natsUrl,
        TALLY_NAMESPACE: namespace,
        TALLY_SQLITE_PATH: join(dir, 'projections.sqlite'),
        DATABASE_URL: '',
        TALLY_SIGNING_KEY: randomBytes(32).toString('base64url'),
        TALLY__STREAMS__QUEUE_MAX_BYTES: String(64 * 1024 * 1024),
        TALLY__STREAMS__DEAD_LETTER_MAX_BYTES: String(64 * 1024 * 1024),
        TALLY_ADMIN_KEY: TEST_ADMIN_KEY,
        TALLY_KEYRING_DIR: join(dir, 'keyring'),
        LOG_LEVEL: 'warn',
      },
      readyTimeoutMs: 120_000,
    });
    try {
      // Each caller has a capability of its own (its own tree), so the cases measure the key, not contention.
      const tokens = await Promise.all(Array.from({ length: CALLERS }, () => issue(svc.url)));
      const calls = Math.max(CALLERS * 2, Math.round((2_000 * ctx.scale) / ROUNDS));
      await measure(
        svc.url,
        tokens,
        CALLERS * 2,
        () => undefined,
        (i) => `warm-${i}`,
      );
      // The cases take turns, round after round, so a machine that gets busier midway weighs on each alike.
      const none: Measured[] = [];
      const fresh: Measured[] = [];
      const repeat: Measured[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const run = `${round}-${randomBytes(3).toString('hex')}`;
        none.push(
          await measure(
            svc.url,
            tokens,
            calls,
            () => undefined,
            (i) => `none-${run}-${i}`,
          ),
        );
        fresh.push(
          await measure(
            svc.url,
            tokens,
            calls,
            (i) => `k-${run}-${i}`,
            (i) => `fresh-${run}-${i}`,
          ),
        );
        repeat.push(
          await measure(
            svc.url,
            tokens,
            calls,
            (i) => `k-${run}-${i}`,
            (i) => `fresh-${run}-${i}`,
          ),
        );
      }
      const rows = (name: string, rounds: Measured[], note: string): BenchRow[] => {
        const m = combined(rounds);
        return [
          { suite: SUITE, case: name, metric: 'ops/s', value: m.opsPerS, baselineCase: BASELINE, note },
          { suite: SUITE, case: name, metric: 'p50 ms', value: m.p50, baselineCase: BASELINE },
          { suite: SUITE, case: name, metric: 'p99 ms', value: m.p99, baselineCase: BASELINE },
        ];
      };
      return [
        ...rows(BASELINE, none, `${CALLERS} callers, own trees`),
        ...rows('HTTP admit, fresh key', fresh, 'one KV create per call'),
        ...rows('HTTP admit, repeated key', repeat, 'KV read, then the recorded answer'),
      ];
    } finally {
      await svc.stop();
      await deleteNamespaceStreams(ctx.natsUrl, namespace).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
