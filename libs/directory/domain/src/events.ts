// The facts of the directory. Event ids are deterministic, so a retried append dedupes.
import type { OperatorRole } from './model.js';

interface Ev<T extends string, D> {
  readonly type: T;
  readonly event_id: string;
  readonly data: D;
}

export type TenantCreated = Ev<'TenantCreated', { tenant_id: string; display_name: string; at_ms: number }>;
export type OperatorKeyCreated = Ev<
  'OperatorKeyCreated',
  { tenant_id: string; key_id: string; role: OperatorRole; key_hash: string; expires_at_ms?: number; at_ms: number }
>;
export type OperatorKeyDeleted = Ev<'OperatorKeyDeleted', { tenant_id: string; key_id: string; at_ms: number }>;

export type TenantEvent = TenantCreated | OperatorKeyCreated | OperatorKeyDeleted;

export type SigningKeyRegistered = Ev<
  'SigningKeyRegistered',
  { key_id: string; algorithm: 'ed25519'; public_key: string; at_ms: number }
>;
export type SigningKeyActivated = Ev<'SigningKeyActivated', { key_id: string; at_ms: number }>;
export type SigningKeyRetired = Ev<'SigningKeyRetired', { key_id: string; at_ms: number }>;

export type SigningKeyEvent = SigningKeyRegistered | SigningKeyActivated | SigningKeyRetired;

export type DirectoryEvent = TenantEvent | SigningKeyEvent;

export const TENANT_EVENT_TYPES = ['TenantCreated', 'OperatorKeyCreated', 'OperatorKeyDeleted'] as const;
export const SIGNING_KEY_EVENT_TYPES = ['SigningKeyRegistered', 'SigningKeyActivated', 'SigningKeyRetired'] as const;
