// The directory: who may operate Tally. Tenants, the operator keys of each tenant, and the
// authority's signing keys are ledger facts like everything else, so a replay rebuilds
// them and every replica folds the same view. Time arrives on the command.

export type OperatorRole = 'admin' | 'issuer' | 'reader';

/** The tenant that always exists, with no event: capabilities from before tenants belong to it. */
export const DEFAULT_TENANT_ID = 'default';

export const TENANT_ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;

export interface OperatorKeyRecord {
  readonly key_id: string;
  readonly tenant_id: string;
  readonly role: OperatorRole;
  /** `sha256:<hex>` of the whole key; the key itself is never recorded. */
  readonly key_hash: string;
  readonly created_at_ms: number;
  readonly expires_at_ms?: number;
  readonly deleted_at_ms?: number;
}

export interface TenantState {
  readonly tenant_id: string;
  readonly created: boolean;
  readonly display_name?: string;
  readonly created_at_ms?: number;
  readonly keys: ReadonlyMap<string, OperatorKeyRecord>;
}

export type SigningKeyStatus = 'registered' | 'active' | 'previous' | 'retired';

export interface SigningKeyRecord {
  readonly key_id: string;
  readonly algorithm: 'ed25519';
  /** base64url of the raw 32-byte Ed25519 public key. */
  readonly public_key: string;
  readonly status: SigningKeyStatus;
  readonly registered_at_ms: number;
  readonly activated_at_ms?: number;
  readonly retired_at_ms?: number;
}

export interface SigningKeysState {
  readonly keys: ReadonlyMap<string, SigningKeyRecord>;
  readonly active_key_id?: string;
}

export interface Rejection {
  readonly code:
    | 'tenant_exists'
    | 'tenant_unknown'
    | 'tenant_invalid'
    | 'key_unknown'
    | 'keys_full'
    | 'signing_key_unknown'
    | 'signing_key_conflict'
    | 'signing_key_retired'
    | 'signing_key_active';
  readonly message: string;
}
