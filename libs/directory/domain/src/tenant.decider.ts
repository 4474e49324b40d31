// decide/evolve of one tenant: its creation and its operator keys.
import type { OperatorKeyCreated, TenantEvent } from './events.js';
import { DEFAULT_TENANT_ID, TENANT_ID_PATTERN, type OperatorRole, type Rejection, type TenantState } from './model.js';

export type TenantCommand =
  | {
      readonly type: 'CreateTenant';
      readonly tenant_id: string;
      readonly display_name?: string;
      readonly now_ms: number;
    }
  | {
      readonly type: 'CreateOperatorKey';
      readonly tenant_id: string;
      readonly key_id: string;
      readonly key_hash: string;
      readonly role: OperatorRole;
      readonly expires_at_ms?: number;
      readonly now_ms: number;
      /** Keys a tenant may hold, deleted ones included: the view stays bounded. */
      readonly keys_max: number;
    }
  | {
      readonly type: 'DeleteOperatorKey';
      readonly tenant_id: string;
      readonly key_id: string;
      readonly now_ms: number;
    };

export type TenantDecision = { readonly events: TenantEvent[] } | { readonly rejection: Rejection };

export function initialTenant(tenantId: string): TenantState {
  return { tenant_id: tenantId, created: tenantId === DEFAULT_TENANT_ID, keys: new Map() };
}

export function decideTenant(command: TenantCommand, state: TenantState): TenantDecision {
  switch (command.type) {
    case 'CreateTenant':
      if (!TENANT_ID_PATTERN.test(command.tenant_id))
        return reject('tenant_invalid', `tenant id must match ${TENANT_ID_PATTERN.source}`);
      if (state.created) return reject('tenant_exists', `tenant ${command.tenant_id} exists`);
      return {
        events: [
          {
            type: 'TenantCreated',
            event_id: `tenant:${command.tenant_id}:created`,
            data: {
              tenant_id: command.tenant_id,
              display_name: command.display_name ?? command.tenant_id,
              at_ms: command.now_ms,
            },
          },
        ],
      };
    case 'CreateOperatorKey':
      return createKey(command, state);
    case 'DeleteOperatorKey': {
      const key = state.keys.get(command.key_id);
      if (!key) return reject('key_unknown', `key ${command.key_id} is unknown`);
      // Deleting twice is the same fact: the second call changes nothing and succeeds.
      if (key.deleted_at_ms !== undefined) return { events: [] };
      return {
        events: [
          {
            type: 'OperatorKeyDeleted',
            event_id: `tenant:${command.tenant_id}:key:${command.key_id}:deleted`,
            data: { tenant_id: command.tenant_id, key_id: command.key_id, at_ms: command.now_ms },
          },
        ],
      };
    }
  }
}

function createKey(command: Extract<TenantCommand, { type: 'CreateOperatorKey' }>, state: TenantState): TenantDecision {
  if (!state.created) return reject('tenant_unknown', `tenant ${command.tenant_id} is unknown`);
  if (state.keys.has(command.key_id)) return reject('tenant_exists', `key ${command.key_id} exists`);
  if (state.keys.size >= command.keys_max)
    return reject('keys_full', `tenant ${command.tenant_id} holds ${command.keys_max} keys, the most it may`);
  const data: OperatorKeyCreated['data'] = {
    tenant_id: command.tenant_id,
    key_id: command.key_id,
    role: command.role,
    key_hash: command.key_hash,
    ...(command.expires_at_ms === undefined ? {} : { expires_at_ms: command.expires_at_ms }),
    at_ms: command.now_ms,
  };
  return {
    events: [{ type: 'OperatorKeyCreated', event_id: `tenant:${command.tenant_id}:key:${command.key_id}`, data }],
  };
}

export function evolveTenant(state: TenantState, event: TenantEvent): TenantState {
  switch (event.type) {
    case 'TenantCreated':
      return { ...state, created: true, display_name: event.data.display_name, created_at_ms: event.data.at_ms };
    case 'OperatorKeyCreated': {
      const keys = new Map(state.keys);
      const { at_ms, ...rest } = event.data;
      keys.set(rest.key_id, { ...rest, created_at_ms: at_ms });
      return { ...state, keys };
    }
    case 'OperatorKeyDeleted': {
      const key = state.keys.get(event.data.key_id);
      if (!key) throw new Error(`OperatorKeyDeleted for unknown key ${event.data.key_id}: the ledger is inconsistent`);
      const keys = new Map(state.keys);
      keys.set(key.key_id, { ...key, deleted_at_ms: event.data.at_ms });
      return { ...state, keys };
    }
  }
}

const reject = (code: Rejection['code'], message: string): TenantDecision => ({ rejection: { code, message } });
