// The two streams of tenant webhooks, derived from the namespace like every other name
// (ADR 0040). The events stream is ledger (it never forgets an endpoint or an attempt); the
// outbox is a work queue whose one durable consumer hands each message to one replica.
import type { JetStreamManager } from '@nats-io/jetstream';
import { assertSubjectToken, type TallyNames } from '@tally/contracts';
import type { TallyConfig } from '@tally/platform-app';
import { ensureStream, type StreamSpec } from '@tally/platform-jetstream';

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
    eventsStream: `${upper}_WEBHOOK_EVENTS`,
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

export async function provisionWebhookStreams(jsm: JetStreamManager, names: WebhookNames, config: TallyConfig) {
  for (const spec of webhookStreamSpecs(names, config)) await ensureStream(jsm, spec);
}
