// The outbox's producer: one durable consumer of the budget events, shared by every replica,
// turns each fact that is a webhook into one outbox message per endpoint of its tenant that
// asked for it. The ledger is the outbox's source of truth: a replica killed after a threshold
// was crossed leaves the fact unacknowledged here, and whichever replica reads it next enqueues
// it, with the same message id, so the outbox's duplicate window absorbs a repeat (ADR 0040).
//
// It reads every commit of the hot path, so it reads headers only: a commit whose
// Tally-Event-Type(s) name no webhook-worthy type is acknowledged at once, and only the rare
// commit that does is fetched whole, by direct get.
import { AckPolicy, DeliverPolicy, JetStreamApiError, ReplayPolicy, type JsMsg } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/nats-core';
import { budgetEventRegistry } from '@tally/budget-application';
import { Headers, type EventRegistry } from '@tally/contracts';
import type { HostContext } from '@tally/platform-app';
import { publishDeadLetter } from '@tally/platform-jetstream';
import type { WebhookEndpoints } from './webhook-endpoints.js';
import type { WebhookOutboxMessage } from './webhook-events.js';
import { SOURCE_EVENT_TYPES, webhookBody, webhookOf, type SourceEvent } from './webhook-policy.js';
import type { WebhookNames } from './webhook-streams.js';
import { TenantOfTree } from './tenant-of-tree.js';

const NS_PER_MS = 1_000_000;
const CONSUMER_NOT_FOUND = 10014;
const FETCH_BATCH = 512;
const FETCH_EXPIRES_MS = 5_000;
const FETCH_RETRY_DELAY_MS = 1_000;
/** A fact whose enqueue keeps failing is retried this often, then kept in the dead-letter stream. */
const DELIVERIES_MAX = 100;
const RETRY_DELAY_MS = 1_000;

/** Whether a commit's headers name a webhook-worthy event; one without the headers (older) is read to be sure. */
function mayHoldSource(msg: JsMsg): boolean {
  const many = msg.headers?.get(Headers.eventTypes);
  const one = msg.headers?.get(Headers.eventType);
  if (!many && !one) return true;
  return (many ? many.split(',') : [one!]).some((t) => SOURCE_EVENT_TYPES.has(t));
}

export interface FanoutDeps {
  readonly ctx: HostContext;
  readonly names: WebhookNames;
  readonly endpoints: WebhookEndpoints;
}

export class WebhookFanout {
  private stopping = false;
  private loop: Promise<void> | undefined;
  private current: { close(): Promise<void | Error> } | undefined;
  private readonly registry: EventRegistry = budgetEventRegistry();
  private readonly tenants: TenantOfTree;

  constructor(private readonly d: FanoutDeps) {
    this.tenants = new TenantOfTree(d.ctx, this.registry, { cachedTreesMax: 10_000 });
  }

  async start(): Promise<this> {
    const { names } = this.d.ctx.nats;
    // With nats.provision: check an operator created the consumer; this user only pulls from it.
    if (this.d.ctx.config.nats.provision === 'auto') await this.ensureConsumer();
    const consumer = await this.d.ctx.nats.js.consumers.get(names.budgetEventsStream, this.d.names.fanoutDurable);
    this.loop = this.run(consumer);
    return this;
  }

  /** Headers only: the fan-out reads the body of the rare commit that holds a webhook-worthy fact. */
  private async ensureConsumer(): Promise<void> {
    const { jsm, names } = this.d.ctx.nats;
    const ackWait = this.d.ctx.config.consumers.ack_wait_ms * NS_PER_MS;
    try {
      await jsm.consumers.info(names.budgetEventsStream, this.d.names.fanoutDurable);
      await jsm.consumers.update(names.budgetEventsStream, this.d.names.fanoutDurable, { ack_wait: ackWait });
    } catch (error) {
      if (!(error instanceof JetStreamApiError) || error.code !== CONSUMER_NOT_FOUND) throw error;
      await jsm.consumers.add(names.budgetEventsStream, {
        durable_name: this.d.names.fanoutDurable,
        filter_subject: names.budgetEventsWildcard,
        ack_policy: AckPolicy.Explicit,
        ack_wait: ackWait,
        max_deliver: DELIVERIES_MAX + 1,
        max_ack_pending: this.d.ctx.config.consumers.ack_pending_max,
        deliver_policy: DeliverPolicy.All,
        replay_policy: ReplayPolicy.Instant,
        headers_only: true,
      });
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.current?.close().catch(() => undefined);
    await this.loop;
  }

  private async run(consumer: Awaited<ReturnType<HostContext['nats']['js']['consumers']['get']>>): Promise<void> {
    while (!this.stopping) {
      try {
        const batch = await consumer.fetch({ max_messages: FETCH_BATCH, expires: FETCH_EXPIRES_MS });
        this.current = batch;
        const work: Promise<void>[] = [];
        for await (const msg of batch) {
          // Nothing to send: a lost ack only brings the headers back, to be skipped again.
          if (!mayHoldSource(msg)) msg.ack();
          else work.push(this.settle(msg));
        }
        await Promise.all(work);
      } catch (error) {
        if (this.stopping) break;
        this.d.ctx.logger.event('warn', 'webhook fan-out fetch failed; retrying', { error: String(error) });
        await new Promise((r) => setTimeout(r, FETCH_RETRY_DELAY_MS));
      } finally {
        this.current = undefined;
      }
    }
  }

  /** Ends the message with exactly one of ack, nak(delay) or term (after its dead letter). */
  private async settle(msg: JsMsg): Promise<void> {
    try {
      if (msg.info.deliveryCount > DELIVERIES_MAX) return await this.deadLetter(msg, 'enqueue kept failing');
      const events = await this.read(msg);
      if (events === undefined) return await this.deadLetter(msg, 'the commit does not decode');
      for (const event of events) await this.enqueue(event, msg.subject);
      await msg.ackAck({ timeout: this.d.ctx.config.nats.publish_timeout_ms }).catch(() => false);
    } catch (error) {
      this.d.ctx.logger.event('warn', 'webhook fan-out failed; retrying', { seq: msg.seq, error: String(error) });
      msg.nak(RETRY_DELAY_MS);
    }
  }

  private async read(msg: JsMsg): Promise<SourceEvent[] | undefined> {
    const stored = await this.d.ctx.nats.jsm.direct.getMessage(this.d.ctx.nats.names.budgetEventsStream, {
      seq: msg.seq,
    });
    if (!stored) throw new Error(`commit #${msg.seq} could not be read`);
    const decoded = this.registry.decodeCommit(stored.data);
    return decoded.ok ? decoded.value.filter((e) => SOURCE_EVENT_TYPES.has(e.type)) : undefined;
  }

  private async deadLetter(msg: JsMsg, detail: string): Promise<void> {
    await publishDeadLetter(
      this.d.ctx.nats.js,
      this.d.ctx.nats.names,
      {
        source: 'webhook-fanout',
        reason: 'handler_rejected',
        detail,
        originalSubject: msg.subject,
        originalStream: msg.info.stream,
        originalSequence: msg.seq,
        deliveries: msg.info.deliveryCount,
        data: new Uint8Array(),
      },
      this.d.ctx.config.nats.publish_timeout_ms,
    );
    msg.term();
  }

  private async enqueue(event: SourceEvent, subject: string): Promise<void> {
    const message = webhookOf(event);
    if (!message) return;
    const tenantId = await this.tenants.tenantOf(subject);
    // An endpoint hears of what happened after it was registered, never of the history before it.
    const endpoints = (await this.d.endpoints.list(tenantId)).filter(
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
      await this.d.ctx.nats.js.publish(this.d.names.outboxSubject, JSON.stringify(out), {
        msgID: `${message.webhook_id}:${endpoint.endpoint_id}`,
        headers: hdrs,
        timeout: this.d.ctx.config.nats.publish_timeout_ms,
      });
    }
  }
}
