// Each tenant's webhook endpoints, an aggregate of its own subject in the webhook events
// stream: registered and deleted with optimistic concurrency, read fresh (a read asks the
// server for the subject's last sequence and reloads only when it moved). The signing secret
// is derived from the installation's webhook key and the endpoint's id, so it is never
// stored anywhere and every replica computes the same one (ADR 0040).
import { createHmac, randomBytes } from 'node:crypto';
import { decideAndAppend, type EventStore } from '@tally/eventing';
import type { WebhookEndpointRegistered } from './webhook-events.js';
import type { WebhookNames } from './webhook-streams.js';
import type { WebhookEventType } from './webhook-policy.js';

export interface WebhookEndpoint {
  readonly tenant_id: string;
  readonly endpoint_id: string;
  readonly url: string;
  readonly events: readonly WebhookEventType[];
  readonly registered_at_ms: number;
}

export type EndpointRefusal = { readonly code: 'endpoints_full' | 'endpoint_unknown'; readonly message: string };

interface Tenant {
  readonly sequence: number;
  readonly endpoints: ReadonlyMap<string, WebhookEndpoint>;
}

export interface WebhookEndpointsOptions {
  readonly store: EventStore & { lastSequence(subject: string): Promise<number> };
  readonly names: WebhookNames;
  /** At least 32 bytes, the same on every replica. */
  readonly secretKey: Buffer;
  readonly endpointsPerTenantMax: number;
  readonly appendAttemptsMax: number;
  /** Tenants kept in memory; the least recently read is dropped first. */
  readonly cachedTenantsMax: number;
  readonly nowMs: () => number;
}

export class WebhookEndpoints {
  private readonly cache = new Map<string, Tenant>();

  constructor(private readonly o: WebhookEndpointsOptions) {
    if (o.secretKey.length < 32) throw new Error('the webhook secret key must be at least 32 bytes');
  }

  /** `whsec_` and 32 bytes in base64, the Standard Webhooks form. */
  secretOf(tenantId: string, endpointId: string): string {
    const mac = createHmac('sha256', this.o.secretKey).update(`tally/webhook-secret/v1/${tenantId}/${endpointId}`);
    return `whsec_${mac.digest('base64')}`;
  }

  async register(
    tenantId: string,
    url: string,
    events: readonly WebhookEventType[],
  ): Promise<{ ok: true; endpoint: WebhookEndpoint; secret: string } | { ok: false; rejection: EndpointRefusal }> {
    const endpointId = `wh_${randomBytes(8).toString('hex')}`;
    const at = this.o.nowMs();
    const data: WebhookEndpointRegistered = {
      tenant_id: tenantId,
      endpoint_id: endpointId,
      url,
      events: [...events],
      at_ms: at,
    };
    const out = await decideAndAppend({
      store: this.o.store,
      subject: this.o.names.endpointsSubject(tenantId),
      load: () => this.loadView(tenantId),
      decide: (state) =>
        state.endpoints.size >= this.o.endpointsPerTenantMax
          ? { events: [], result: false }
          : {
              events: [this.event('WebhookEndpointRegistered', `webhook:${endpointId}:registered`, tenantId, data)],
              result: true,
            },
      maxAttempts: this.o.appendAttemptsMax,
    });
    if (!out.result)
      return {
        ok: false,
        rejection: {
          code: 'endpoints_full',
          message: `tenant ${tenantId} has ${this.o.endpointsPerTenantMax} webhook endpoints already`,
        },
      };
    const endpoint = { tenant_id: tenantId, endpoint_id: endpointId, url, events: [...events], registered_at_ms: at };
    return { ok: true, endpoint, secret: this.secretOf(tenantId, endpointId) };
  }

  async remove(
    tenantId: string,
    endpointId: string,
  ): Promise<{ ok: true } | { ok: false; rejection: EndpointRefusal }> {
    const out = await decideAndAppend({
      store: this.o.store,
      subject: this.o.names.endpointsSubject(tenantId),
      load: () => this.loadView(tenantId),
      decide: (state) =>
        state.endpoints.has(endpointId)
          ? {
              events: [
                this.event('WebhookEndpointDeleted', `webhook:${endpointId}:deleted`, tenantId, {
                  tenant_id: tenantId,
                  endpoint_id: endpointId,
                  at_ms: this.o.nowMs(),
                }),
              ],
              result: true,
            }
          : { events: [], result: false },
      maxAttempts: this.o.appendAttemptsMax,
    });
    if (!out.result)
      return {
        ok: false,
        rejection: { code: 'endpoint_unknown', message: `webhook endpoint ${endpointId} is unknown` },
      };
    return { ok: true };
  }

  /** The tenant's live endpoints as the stream holds them now. */
  async list(tenantId: string): Promise<WebhookEndpoint[]> {
    return [...(await this.fresh(tenantId)).endpoints.values()];
  }

  async endpoint(tenantId: string, endpointId: string): Promise<WebhookEndpoint | undefined> {
    return (await this.fresh(tenantId)).endpoints.get(endpointId);
  }

  private async fresh(tenantId: string): Promise<Tenant> {
    const cached = this.cache.get(tenantId);
    const last = await this.o.store.lastSequence(this.o.names.endpointsSubject(tenantId));
    if (cached && cached.sequence === last) {
      this.remember(tenantId, cached);
      return cached;
    }
    const view = await this.loadView(tenantId);
    return { sequence: view.lastSequence, endpoints: view.state.endpoints };
  }

  private async loadView(tenantId: string): Promise<{ state: Tenant; lastSequence: number }> {
    const loaded = await this.o.store.load(this.o.names.endpointsSubject(tenantId));
    const endpoints = new Map<string, WebhookEndpoint>();
    for (const stored of loaded.events) {
      const p = stored.event.payload;
      if (stored.event.type === 'WebhookEndpointRegistered') {
        const r = p as unknown as WebhookEndpointRegistered;
        endpoints.set(r.endpoint_id, {
          tenant_id: r.tenant_id,
          endpoint_id: r.endpoint_id,
          url: r.url,
          events: r.events,
          registered_at_ms: r.at_ms,
        });
      } else if (stored.event.type === 'WebhookEndpointDeleted') endpoints.delete(String(p['endpoint_id']));
    }
    const tenant = { sequence: loaded.lastSequence, endpoints };
    this.remember(tenantId, tenant);
    return { state: tenant, lastSequence: loaded.lastSequence };
  }

  private remember(tenantId: string, tenant: Tenant): void {
    this.cache.delete(tenantId);
    this.cache.set(tenantId, tenant);
    if (this.cache.size > this.o.cachedTenantsMax) this.cache.delete(this.cache.keys().next().value!);
  }

  private event(type: string, eventId: string, tenantId: string, payload: object) {
    return {
      eventId,
      type,
      aggregateId: tenantId,
      occurredAt: new Date(this.o.nowMs()).toISOString(),
      payload: payload as Record<string, unknown>,
    };
  }
}
