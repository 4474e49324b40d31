// The orchestrator's operator metrics: every dispatch attempt by provider, failure domain
// and settlement (the spec's classification table), provider latency and time to first
// token, and the work queue: how long a unit waited before a worker took it, and how many
// messages wait or are in flight on the dispatch consumer. Provider names come from the
// config, so every label is a closed set.
import type { JetStreamManager } from '@nats-io/jetstream';
import {
  attemptOutcomeOf,
  type DispatchDelta,
  type DispatchOutcome,
  type DispatchRequest,
  type ProviderGateway,
} from '@tally/orchestrator-application';
import { labelValue, sharedRead } from '@tally/platform-app';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** Provider calls run from well under a second to the longest watchdog timeouts. */
const PROVIDER_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const QUEUE_WAIT_BUCKETS = [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

export interface DispatchCounters {
  readonly attempts: Counter<'provider' | 'domain' | 'settlement'>;
  readonly latency: Histogram<'provider' | 'settlement'>;
  readonly firstToken: Histogram<'provider'>;
  readonly queueWait: Histogram;
}

export function dispatchCounters(registry: Registry): DispatchCounters {
  const registers = [registry];
  return {
    attempts: new Counter({
      name: 'tally_dispatch_attempts_total',
      help: 'Provider dispatch attempts, by provider, failure domain and settlement (unknown/ok for a success)',
      labelNames: ['provider', 'domain', 'settlement'],
      registers,
    }),
    latency: new Histogram({
      name: 'tally_provider_latency_seconds',
      help: 'Time a provider call took, start to end of the reply, by provider and settlement',
      labelNames: ['provider', 'settlement'],
      buckets: PROVIDER_BUCKETS,
      registers,
    }),
    firstToken: new Histogram({
      name: 'tally_provider_time_to_first_token_seconds',
      help: 'Time from sending a provider call to its first streamed piece of reply, by provider',
      labelNames: ['provider'],
      buckets: PROVIDER_BUCKETS,
      registers,
    }),
    queueWait: new Histogram({
      name: 'tally_work_queue_wait_seconds',
      help: 'Time from a unit being queued to a worker receiving it (each delivery, redeliveries included)',
      buckets: QUEUE_WAIT_BUCKETS,
      registers,
    }),
  };
}

/** A gateway that counts and times every call of the one it wraps; what it returns is unchanged. */
export class ObservedGateway implements ProviderGateway {
  constructor(
    private readonly inner: ProviderGateway,
    private readonly counters: DispatchCounters,
    private readonly nowMs: () => number = () => performance.now(),
  ) {}

  async dispatch(
    req: DispatchRequest,
    signal: AbortSignal,
    onProgress?: () => void,
    onDelta?: (delta: DispatchDelta) => void,
  ): Promise<DispatchOutcome> {
    const provider = labelValue(req.provider, 'unknown');
    const started = this.nowMs();
    let first = true;
    const observe = (delta: DispatchDelta) => {
      if (first) {
        first = false;
        this.counters.firstToken.observe({ provider }, (this.nowMs() - started) / 1000);
      }
      onDelta?.(delta);
    };
    let settlement = 'unknown';
    let domain = 'unknown';
    try {
      const outcome = await this.inner.dispatch(req, signal, onProgress, observe);
      const attempt = attemptOutcomeOf(outcome);
      settlement = attempt.settlement;
      domain = attempt.domain;
      return outcome;
    } finally {
      // A throwing gateway counts as the worker records it: domain and settlement unknown.
      this.counters.attempts.inc({ provider, domain, settlement });
      this.counters.latency.observe({ provider, settlement }, (this.nowMs() - started) / 1000);
    }
  }
}

/** The dispatch consumer's backlog, read from the server at most once a second. */
export function registerWorkQueueGauges(registry: Registry, jsm: JetStreamManager, stream: string, durable: string) {
  const read = sharedRead(() => jsm.consumers.info(stream, durable));
  new Gauge({
    name: 'tally_work_queue_pending_messages',
    help: 'Work-queue messages no worker has received yet (the dispatch backlog)',
    registers: [registry],
    async collect() {
      const info = await read();
      if (info) this.set(info.num_pending);
    },
  });
  new Gauge({
    name: 'tally_work_queue_ack_pending_messages',
    help: 'Work-queue messages delivered to a worker and not yet acknowledged (units being worked)',
    registers: [registry],
    async collect() {
      const info = await read();
      if (info) this.set(info.num_ack_pending);
    },
  });
  new Gauge({
    name: 'tally_work_queue_redelivered_messages',
    help: 'Work-queue messages delivered more than once and not yet acknowledged',
    registers: [registry],
    async collect() {
      const info = await read();
      if (info) this.set(info.num_redelivered);
    },
  });
}
