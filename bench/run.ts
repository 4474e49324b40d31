// `npm run bench`: runs every benchmark suite against the real services and prints one
// table. Each row may name a baseline case measured in the same run; the ratio to it
// is the number to compare across machines, not the absolute value.
import { performance } from 'node:perf_hooks';
import type { BenchContext, BenchRow, BenchSuite } from './lib.js';
import { jetstreamSuite } from './jetstream.bench.js';
import { commandsSuite } from './commands.bench.js';
import { projectionSuite } from './projection.bench.js';
import { orchestratorSuite } from './orchestrator.bench.js';
import { authoritySuite } from './authority.bench.js';
import { gatewaySuite } from './gateway.bench.js';
import { clusterSuite } from './cluster.bench.js';
import { spendPolicySuite } from './spend-policy.bench.js';
import { idempotencySuite } from './idempotency.bench.js';
import { guardSuite } from './guard.bench.js';

// ---- Suites: the JetStream suite first; append new suites to this array. ----
const suites: BenchSuite[] = [
  jetstreamSuite,
  commandsSuite,
  projectionSuite,
  orchestratorSuite,
  authoritySuite,
  gatewaySuite,
  clusterSuite,
  spendPolicySuite,
  idempotencySuite,
  guardSuite,
];
// ---- End of suites. ----

function context(): BenchContext {
  const scale = Number(process.env['BENCH_SCALE'] ?? '1');
  if (!(scale > 0)) throw new Error(`BENCH_SCALE must be a positive number, got ${process.env['BENCH_SCALE']}`);
  return {
    natsUrl: process.env['NATS_URL'] ?? 'nats://127.0.0.1:4222',
    databaseUrl: process.env['DATABASE_URL'] || undefined,
    scale,
    log: (message) => process.stderr.write(`[bench] ${message}\n`),
  };
}

/** Throughput compares as value/baseline; a cost (a metric in ms or us) as baseline/value, so > 1 is better either way. */
function fillRatios(rows: BenchRow[]): void {
  for (const row of rows) {
    if (row.baselineCase === undefined) continue;
    const candidates = rows.filter(
      (r) => r.case === row.baselineCase && r.metric === (row.baselineMetric ?? row.metric),
    );
    const baseline = candidates.find((r) => r.suite === row.suite) ?? candidates[0];
    if (!baseline || !(baseline.value > 0) || !(row.value > 0)) continue;
    row.ratio = /\b(ms|us)\b/.test(row.metric) ? baseline.value / row.value : row.value / baseline.value;
  }
}

function formatNumber(value: number | undefined, digits: number): string {
  if (value === undefined || Number.isNaN(value)) return '';
  if (Math.abs(value) >= 1000) return Math.round(value).toLocaleString('en-US');
  return value.toFixed(digits);
}

function formatTable(rows: readonly BenchRow[]): string {
  const header = ['suite', 'case', 'metric', 'value', 'baseline', 'ratio', 'note'];
  const body = rows.map((r) => [
    r.suite,
    r.case,
    r.metric,
    formatNumber(r.value, 2),
    r.baselineCase ?? '',
    formatNumber(r.ratio, 2),
    r.note ?? '',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((cells) => cells[i]!.length)));
  const numeric = new Set([3, 5]);
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (numeric.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n');
}

async function main(): Promise<void> {
  const ctx = context();
  const rows: BenchRow[] = [];
  let failed = false;
  // BENCH_SUITES=jetstream,commands runs only the named suites.
  const only = process.env['BENCH_SUITES']
    ?.split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  for (const suite of suites.filter((s) => !only || only.includes(s.name))) {
    const started = performance.now();
    ctx.log(`suite ${suite.name}: running at scale ${ctx.scale}`);
    try {
      rows.push(...(await suite.run(ctx)));
      ctx.log(`suite ${suite.name}: done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    } catch (error) {
      failed = true;
      ctx.log(`suite ${suite.name} FAILED: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    }
  }
  fillRatios(rows);
  process.stdout.write(`${formatTable(rows)}\n`);
  if (failed) process.exitCode = 1;
}

await main();
