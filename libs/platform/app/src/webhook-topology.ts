// The two streams of tenant webhooks and their durable consumers, derived from the namespace
// and config like every other name and limit (ADR 0040), so `tally provision` and the
// authority's boot check read them from the same place (ADR 0015). The events stream is
// ledger (it never forgets an endpoint or an attempt); the outbox is a work queue whose one
// durable consumer hands each message to one replica.
import { assertSubjectToken, type TallyNames } from '@tally/contracts';
import type { ConsumerSpec, StreamSpec } from '@tally/platform-jetstream';
import type { TallyConfig } from './config.schema.js';

/** Beyond the call's own timeout, how long a delivery may take before the server redelivers it. */
export const WEBHOOK_ACK_WAIT_MARGIN_MS = 5_000;
/** A fact must never be skipped: a failing enqueue is retried this many times. */
export const WEBHOOK_FANOUT_DELIVERIES_MAX = 100;

export interface WebhookNames {
  readonly eventsStream: string;
  readonly eventsWildcard: string;
  endpointsSubject(tenantId: string): string;
  attemptsSubject(tenantId: string): string;
  deadSubject(tenantId: string): string;
  readonly outboxStream: string;
  readonly outboxSubject: string;
  /** The one durable consumer of the budget events that turns facts into outbox messages. */
  readonly fanoutDurable: string;
  /** The one durable consumer of the outbox: each message is worked by one replica at a time. */
  readonly deliveryDurable: string;
}

export function webhookNames(names: TallyNames): WebhookNames {
  const upper = names.budgetEventsStream.replace(/_BUDGET_EVENTS$/, '');
  const ns = names.namespace;
  const tenant = (id: string) => assertSubjectToken(id, 'tenantId');
  return {
    eventsStream: names.webhookEventsStream,
    eventsWildcard: `${ns}.webhook.evt.>`,
    endpointsSubject: (id) => `${ns}.webhook.evt.endpoints.${tenant(id)}`,
    attemptsSubject: (id) => `${ns}.webhook.evt.attempts.${tenant(id)}`,
    deadSubject: (id) => `${ns}.webhook.evt.dead.${tenant(id)}`,
    outboxStream: `${upper}_WEBHOOK_OUTBOX`,
    outboxSubject: `${ns}.webhook.outbox`,
    fanoutDurable: 'webhook-fanout',
    deliveryDurable: 'webhook-delivery',
  };
}

export function webhookStreamSpecs(names: WebhookNames, config: TallyConfig): StreamSpec[] {
  const s = config.streams;
  const common = {
    storage: s.storage,
    replicas: s.replicas,
    duplicateWindowMs: s.duplicate_window_ms,
    maxMsgSizeBytes: s.max_msg_size_bytes,
  };
  return [
    {
      ...common,
      name: names.eventsStream,
      subjects: [names.eventsWildcard],
      retention: 'limits',
      discard: 'new',
      maxAgeMs: 0,
      maxBytes: s.max_bytes ?? -1,
      denyDelete: true,
      denyPurge: true,
    },
    {
      ...common,
      name: names.outboxStream,
      subjects: [names.outboxSubject],
      retention: 'workqueue',
      discard: 'new',
      maxAgeMs: 0,
      maxBytes: s.queue_max_bytes,
      denyDelete: false,
      denyPurge: false,
    },
  ];
}

/** The fan-out's durable consumer on the budget events, and the delivery worker's on the outbox; each has one spare delivery. */
export function webhookConsumerSpecs(config: TallyConfig, names: TallyNames, w: WebhookNames): ConsumerSpec[] {
  const c = config.consumers;
  return [
    {
      stream: names.budgetEventsStream,
      durable: w.fanoutDurable,
      filterSubject: names.budgetEventsWildcard,
      ackWaitMs: c.ack_wait_ms,
      deliveriesMax: WEBHOOK_FANOUT_DELIVERIES_MAX + 1,
      ackPendingMax: c.ack_pending_max,
    },
    {
      stream: w.outboxStream,
      durable: w.deliveryDurable,
      filterSubject: w.outboxSubject,
      ackWaitMs: config.webhooks.timeout_ms + WEBHOOK_ACK_WAIT_MARGIN_MS,
      // One spare delivery: a message whose last call crashed is dead-lettered without another call.
      deliveriesMax: config.webhooks.attempts_max + 1,
      ackPendingMax: 4_096,
    },
  ];
}
