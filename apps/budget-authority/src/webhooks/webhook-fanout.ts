// The outbox's producer: one durable consumer of the budget events, shared by every replica,
// turns each fact that is a webhook into one outbox message per endpoint of its tenant that
// asked for it. The ledger is the outbox's source of truth: a replica killed after a threshold
// was crossed leaves the fact unacknowledged here, and whichever replica reads it next enqueues
// it, with the same message id, so the outbox's duplicate window absorbs a repeat (ADR 0040).
import type { JsMsg } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/nats-core';
import { budgetEventRegistry } from '@tally/budget-application';
import { Headers, type EventRegistry } from '@tally/contracts';
import type { HostContext } from '@tally/platform-app';
import { startDurableConsumer, type DurableConsumerHandle } from '@tally/platform-jetstream';
import type { WebhookEndpoints } from './webhook-endpoints.js';
import type { WebhookOutboxMessage } from './webhook-events.js';
import { SOURCE_EVENT_TYPES, webhookBody, webhookOf, type SourceEvent } from './webhook-policy.js';
import type { WebhookNames } from './webhook-streams.js';
import { TenantOfTree } from './tenant-of-tree.js';

/** A commit whose headers name no webhook-worthy type is acknowledged without being parsed. */
function sourceTypesOf(msg: JsMsg): boolean {
  const many = msg.headers?.get(Headers.eventTypes);
  const types = many ? many.split(',') : [msg.headers?.get(Headers.eventType) ?? ''];
  // A commit without the header (written before it existed) is parsed to be sure.
  if (types.length === 1 && types[0] === '') return true;
  return types.some((t) => SOURCE_EVENT_TYPES.has(t));
}

export interface FanoutDeps {
  readonly ctx: HostContext;
  readonly names: WebhookNames;
  readonly endpoints: WebhookEndpoints;
}

export async function startWebhookFanout(deps: FanoutDeps): Promise<DurableConsumerHandle> {
  const { ctx, names } = deps;
  const registry: EventRegistry = budgetEventRegistry();
  const tenants = new TenantOfTree(ctx, registry, { cachedTreesMax: 10_000 });
  const c = ctx.config.consumers;
  return startDurableConsumer<readonly SourceEvent[]>({
    nc: ctx.nats.nc,
    js: ctx.nats.js,
    jsm: ctx.nats.jsm,
    names: ctx.nats.names,
    stream: ctx.nats.names.budgetEventsStream,
    durable: names.fanoutDurable,
    filterSubject: ctx.nats.names.budgetEventsWildcard,
    deadLetterSource: 'webhook-fanout',
    ackWaitMs: c.ack_wait_ms,
    // A fact must never be skipped: a failing enqueue is retried for as long as it takes.
    deliveriesMax: 100,
    ackPendingMax: c.ack_pending_max,
    fetchBatch: 256,
    concurrency: 64,
    expiresMs: 5_000,
    workingIntervalMs: c.working_interval_ms,
    nakDelayMs: 500,
    nakDelayMaxMs: c.nak_delay_max_ms,
    ackTimeoutMs: ctx.config.nats.publish_timeout_ms,
    fetchRetryDelayMs: 1_000,
    stopTimeoutMs: 10_000,
    decode: (msg) => {
      if (!sourceTypesOf(msg)) return { ok: true, value: [] };
      const decoded = registry.decodeCommit(msg.data);
      return decoded.ok ? { ok: true, value: decoded.value.filter((e) => SOURCE_EVENT_TYPES.has(e.type)) } : decoded;
    },
    handle: async (events, msg) => {
      for (const event of events) await enqueue(deps, tenants, event, msg.subject);
    },
    logger: {
      info: (m, f) => ctx.logger.event('info', m, f),
      warn: (m, f) => ctx.logger.event('warn', m, f),
      error: (m, f) => ctx.logger.event('error', m, f),
    },
  });
}

async function enqueue(deps: FanoutDeps, tenants: TenantOfTree, event: SourceEvent, subject: string): Promise<void> {
  const message = webhookOf(event);
  if (!message) return;
  const tenantId = await tenants.tenantOf(subject);
  // An endpoint hears of what happened after it was registered, never of the history before it.
  const endpoints = (await deps.endpoints.list(tenantId)).filter(
    (e) => e.events.includes(message.type) && e.registered_at_ms <= message.at_ms,
  );
  const body = webhookBody(message, tenantId);
  for (const endpoint of endpoints) {
    const out: WebhookOutboxMessage = {
      tenant_id: tenantId,
      endpoint_id: endpoint.endpoint_id,
      webhook_id: message.webhook_id,
      type: message.type,
      source_event_id: message.source_event_id,
      at_ms: message.at_ms,
      body,
    };
    const hdrs = natsHeaders();
    hdrs.set('Tally-Webhook-Id', message.webhook_id);
    await deps.ctx.nats.js.publish(deps.names.outboxSubject, JSON.stringify(out), {
      msgID: `${message.webhook_id}:${endpoint.endpoint_id}`,
      headers: hdrs,
      timeout: deps.ctx.config.nats.publish_timeout_ms,
    });
  }
}
