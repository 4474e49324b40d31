// The live view of a service's streams for /readyz and /metrics: the durability report
// (versions, replicas and their health) with each stream's fullness, read from the server
// at most once per cacheMs however often probes and scrapers ask.
import type { JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { readDurabilityReport, type DurabilityReport, type DurabilityReportOptions } from '@tally/platform-jetstream';
import { Gauge, type Registry } from 'prom-client';

export class StreamWatch {
  private cached: { at: number; report: Promise<DurabilityReport> } | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    private readonly streams: readonly string[],
    private readonly options: DurabilityReportOptions,
    private readonly cacheMs = 1_000,
  ) {}

  report(): Promise<DurabilityReport> {
    const now = Date.now();
    if (!this.cached || now - this.cached.at > this.cacheMs) {
      const report = readDurabilityReport(this.nc, this.jsm, this.streams, this.options);
      // A failed read is not cached: the next probe asks the server again.
      report.catch(() => (this.cached = undefined));
      this.cached = { at: now, report };
    }
    return this.cached.report;
  }

  /** Per stream: bytes held, byte limit (-1: none), fullness share, and replicas current (clusters only). */
  registerMetrics(registry: Registry): void {
    const read = () => this.report();
    const gauge = (name: string, help: string, value: (s: DurabilityReport['streams'][number]) => number | undefined) =>
      new Gauge({
        name,
        help,
        labelNames: ['stream'],
        registers: [registry],
        async collect() {
          this.reset();
          const report = await read().catch(() => undefined);
          for (const stream of report?.streams ?? []) {
            const v = value(stream);
            if (v !== undefined) this.set({ stream: stream.name }, v);
          }
        },
      });
    gauge('tally_stream_bytes', 'Bytes a Tally stream holds', (s) => s.bytes);
    gauge('tally_stream_max_bytes', 'Byte limit of a Tally stream (-1: none)', (s) => s.max_bytes ?? -1);
    gauge('tally_stream_fullness_ratio', 'Bytes held over the byte limit, for streams that have one', (s) =>
      s.fullness === null ? undefined : s.fullness,
    );
    gauge(
      'tally_stream_replicas_current',
      'Replicas of a clustered stream that are current, leader included',
      (s) => s.replicas_current,
    );
  }
}
