// The shape every benchmark suite shares, so `npm run bench` prints one table.
// Absolute numbers on a 2-core noisy machine mean little; each row names the raw
// JetStream twin measured in the same run, and the ratio to it is what we compare.

export interface BenchRow {
  readonly suite: string;
  readonly case: string;
  /** e.g. "ops/s", "p50 ms", "p99 ms", "events/s". */
  readonly metric: string;
  readonly value: number;
  /** The `case` of the baseline row this one is compared with, in the same suite or another. */
  readonly baselineCase?: string;
  /** The baseline row's metric when it differs from this row's (events/s against a publish's ops/s). */
  readonly baselineMetric?: string;
  /** value / baseline value (or baseline / value for latencies), filled by the runner when a baseline is named. */
  ratio?: number;
  readonly note?: string;
}

export interface BenchContext {
  /** One server, or several comma-separated (a cluster). */
  readonly natsUrl: string;
  /** Added to the environment of every service a suite starts (the cluster suite sets the stream replicas). */
  readonly serviceEnv?: Readonly<Record<string, string>>;
  readonly databaseUrl: string | undefined;
  /** Scales every workload; 1 is the full run, smaller for a smoke run. */
  readonly scale: number;
  log(message: string): void;
}

export interface BenchSuite {
  readonly name: string;
  run(ctx: BenchContext): Promise<BenchRow[]>;
}

export function percentile(sortedMs: readonly number[], p: number): number {
  if (sortedMs.length === 0) return Number.NaN;
  const index = Math.min(sortedMs.length - 1, Math.max(0, Math.ceil((p / 100) * sortedMs.length) - 1));
  return sortedMs[index]!;
}

/** The server list of ctx.natsUrl, for clients that take an array. */
export function natsServers(ctx: BenchContext): string[] {
  return ctx.natsUrl
    .split(',')
    .map((u) => u.trim())
    .filter(Boolean);
}
