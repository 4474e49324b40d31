// Proves the directory's decisions: tenants are created once (default always exists), keys
// belong to an existing tenant and are bounded, a deleted key stays deleted, and exactly one
// signing key is active while every unretired key stays registered for verification.
import { describe, expect, it } from '@jest/globals';
import {
  decideSigningKeys,
  decideTenant,
  evolveSigningKeys,
  evolveTenant,
  initialSigningKeys,
  initialTenant,
  type SigningKeyCommand,
  type SigningKeysState,
  type TenantCommand,
  type TenantState,
} from '../src/index.js';

function runTenant(commands: TenantCommand[], tenantId = 'acme'): { state: TenantState; rejections: string[] } {
  let state = initialTenant(tenantId);
  const rejections: string[] = [];
  for (const command of commands) {
    const decision = decideTenant(command, state);
    if ('rejection' in decision) rejections.push(decision.rejection.code);
    else state = decision.events.reduce(evolveTenant, state);
  }
  return { state, rejections };
}

const createKey = (key_id: string, keys_max = 10): TenantCommand => ({
  type: 'CreateOperatorKey',
  tenant_id: 'acme',
  key_id,
  key_hash: `sha256:${'0'.repeat(64)}`,
  role: 'issuer',
  now_ms: 1,
  keys_max,
});

describe('tenants and operator keys', () => {
  it('the default tenant exists without an event, and cannot be created again', () => {
    expect(initialTenant('default').created).toBe(true);
    expect(runTenant([{ type: 'CreateTenant', tenant_id: 'default', now_ms: 1 }], 'default').rejections).toEqual([
      'tenant_exists',
    ]);
  });

  it('a tenant is created once; a key needs its tenant; an invalid id is refused', () => {
    expect(runTenant([createKey('key_0000000000000001')]).rejections).toEqual(['tenant_unknown']);
    const { state, rejections } = runTenant([
      { type: 'CreateTenant', tenant_id: 'acme', now_ms: 1 },
      { type: 'CreateTenant', tenant_id: 'acme', now_ms: 2 },
      createKey('key_0000000000000001'),
    ]);
    expect(rejections).toEqual(['tenant_exists']);
    expect([...state.keys.keys()]).toEqual(['key_0000000000000001']);
    expect(runTenant([{ type: 'CreateTenant', tenant_id: 'Bad.Id', now_ms: 1 }], 'Bad.Id').rejections).toEqual([
      'tenant_invalid',
    ]);
  });

  it('a tenant holds at most keys_max keys, deleted ones included', () => {
    const { rejections } = runTenant([
      { type: 'CreateTenant', tenant_id: 'acme', now_ms: 1 },
      createKey('key_0000000000000001', 2),
      createKey('key_0000000000000002', 2),
      createKey('key_0000000000000003', 2),
    ]);
    expect(rejections).toEqual(['keys_full']);
  });

  it('a deleted key stays deleted, and deleting it again changes nothing', () => {
    const del: TenantCommand = {
      type: 'DeleteOperatorKey',
      tenant_id: 'acme',
      key_id: 'key_0000000000000001',
      now_ms: 9,
    };
    const { state, rejections } = runTenant([
      { type: 'CreateTenant', tenant_id: 'acme', now_ms: 1 },
      createKey('key_0000000000000001'),
      del,
    ]);
    expect(rejections).toEqual([]);
    expect(state.keys.get('key_0000000000000001')?.deleted_at_ms).toBe(9);
    expect(decideTenant(del, state)).toEqual({ events: [] });
    expect(decideTenant({ ...del, key_id: 'key_ffffffffffffffff' }, state)).toMatchObject({
      rejection: { code: 'key_unknown' },
    });
  });
});

function runKeys(commands: SigningKeyCommand[]): { state: SigningKeysState; rejections: string[] } {
  let state = initialSigningKeys();
  const rejections: string[] = [];
  for (const command of commands) {
    const decision = decideSigningKeys(command, state);
    if ('rejection' in decision) rejections.push(decision.rejection.code);
    else state = decision.events.reduce(evolveSigningKeys, state);
  }
  return { state, rejections };
}

const register = (key_id: string, public_key = 'A'.repeat(43)): SigningKeyCommand => ({
  type: 'RegisterSigningKey',
  key_id,
  public_key,
  now_ms: 1,
});

describe('signing keys', () => {
  it('rotation: the new key is active, the old one stays registered (previous) for verification', () => {
    const { state, rejections } = runKeys([
      register('k1'),
      { type: 'ActivateSigningKey', key_id: 'k1', now_ms: 2 },
      register('k2', 'B'.repeat(43)),
      { type: 'ActivateSigningKey', key_id: 'k2', now_ms: 3 },
    ]);
    expect(rejections).toEqual([]);
    expect(state.active_key_id).toBe('k2');
    expect(state.keys.get('k1')?.status).toBe('previous');
    expect(state.keys.get('k2')?.status).toBe('active');
  });

  it('registering is idempotent, but one key id never gets another public key', () => {
    const { state, rejections } = runKeys([register('k1'), register('k1'), register('k1', 'C'.repeat(43))]);
    expect(rejections).toEqual(['signing_key_conflict']);
    expect(state.keys.size).toBe(1);
  });

  it('the active key cannot be retired; a retired key cannot be activated again', () => {
    const { rejections, state } = runKeys([
      register('k1'),
      register('k2', 'B'.repeat(43)),
      { type: 'ActivateSigningKey', key_id: 'k1', now_ms: 2 },
      { type: 'RetireSigningKey', key_id: 'k1', now_ms: 3 },
      { type: 'RetireSigningKey', key_id: 'k2', now_ms: 4 },
      { type: 'ActivateSigningKey', key_id: 'k2', now_ms: 5 },
      { type: 'ActivateSigningKey', key_id: 'k9', now_ms: 6 },
    ]);
    expect(rejections).toEqual(['signing_key_active', 'signing_key_retired', 'signing_key_unknown']);
    expect(state.keys.get('k2')?.status).toBe('retired');
  });
});
