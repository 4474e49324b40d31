// Typed, explicit limits for the command server. Nothing falls back to a library
// default: every bound that decides when a command is retried, given up or forgotten
// is named here and checked at start-up.
import type { NatsConnection } from '@nats-io/nats-core';
import type { CommandService, TallyNames } from '@tally/contracts';
import type { NatsConnectionOptions, ReplyBucketLimits, StreamSpec } from '@tally/platform-jetstream';

export interface CommandConsumerLimits {
  /** Redelivery timer; long handlers keep it alive with in-progress acks. */
  readonly ackWaitMs: number;
  /**
   * Handler attempts before a failing command is dead-lettered. The consumer allows one
   * spare delivery, so a command whose last attempt crashed is still dead-lettered
   * (without running the handler again) instead of sitting in the stream forever.
   */
  readonly deliveriesMax: number;
  /** Unacked commands across all replicas of the service. */
  readonly ackPendingMax: number;
  /** Messages one pull request asks for; keep it at or below concurrencyMax. */
  readonly fetchBatch: number;
  /** Handlers running at once in this replica. */
  readonly concurrencyMax: number;
  /** How long a pull request stays open on the server. */
  readonly pullExpiresMs: number;
  /** Server heartbeat on an idle pull, so a dead connection is noticed. */
  readonly idleHeartbeatMs: number;
  /** Interval of in-progress acks while a handler runs; well below ackWaitMs. */
  readonly workingIntervalMs: number;
}

export interface CommandRetryLimits {
  /** Delay before the second delivery; doubles per delivery. */
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;
}

export interface JetStreamCommandServerOptions {
  /** An open connection (not closed by the server) or how to open one (closed on close()). */
  readonly connection: NatsConnection | NatsConnectionOptions;
  readonly names: TallyNames;
  readonly service: CommandService;
  /** The shared commands stream; must be named names.commandsStream and use workqueue retention. */
  readonly commandsStream: StreamSpec;
  readonly deadLetterStream: StreamSpec;
  /** The reply cache (KV names.commandRepliesBucket(service)); ttlMs at least the commands duplicate window. */
  readonly replyCache: ReplyBucketLimits;
  readonly consumer: CommandConsumerLimits;
  readonly retry: CommandRetryLimits;
  /** Bound on each KV put, dead-letter publish and reply flush. */
  readonly publishTimeoutMs: number;
  /** close() waits this long for running handlers before it gives up on them. */
  readonly drainTimeoutMs: number;
}

export function durableNameFor(service: CommandService): string {
  return `${service}_commands`;
}

export function deadLetterSourceFor(service: CommandService): string {
  return `${service}-commands`;
}

/** Returns one line per broken limit; an empty list means the options are usable. */
export function commandServerOptionProblems(o: JetStreamCommandServerOptions): string[] {
  const problems: string[] = [];
  const positive = (value: number, name: string) => {
    if (!Number.isFinite(value) || value <= 0) problems.push(`${name} must be a positive number, got ${value}`);
  };
  const c = o.consumer;
  for (const [name, value] of Object.entries({
    ...c,
    ...o.retry,
    publishTimeoutMs: o.publishTimeoutMs,
    drainTimeoutMs: o.drainTimeoutMs,
  }))
    positive(value, name);
  if (o.commandsStream.name !== o.names.commandsStream)
    problems.push(`commandsStream.name must be ${o.names.commandsStream}`);
  if (o.commandsStream.retention !== 'workqueue')
    problems.push('commandsStream.retention must be workqueue: an acked command is done');
  if (o.deadLetterStream.name !== o.names.deadLetterStream)
    problems.push(`deadLetterStream.name must be ${o.names.deadLetterStream}`);
  if (o.replyCache.ttlMs < o.commandsStream.duplicateWindowMs) {
    problems.push(
      'replyCache.ttlMs must be at least commandsStream.duplicateWindowMs: a deduplicated re-send finds its answer only in the cache',
    );
  }
  if (c.workingIntervalMs >= c.ackWaitMs) problems.push('consumer.workingIntervalMs must be below consumer.ackWaitMs');
  if (c.fetchBatch > c.concurrencyMax)
    problems.push(
      'consumer.fetchBatch must not exceed consumer.concurrencyMax: buffered commands would age past ackWaitMs',
    );
  if (c.ackPendingMax < c.concurrencyMax)
    problems.push('consumer.ackPendingMax must be at least consumer.concurrencyMax');
  if (c.deliveriesMax < 2) problems.push('consumer.deliveriesMax must be at least 2 so a transient failure is retried');
  if (o.retry.backoffMaxMs < o.retry.backoffBaseMs)
    problems.push('retry.backoffMaxMs must be at least retry.backoffBaseMs');
  return problems;
}

/** Exponential, bounded: base, 2*base, 4*base, … up to max. */
export function backoffMs(retry: CommandRetryLimits, deliveryCount: number): number {
  const exponent = Math.min(Math.max(deliveryCount - 1, 0), 30);
  return Math.min(retry.backoffBaseMs * 2 ** exponent, retry.backoffMaxMs);
}
