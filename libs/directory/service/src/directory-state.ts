// The whole directory folded from its stream: every tenant with its keys, an index of
// keys by id for the per-request lookup, and the signing keys. Pure over recorded events.
import {
  DEFAULT_TENANT_ID,
  evolveSigningKeys,
  evolveTenant,
  initialSigningKeys,
  initialTenant,
  SIGNING_KEY_EVENT_TYPES,
  type DirectoryEvent,
  type OperatorKeyRecord,
  type SigningKeyEvent,
  type SigningKeysState,
  type TenantEvent,
  type TenantState,
} from '@tally/directory-domain';
import type { StoredEvent } from '@tally/eventing';

export interface DirectoryState {
  readonly tenants: Map<string, TenantState>;
  readonly keys: Map<string, OperatorKeyRecord>;
  signing: SigningKeysState;
}

export function emptyDirectory(): DirectoryState {
  return {
    tenants: new Map([[DEFAULT_TENANT_ID, initialTenant(DEFAULT_TENANT_ID)]]),
    keys: new Map(),
    signing: initialSigningKeys(),
  };
}

export function toDirectoryEvent(stored: StoredEvent): DirectoryEvent {
  return {
    type: stored.event.type,
    event_id: stored.event.eventId,
    data: stored.event.payload,
  } as unknown as DirectoryEvent;
}

const SIGNING = new Set<string>(SIGNING_KEY_EVENT_TYPES);

/** Applies one recorded event in place (the view is single-writer). */
export function applyDirectoryEvent(state: DirectoryState, event: DirectoryEvent): void {
  if (SIGNING.has(event.type)) {
    state.signing = evolveSigningKeys(state.signing, event as SigningKeyEvent);
    return;
  }
  const tenantEvent = event as TenantEvent;
  const tenantId = tenantEvent.data.tenant_id;
  const next = evolveTenant(state.tenants.get(tenantId) ?? initialTenant(tenantId), tenantEvent);
  state.tenants.set(tenantId, next);
  if (tenantEvent.type !== 'TenantCreated')
    state.keys.set(tenantEvent.data.key_id, next.keys.get(tenantEvent.data.key_id)!);
}
