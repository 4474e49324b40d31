// The outbox's consumer: one durable pull consumer on the outbox work queue, shared by every
// replica, so each message is worked by one replica at a time. Every call is recorded as a
// WebhookAttempted fact before the message is settled; a failure is retried with exponential
// backoff and jitter (nak with delay) up to webhooks.attempts_max, then recorded as
// WebhookDeadLettered (listed by GET /v1/tenants/{id}/webhooks/dead-letters) and terminated.
// A replica killed mid-call leaves the message unacknowledged: it comes back after ack_wait,
// and the next call carries the same webhook-id (ADR 0040). Each delivery checks its target
// again and connects only where the check allowed; a target now refused is dead-lettered
// without a call, and what is recorded of a failure is a coarse code (ADR 0053).
import type { JetStreamClient, JsMsg } from '@nats-io/jetstream';
import { validatePlain } from '@tally/contracts';
import { webhookMetrics, type HostContext, type WebhookMetrics } from '@tally/platform-app';
import { ensureConsumer, publishDeadLetter } from '@tally/platform-jetstream';
import type { WebhookEndpoints } from './webhook-endpoints.js';
import {
  WebhookOutboxMessageDto,
  webhookEventRegistry,
  type WebhookAttempted,
  type WebhookDeadLettered,
  type WebhookOutboxMessage,
} from './webhook-events.js';
import { retryDelayMs, urlRefusal, type RetryPolicy } from './webhook-policy.js';
import { callWebhook, failureReason, type CallResult } from './webhook-sender.js';
import type { WebhookNames } from './webhook-streams.js';
import type { TargetCheck } from './webhook-targets.js';

/** Beyond the call's own timeout, how long the server waits before it hands an unsettled message to another replica. */
const ACK_WAIT_MARGIN_MS = 5_000;
const FETCH_EXPIRES_MS = 5_000;
const FETCH_RETRY_DELAY_MS = 1_000;
const STOP_TIMEOUT_MS = 15_000;
/** How often the outbox's backlog is read for tally_webhook_deliveries_pending. */
const PENDING_READ_INTERVAL_MS = 5_000;

export interface DeliveryDeps {
  readonly ctx: HostContext;
  readonly names: WebhookNames;
  readonly endpoints: WebhookEndpoints;
  /** Where a call to this URL may connect, or why it may not (ADR 0053). */
  readonly checkTarget: (url: URL) => Promise<TargetCheck>;
}

type Consumer = Awaited<ReturnType<JetStreamClient['consumers']['get']>>;

export class WebhookDelivery {
  private stopping = false;
  private readonly inFlight = new Set<Promise<void>>();
  private wake: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private readonly retry: RetryPolicy;
  private readonly registry = webhookEventRegistry();
  private readonly metrics: WebhookMetrics;
  private pendingReadAtMs = 0;

  constructor(private readonly d: DeliveryDeps) {
    const w = d.ctx.config.webhooks;
    this.retry = { attemptsMax: w.attempts_max, retryBaseMs: w.retry_base_ms, retryMaxMs: w.retry_max_ms };
    this.metrics = webhookMetrics(d.ctx.metrics.registry);
  }

  async start(): Promise<this> {
    const w = this.d.ctx.config.webhooks;
    // With nats.provision: check an operator created the consumer; this user only pulls from it.
    if (this.d.ctx.config.nats.provision === 'auto')
      await ensureConsumer(this.d.ctx.nats.jsm, {
        stream: this.d.names.outboxStream,
        durable: this.d.names.deliveryDurable,
        filterSubject: this.d.names.outboxSubject,
        ackWaitMs: w.timeout_ms + ACK_WAIT_MARGIN_MS,
        // One spare delivery: a message whose last call crashed is dead-lettered without another call.
        deliveriesMax: w.attempts_max + 1,
        ackPendingMax: 4_096,
      });
    const consumer = await this.d.ctx.nats.js.consumers.get(this.d.names.outboxStream, this.d.names.deliveryDurable);
    this.loop = this.run(consumer);
    return this;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.loop;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, STOP_TIMEOUT_MS)));
    await Promise.race([Promise.allSettled([...this.inFlight]), timeout]);
    clearTimeout(timer);
  }

  private async run(consumer: Consumer): Promise<void> {
    const concurrency = this.d.ctx.config.webhooks.concurrency;
    while (!this.stopping) {
      const free = concurrency - this.inFlight.size;
      if (free <= 0) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        continue;
      }
      try {
        const batch = await consumer.fetch({ max_messages: free, expires: FETCH_EXPIRES_MS });
        for await (const msg of batch) this.dispatch(msg);
        await this.readPending(consumer);
      } catch (error) {
        if (this.stopping) break;
        this.log('warn', 'webhook outbox fetch failed; retrying', { error: String(error) });
        await new Promise((r) => setTimeout(r, FETCH_RETRY_DELAY_MS));
      }
    }
  }

  /** The outbox's backlog (waiting and in flight), read at most every PENDING_READ_INTERVAL_MS. */
  private async readPending(consumer: Consumer): Promise<void> {
    if (Date.now() - this.pendingReadAtMs < PENDING_READ_INTERVAL_MS) return;
    this.pendingReadAtMs = Date.now();
    const info = await consumer.info().catch(() => undefined);
    if (info) this.metrics.pending.set(info.num_pending + info.num_ack_pending);
  }

  /** One try in the delivery series: its outcome, why it failed, and how long an answer took. */
  private observe(type: string, r: CallResult): void {
    const outcome = r.ok ? 'delivered' : r.status === undefined ? 'unreachable' : 'failed';
    this.metrics.deliveries.inc({ event: type, outcome });
    if (r.status !== undefined) this.metrics.latency.observe({ event: type }, r.durationMs / 1000);
    if (r.ok) return;
    const reason = failureReason(r);
    this.metrics.failures.inc({ event: type, reason });
  }

  private dispatch(msg: JsMsg): void {
    if (this.stopping) {
      msg.nak();
      return;
    }
    const task = this.process(msg).catch((error: unknown) => {
      // Recording failed (NATS away, say): the call is made again later, with the same webhook-id.
      this.log('warn', 'webhook delivery not recorded; it will be retried', { error: String(error) });
      msg.nak(this.retry.retryBaseMs);
    });
    this.inFlight.add(task);
    void task.finally(() => {
      this.inFlight.delete(task);
      const wake = this.wake;
      this.wake = undefined;
      wake?.();
    });
  }

  private async process(msg: JsMsg): Promise<void> {
    const decoded = this.decode(msg);
    if (!decoded) return;
    const attempt = msg.info.deliveryCount;
    const endpoint = await this.d.endpoints.endpoint(decoded.tenant_id, decoded.endpoint_id);
    if (!endpoint) return this.giveUp(msg, decoded, attempt - 1, 'endpoint_deleted');
    const startedMs = Date.now();
    // Checked again at every delivery: the configuration or the name's DNS may have changed since registration.
    const target = urlRefusal(endpoint.url, { allowHttpLoopback: this.d.ctx.config.webhooks.allow_http_loopback })
      ? ({ ok: false, code: 'refused_target' } as const)
      : await this.d.checkTarget(new URL(endpoint.url));
    if (!target.ok && target.code === 'refused_target') {
      this.metrics.failures.inc({ event: decoded.type, reason: 'refused_url' });
      return this.giveUp(msg, decoded, attempt - 1, 'url_refused', 'refused_target');
    }
    if (attempt > this.retry.attemptsMax)
      return this.giveUp(msg, decoded, attempt - 1, 'attempts_exhausted', 'interrupted');
    const timeoutMs = this.d.ctx.config.webhooks.timeout_ms;
    const result: CallResult = target.ok
      ? await callWebhook({
          url: endpoint.url,
          addresses: target.addresses,
          secret: this.d.endpoints.secretOf(decoded.tenant_id, decoded.endpoint_id),
          webhookId: decoded.webhook_id,
          body: decoded.body,
          // The name's lookup counts against the call's bound, so ack_wait still covers the whole try.
          timeoutMs: Math.max(1, timeoutMs - (Date.now() - startedMs)),
          now: new Date(),
        })
      : { ok: false, error: 'dns_error', durationMs: Date.now() - startedMs };
    this.observe(decoded.type, result);
    const retryIn = result.ok ? undefined : retryDelayMs(attempt, this.retry, Math.random());
    await this.recordAttempt(decoded, attempt, result, retryIn);
    if (result.ok) {
      await msg.ackAck({ timeout: this.d.ctx.config.nats.publish_timeout_ms }).catch(() => false);
    } else if (retryIn === undefined) {
      await this.giveUp(msg, decoded, attempt, 'attempts_exhausted', result.error);
    } else {
      msg.nak(retryIn);
    }
  }

  /** A message that does not decode can never be delivered: it goes to the dead-letter stream, then away. */
  private decode(msg: JsMsg): WebhookOutboxMessage | undefined {
    let plain: unknown;
    try {
      plain = JSON.parse(Buffer.from(msg.data).toString('utf8'));
    } catch {
      plain = undefined;
    }
    const decoded = validatePlain(WebhookOutboxMessageDto, plain);
    if (decoded.ok) return decoded.value;
    void publishDeadLetter(
      this.d.ctx.nats.js,
      this.d.ctx.nats.names,
      {
        source: 'webhook-delivery',
        reason: 'validation_failed',
        detail: decoded.errors.map((e) => `${e.field}: ${e.message}`).join('; '),
        errors: decoded.errors,
        originalSubject: msg.subject,
        originalStream: msg.info.stream,
        originalSequence: msg.seq,
        deliveries: msg.info.deliveryCount,
        data: msg.data,
      },
      this.d.ctx.config.nats.publish_timeout_ms,
    ).then(
      () => msg.term(),
      () => msg.nak(this.retry.retryBaseMs),
    );
    return undefined;
  }

  private async recordAttempt(m: WebhookOutboxMessage, attempt: number, r: CallResult, retryIn?: number) {
    const fact: WebhookAttempted = {
      ...delivery(m),
      attempt,
      outcome: r.ok ? 'delivered' : 'failed',
      ...(r.status === undefined ? {} : { status: r.status }),
      ...(r.error === undefined ? {} : { error: r.error }),
      duration_ms: r.durationMs,
      ...(retryIn === undefined ? {} : { retry_in_ms: retryIn }),
      at_ms: Date.now(),
    };
    await this.publish(
      this.d.names.attemptsSubject(m.tenant_id),
      'WebhookAttempted',
      `${m.webhook_id}:${m.endpoint_id}:attempt:${attempt}`,
      fact,
    );
    this.log(r.ok ? 'debug' : 'info', r.ok ? 'webhook delivered' : 'webhook attempt failed', {
      webhook_id: m.webhook_id,
      endpoint_id: m.endpoint_id,
      attempt,
      ...(r.status === undefined ? {} : { status: r.status }),
      ...(r.error === undefined ? {} : { error: r.error }),
      ...(r.cause === undefined ? {} : { cause: r.cause }),
    });
  }

  private async giveUp(
    msg: JsMsg,
    m: WebhookOutboxMessage,
    attempts: number,
    reason: WebhookDeadLettered['reason'],
    lastError?: string,
  ): Promise<void> {
    const fact: WebhookDeadLettered = {
      ...delivery(m),
      attempts,
      reason,
      ...(lastError === undefined ? {} : { last_error: lastError.slice(0, 256) }),
      message_at_ms: m.at_ms,
      body: m.body,
      at_ms: Date.now(),
    };
    await this.publish(
      this.d.names.deadSubject(m.tenant_id),
      'WebhookDeadLettered',
      `${m.webhook_id}:${m.endpoint_id}:dead`,
      fact,
    );
    this.log('warn', 'webhook dead-lettered', {
      webhook_id: m.webhook_id,
      endpoint_id: m.endpoint_id,
      reason,
      attempts,
    });
    msg.term();
  }

  private async publish(subject: string, type: string, eventId: string, payload: object): Promise<void> {
    const tenantId = (payload as { tenant_id: string }).tenant_id;
    const data = this.registry.encode({
      eventId,
      type,
      aggregateId: tenantId,
      occurredAt: new Date().toISOString(),
      payload: payload as Record<string, unknown>,
    });
    await this.d.ctx.nats.js.publish(subject, data, {
      msgID: eventId,
      timeout: this.d.ctx.config.nats.publish_timeout_ms,
    });
  }

  private log(level: 'debug' | 'info' | 'warn', msg: string, fields: Record<string, unknown>): void {
    this.d.ctx.logger.event(level, msg, fields);
  }
}

function delivery(m: WebhookOutboxMessage) {
  return {
    tenant_id: m.tenant_id,
    endpoint_id: m.endpoint_id,
    webhook_id: m.webhook_id,
    type: m.type,
    source_event_id: m.source_event_id,
  };
}
