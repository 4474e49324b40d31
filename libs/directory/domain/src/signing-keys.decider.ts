// decide/evolve of the authority's signing keys. Every key that ever signed is registered
// with its public key, so tokens, proofs and receipts verify by key id for as long as the
// key is not retired; exactly one key is active, and it is the one new signatures use.
import type { SigningKeyEvent } from './events.js';
import type { Rejection, SigningKeysState } from './model.js';

export type SigningKeyCommand =
  | {
      readonly type: 'RegisterSigningKey';
      readonly key_id: string;
      readonly public_key: string;
      readonly now_ms: number;
    }
  | { readonly type: 'ActivateSigningKey'; readonly key_id: string; readonly now_ms: number }
  | { readonly type: 'RetireSigningKey'; readonly key_id: string; readonly now_ms: number };

export type SigningKeyDecision = { readonly events: SigningKeyEvent[] } | { readonly rejection: Rejection };

export function initialSigningKeys(): SigningKeysState {
  return { keys: new Map() };
}

export function decideSigningKeys(command: SigningKeyCommand, state: SigningKeysState): SigningKeyDecision {
  const key = state.keys.get(command.key_id);
  switch (command.type) {
    case 'RegisterSigningKey':
      if (key && key.public_key !== command.public_key)
        return reject('signing_key_conflict', `key ${command.key_id} is registered with another public key`);
      if (key) return { events: [] };
      return {
        events: [
          {
            type: 'SigningKeyRegistered',
            event_id: `signing-key:${command.key_id}`,
            data: {
              key_id: command.key_id,
              algorithm: 'ed25519',
              public_key: command.public_key,
              at_ms: command.now_ms,
            },
          },
        ],
      };
    case 'ActivateSigningKey':
      if (!key) return reject('signing_key_unknown', `signing key ${command.key_id} is not registered`);
      if (key.status === 'retired') return reject('signing_key_retired', `signing key ${command.key_id} is retired`);
      if (state.active_key_id === command.key_id) return { events: [] };
      return {
        events: [
          {
            type: 'SigningKeyActivated',
            event_id: `signing-key:${command.key_id}:activated:${command.now_ms}`,
            data: { key_id: command.key_id, at_ms: command.now_ms },
          },
        ],
      };
    case 'RetireSigningKey':
      if (!key) return reject('signing_key_unknown', `signing key ${command.key_id} is not registered`);
      if (state.active_key_id === command.key_id)
        return reject('signing_key_active', `signing key ${command.key_id} is active; activate another first`);
      if (key.status === 'retired') return { events: [] };
      return {
        events: [
          {
            type: 'SigningKeyRetired',
            event_id: `signing-key:${command.key_id}:retired`,
            data: { key_id: command.key_id, at_ms: command.now_ms },
          },
        ],
      };
  }
}

export function evolveSigningKeys(state: SigningKeysState, event: SigningKeyEvent): SigningKeysState {
  const keys = new Map(state.keys);
  switch (event.type) {
    case 'SigningKeyRegistered': {
      const { at_ms, ...rest } = event.data;
      keys.set(rest.key_id, { ...rest, status: 'registered', registered_at_ms: at_ms });
      return { ...state, keys };
    }
    case 'SigningKeyActivated': {
      const key = required(state, event.data.key_id);
      const previous = state.active_key_id === undefined ? undefined : state.keys.get(state.active_key_id);
      if (previous) keys.set(previous.key_id, { ...previous, status: 'previous' });
      keys.set(key.key_id, { ...key, status: 'active', activated_at_ms: event.data.at_ms });
      return { keys, active_key_id: key.key_id };
    }
    case 'SigningKeyRetired': {
      const key = required(state, event.data.key_id);
      keys.set(key.key_id, { ...key, status: 'retired', retired_at_ms: event.data.at_ms });
      return { ...state, keys };
    }
  }
}

function required(state: SigningKeysState, keyId: string) {
  const key = state.keys.get(keyId);
  if (!key) throw new Error(`signing key ${keyId} is not registered: the ledger is inconsistent`);
  return key;
}

const reject = (code: Rejection['code'], message: string): SigningKeyDecision => ({ rejection: { code, message } });
