// Tenant webhooks in the authority (ADR 0040): the endpoint registry every replica serves,
// the reads of delivery attempts and dead letters, and, on replicas that deliver, the
// fan-out from the ledger into the outbox and the outbox's delivery worker.
import { createHash } from 'node:crypto';
import type { Ed25519Signer } from '@tally/budget-infrastructure';
import type { BackgroundTask, HostContext } from '@tally/platform-app';
import { JetStreamEventStore } from '@tally/platform-jetstream';
import { WebhookDelivery } from './webhook-delivery.js';
import { WebhookEndpoints } from './webhook-endpoints.js';
import { webhookEventRegistry } from './webhook-events.js';
import { WebhookFanout } from './webhook-fanout.js';
import type { UrlPolicy } from './webhook-policy.js';
import { checkTarget, systemLookup, targetPolicyOf, type TargetCheck } from './webhook-targets.js';
import { provisionWebhookStreams, webhookNames, type WebhookNames } from './webhook-streams.js';

/** Records one listing reads at most; a longer history is read by its newest entries. */
export const WEBHOOK_LOG_LOAD_MAX = 100_000;

export interface WebhooksRuntime {
  readonly names: WebhookNames;
  readonly endpoints: WebhookEndpoints;
  readonly urlPolicy: UrlPolicy;
  /** Where a call to this URL may connect, or why it may not (ADR 0053): at registration and at every delivery. */
  checkTarget(url: URL): Promise<TargetCheck>;
  /** Attempts or dead letters of a tenant, oldest first. */
  log(subject: string): Promise<Record<string, unknown>[]>;
  provision(): Promise<void>;
  startDelivery(): Promise<BackgroundTask[]>;
}

/** The key endpoint secrets derive from: configured, or (local stack) derived from the signing key, whose Ed25519 signatures are deterministic. */
function secretKeyOf(ctx: HostContext, signer: Ed25519Signer): Buffer {
  const configured = ctx.config.webhooks.secret_key;
  if (configured) return Buffer.from(configured, 'base64url');
  const signature = signer.sign({ purpose: 'tally webhook secret key', version: 1 });
  return createHash('sha256').update(Buffer.from(signature, 'base64url')).digest();
}

export function buildWebhooksRuntime(ctx: HostContext, signer: Ed25519Signer): WebhooksRuntime {
  const names = webhookNames(ctx.nats.names);
  const store = new JetStreamEventStore(ctx.nats.js, ctx.nats.jsm, {
    stream: names.eventsStream,
    registry: webhookEventRegistry(),
    publishTimeoutMs: ctx.config.nats.publish_timeout_ms,
    loadEventsMax: WEBHOOK_LOG_LOAD_MAX,
    loadIdleTimeoutMs: 5_000,
  });
  const endpoints = new WebhookEndpoints({
    store,
    names,
    secretKey: secretKeyOf(ctx, signer),
    endpointsPerTenantMax: ctx.config.webhooks.endpoints_per_tenant_max,
    appendAttemptsMax: 16,
    cachedTenantsMax: 10_000,
    nowMs: () => Date.now(),
  });
  const targets = targetPolicyOf(ctx.config.webhooks);
  const target = (url: URL) => checkTarget(url, targets, systemLookup, ctx.config.webhooks.timeout_ms);
  return {
    names,
    endpoints,
    urlPolicy: { allowHttpLoopback: ctx.config.webhooks.allow_http_loopback },
    checkTarget: target,
    log: async (subject) => (await store.load(subject)).events.map((e) => ({ ...e.event.payload })),
    // With nats.provision: check an operator created them (`tally provision`), and this user may not.
    provision: async () => {
      if (ctx.config.nats.provision === 'auto') await provisionWebhookStreams(ctx.nats.jsm, names, ctx.config);
    },
    startDelivery: async () => {
      if (!ctx.config.webhooks.deliver) return [];
      const fanout = await new WebhookFanout({ ctx, names, endpoints }).start();
      const delivery = await new WebhookDelivery({ ctx, names, endpoints, checkTarget: target }).start();
      return [
        { name: 'webhook-fanout', stop: () => fanout.stop() },
        { name: 'webhook-delivery', stop: () => delivery.stop() },
      ];
    },
  };
}
