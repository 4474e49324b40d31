// The directory's use cases: create a tenant, create and delete operator keys, register,
// activate and retire signing keys. Each one loads its aggregate, decides, appends with
// optimistic concurrency, and waits until this replica's view shows the result, so the next
// request through this replica already sees it (a deleted key fails at once here).
import type { EventMessage } from '@tally/contracts';
import {
  decideSigningKeys,
  decideTenant,
  evolveSigningKeys,
  evolveTenant,
  initialSigningKeys,
  initialTenant,
  type DirectoryEvent,
  type OperatorKeyRecord,
  type OperatorRole,
  type Rejection,
  type SigningKeyEvent,
  type SigningKeysState,
  type TenantEvent,
  type TenantState,
  TENANT_ID_PATTERN,
} from '@tally/directory-domain';
import { decideAndAppend, foldEvents, type EventStore } from '@tally/eventing';
import { newOperatorKey } from '@tally/platform-auth';
import { toDirectoryEvent } from './directory-state.js';
import type { DirectoryView } from './directory-view.js';

export interface DirectoryCommandsOptions {
  readonly store: EventStore;
  readonly view: DirectoryView;
  readonly tenantSubject: (tenantId: string) => string;
  readonly signingKeysSubject: string;
  readonly nowMs: () => number;
  readonly appendAttemptsMax: number;
  /** How long a command waits for this replica's view to show its own write. */
  readonly viewWaitMs: number;
  readonly keysPerTenantMax: number;
}

export type Outcome<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly rejection: Rejection };

export interface CreatedKey {
  readonly key_id: string;
  /** Shown once, to the caller of this command, and never again. */
  readonly key: string;
  readonly role: OperatorRole;
  readonly tenant_id: string;
  readonly expires_at_ms?: number;
}

export class DirectoryCommands {
  constructor(private readonly options: DirectoryCommandsOptions) {}

  async createTenant(tenantId: string, displayName: string | undefined): Promise<Outcome<TenantState>> {
    const now = this.options.nowMs();
    const cmd = {
      type: 'CreateTenant',
      tenant_id: tenantId,
      now_ms: now,
      ...(displayName ? { display_name: displayName } : {}),
    } as const;
    const out = await this.onTenant(tenantId, (state) => decideTenant(cmd, state));
    return out.ok ? { ok: true, value: out.value } : out;
  }

  async createKey(tenantId: string, role: OperatorRole, ttlSeconds: number | undefined): Promise<Outcome<CreatedKey>> {
    const now = this.options.nowMs();
    const fresh = newOperatorKey();
    const expires = ttlSeconds === undefined ? undefined : now + ttlSeconds * 1000;
    const out = await this.onTenant(tenantId, (state) =>
      decideTenant(
        {
          type: 'CreateOperatorKey',
          tenant_id: tenantId,
          key_id: fresh.key_id,
          key_hash: fresh.key_hash,
          role,
          ...(expires === undefined ? {} : { expires_at_ms: expires }),
          now_ms: now,
          keys_max: this.options.keysPerTenantMax,
        },
        state,
      ),
    );
    if (!out.ok) return out;
    return {
      ok: true,
      value: {
        key_id: fresh.key_id,
        key: fresh.key,
        role,
        tenant_id: tenantId,
        ...(expires === undefined ? {} : { expires_at_ms: expires }),
      },
    };
  }

  async deleteKey(tenantId: string, keyId: string): Promise<Outcome<OperatorKeyRecord>> {
    const out = await this.onTenant(tenantId, (state) =>
      decideTenant(
        { type: 'DeleteOperatorKey', tenant_id: tenantId, key_id: keyId, now_ms: this.options.nowMs() },
        state,
      ),
    );
    return out.ok ? { ok: true, value: out.value.keys.get(keyId)! } : out;
  }

  async registerSigningKey(keyId: string, publicKey: string): Promise<Outcome<SigningKeysState>> {
    return this.onSigningKeys((state) =>
      decideSigningKeys(
        { type: 'RegisterSigningKey', key_id: keyId, public_key: publicKey, now_ms: this.options.nowMs() },
        state,
      ),
    );
  }

  async activateSigningKey(keyId: string): Promise<Outcome<SigningKeysState>> {
    return this.onSigningKeys((state) =>
      decideSigningKeys({ type: 'ActivateSigningKey', key_id: keyId, now_ms: this.options.nowMs() }, state),
    );
  }

  async retireSigningKey(keyId: string): Promise<Outcome<SigningKeysState>> {
    return this.onSigningKeys((state) =>
      decideSigningKeys({ type: 'RetireSigningKey', key_id: keyId, now_ms: this.options.nowMs() }, state),
    );
  }

  private async onTenant(
    tenantId: string,
    decide: (state: TenantState) => { events: TenantEvent[] } | { rejection: Rejection },
  ): Promise<Outcome<TenantState>> {
    // An id that could never name a tenant is unknown, not a subject to build.
    if (!TENANT_ID_PATTERN.test(tenantId)) {
      const probe = decide(initialTenant(tenantId));
      if ('rejection' in probe) return { ok: false, rejection: probe.rejection };
      return { ok: false, rejection: { code: 'tenant_unknown', message: `tenant ${tenantId} is unknown` } };
    }
    return this.step(this.options.tenantSubject(tenantId), initialTenant(tenantId), evolveTenant, decide, tenantId);
  }

  private onSigningKeys(
    decide: (state: SigningKeysState) => { events: SigningKeyEvent[] } | { rejection: Rejection },
  ): Promise<Outcome<SigningKeysState>> {
    return this.step(this.options.signingKeysSubject, initialSigningKeys(), evolveSigningKeys, decide, 'signing-keys');
  }

  private async step<S, E extends DirectoryEvent>(
    subject: string,
    initial: S,
    evolve: (state: S, event: E) => S,
    decide: (state: S) => { events: E[] } | { rejection: Rejection },
    aggregateId: string,
  ): Promise<Outcome<S>> {
    const { store } = this.options;
    const done = await decideAndAppend<S, { state: S; rejection?: Rejection }>({
      store,
      subject,
      maxAttempts: this.options.appendAttemptsMax,
      load: async () => {
        const loaded = await store.load(subject);
        const state = foldEvents(initial, loaded.events, (s, stored) => evolve(s, toDirectoryEvent(stored) as E));
        return { state, lastSequence: loaded.lastSequence };
      },
      decide: (state) => {
        const decision = decide(state);
        if ('rejection' in decision) return { events: [], result: { state, rejection: decision.rejection } };
        const after = decision.events.reduce(evolve, state);
        return {
          events: decision.events.map((e) => toMessage(e, aggregateId, this.options.nowMs())),
          result: { state: after },
        };
      },
    });
    if (done.result.rejection) return { ok: false, rejection: done.result.rejection };
    if (done.append) await this.options.view.waitFor(done.append.lastSequence, this.options.viewWaitMs);
    return { ok: true, value: done.result.state };
  }
}

function toMessage(event: DirectoryEvent, aggregateId: string, nowMs: number): Omit<EventMessage, 'schemaVersion'> {
  return {
    eventId: event.event_id,
    type: event.type,
    aggregateId,
    occurredAt: new Date(nowMs).toISOString(),
    payload: event.data as unknown as Record<string, unknown>,
  };
}
