// The metrics both services export beside Node's defaults: how far each projection is
// behind its stream and how many aggregates it has quarantined (ADR 0045), how many
// messages the dead-letter stream holds, and the webhook
// delivery series. Every label value is a bounded name (projection, stream, event type,
// outcome), never an id, so a series count stays fixed however much traffic flows.
import type { JetStreamManager } from '@nats-io/jetstream';
import { listQuarantine, readCheckpoint } from '@tally/platform-typeorm';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { DataSource } from 'typeorm';

/** A label value must be a short name; anything else (free text, an id by mistake) is counted as `other`. */
const LABEL_VALUE = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;

export function labelValue(value: string | undefined | null, fallback = 'none'): string {
  if (value === undefined || value === null || value === '') return fallback;
  return LABEL_VALUE.test(value) ? value : 'other';
}

/**
 * One read shared by every gauge of a scrape: a scrape collects each gauge in turn, and
 * without this each would ask the server or the database again. A failed read is not kept.
 */
export function sharedRead<T>(read: () => Promise<T>, cacheMs = 1_000): () => Promise<T | undefined> {
  let cached: { at: number; value: Promise<T> } | undefined;
  return () => {
    const now = Date.now();
    if (!cached || now - cached.at > cacheMs) {
      const value = read();
      value.catch(() => (cached = undefined));
      cached = { at: now, value };
    }
    return cached.value.catch(() => undefined);
  };
}

export interface ProjectionOfStream {
  readonly name: string;
  readonly stream: string;
}

/**
 * Per projection: the stream's last sequence minus the projection's committed checkpoint
 * (events not yet in the read model), and per stream its message count. Read from the
 * shared checkpoint table, so every replica reports the same lag whoever holds the lease.
 */
export function registerProjectionMetrics(
  registry: Registry,
  jsm: JetStreamManager,
  dataSource: DataSource,
  projections: readonly ProjectionOfStream[],
  extraStreams: readonly string[],
): void {
  const streams = [...new Set([...projections.map((p) => p.stream), ...extraStreams])];
  const read = sharedRead(async () => {
    const states = new Map<string, { last: number; messages: number }>();
    for (const stream of streams) {
      const info = await jsm.streams.info(stream).catch(() => undefined);
      if (info) states.set(stream, { last: info.state.last_seq, messages: info.state.messages });
    }
    const lag = new Map<string, number>();
    for (const p of projections) {
      const state = states.get(p.stream);
      if (!state) continue;
      const checkpoint = await readCheckpoint(dataSource.manager, p.name, p.stream).catch(() => undefined);
      if (checkpoint !== undefined) lag.set(p.name, Math.max(0, state.last - checkpoint));
    }
    return { states, lag, quarantine: await quarantineCounts(dataSource, projections) };
  });
  new Gauge({
    name: 'tally_projection_lag_events',
    help: 'Events in the stream that the projection has not committed yet',
    labelNames: ['projection'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const [projection, lag] of (await read())?.lag ?? []) this.set({ projection }, lag);
    },
  });
  new Gauge({
    name: 'tally_projection_quarantined_aggregates',
    help: 'Aggregates (budget trees, work units) a projection has set aside because it cannot apply one of their events',
    labelNames: ['projection'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const [projection, n] of (await read())?.quarantine ?? []) this.set({ projection }, n.aggregates);
    },
  });
  new Gauge({
    name: 'tally_projection_quarantined_events',
    help: 'Events not applied because their aggregate is quarantined: each one that failed and the ones skipped after it',
    labelNames: ['projection'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const [projection, n] of (await read())?.quarantine ?? []) this.set({ projection }, n.events);
    },
  });
  new Gauge({
    name: 'tally_stream_messages',
    help: 'Messages a Tally stream holds (for the dead-letter stream: letters waiting for an operator)',
    labelNames: ['stream'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const [stream, state] of (await read())?.states ?? []) this.set({ stream }, state.messages);
    },
  });
}

/** Per projection (0 when none): quarantined aggregates and the events they hold back. */
async function quarantineCounts(
  dataSource: DataSource,
  projections: readonly ProjectionOfStream[],
): Promise<Map<string, { aggregates: number; events: number }>> {
  const counts = new Map(projections.map((p) => [p.name, { aggregates: 0, events: 0 }]));
  for (const row of await listQuarantine(dataSource.manager)) {
    const count = counts.get(row.projection);
    if (!count) continue;
    count.aggregates += 1;
    count.events += 1 + row.skippedEvents;
  }
  return counts;
}

export interface WebhookMetrics {
  /** One per delivery try: `outcome` delivered (2xx), failed (answered otherwise) or unreachable (no answer). */
  readonly deliveries: Counter<'event' | 'outcome'>;
  /** Tries that did not deliver, by why: `status_4xx`, `status_5xx`, `timeout`, `network`, `refused_url`. */
  readonly failures: Counter<'event' | 'reason'>;
  /** How long an endpoint took to answer a try. */
  readonly latency: Histogram<'event'>;
  /** Deliveries recorded and not yet acknowledged by their endpoint. */
  readonly pending: Gauge;
}

/**
 * The webhook delivery series, defined here so their names and labels are fixed before the
 * sender exists: the authority registers them at boot (so a dashboard finds them), the
 * sender takes them from the same registry. Labels: the event type (budget.exhausted, …).
 */
export function webhookMetrics(registry: Registry): WebhookMetrics {
  const existing = registry.getSingleMetric('tally_webhook_deliveries_total');
  if (existing)
    return {
      deliveries: existing as Counter<'event' | 'outcome'>,
      failures: registry.getSingleMetric('tally_webhook_delivery_failures_total') as Counter<'event' | 'reason'>,
      latency: registry.getSingleMetric('tally_webhook_delivery_seconds') as Histogram<'event'>,
      pending: registry.getSingleMetric('tally_webhook_deliveries_pending') as Gauge,
    };
  return {
    deliveries: new Counter({
      name: 'tally_webhook_deliveries_total',
      help: 'Webhook delivery tries, by event type and outcome (delivered, failed, unreachable)',
      labelNames: ['event', 'outcome'],
      registers: [registry],
    }),
    failures: new Counter({
      name: 'tally_webhook_delivery_failures_total',
      help: 'Webhook delivery tries that did not deliver, by event type and reason',
      labelNames: ['event', 'reason'],
      registers: [registry],
    }),
    latency: new Histogram({
      name: 'tally_webhook_delivery_seconds',
      help: 'How long a webhook endpoint took to answer',
      labelNames: ['event'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    pending: new Gauge({
      name: 'tally_webhook_deliveries_pending',
      help: 'Webhook deliveries recorded and not yet delivered',
      registers: [registry],
    }),
  };
}
