// Cluster suite (issue 9): the authority's Admit+Settle pairs (1,000 trees, one replica) and
// the orchestrator's metered overhead, first on the single node of NATS_URL with R1 streams,
// then on a three-node JetStream cluster started here on loopback with R3 streams, in one
// run. Reports R3 ÷ R1 for pairs/s and for each p99: what replication costs on this host.
import { NatsCluster } from '@tally/testing';
import { measureCase } from './authority.bench.js';
import type { BenchContext, BenchRow, BenchSuite } from './lib.js';
import { overhead } from './orchestrator.bench.js';

const SUITE = 'cluster';

/** The rows of one deployment, renamed into this suite with the deployment in the case name. */
async function measureOn(ctx: BenchContext, label: string): Promise<BenchRow[]> {
  ctx.log(`cluster: ${label}: authority`);
  const trees = Math.max(10, Math.round(1_000 * Math.min(1, ctx.scale)));
  const authority = await measureCase(ctx, 1, trees);
  ctx.log(`cluster: ${label}: orchestrator, metered`);
  const orchestrator = await overhead(ctx, true);
  return [...authority, ...orchestrator].map((row) => ({ ...row, suite: SUITE, case: `${label}: ${row.case}` }));
}

/** value(R3) ÷ value(R1) for the rows of both runs that share case and metric. */
function ratioRows(r1: readonly BenchRow[], r3: readonly BenchRow[], metrics: readonly string[]): BenchRow[] {
  const out: BenchRow[] = [];
  for (const row of r3) {
    if (!metrics.includes(row.metric)) continue;
    const caseName = row.case.slice(row.case.indexOf(': ') + 2);
    const twin = r1.find((r) => r.metric === row.metric && r.case.slice(r.case.indexOf(': ') + 2) === caseName);
    if (!twin || !(twin.value > 0)) continue;
    out.push({
      suite: SUITE,
      case: `R3 ÷ R1: ${caseName}`,
      metric: `${row.metric} ratio`,
      value: row.value / twin.value,
      note: `R3 ${row.value.toFixed(2)} vs R1 ${twin.value.toFixed(2)}`,
    });
  }
  return out;
}

export const clusterSuite: BenchSuite = {
  name: SUITE,
  async run(ctx: BenchContext): Promise<BenchRow[]> {
    const r1 = await measureOn(ctx, 'R1 single node');
    ctx.log('cluster: starting three nats-server nodes');
    const cluster = await NatsCluster.start(3);
    try {
      const r3 = await measureOn(
        { ...ctx, natsUrl: cluster.url, serviceEnv: { ...ctx.serviceEnv, TALLY_STREAM_REPLICAS: '3' } },
        'R3 three nodes',
      );
      return [
        ...r1,
        ...r3,
        ...ratioRows(r1, r3, ['calls/s', 'admit p99 ms', 'admit p99 ms @half', 'p99 ms', 'p50 ms']),
      ];
    } finally {
      await cluster.dispose();
    }
  },
};
