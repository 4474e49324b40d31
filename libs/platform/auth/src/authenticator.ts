// Turns a presented credential into a principal, or refuses it. Each kind has its own
// verifier: the bootstrap admin key from config, operator keys from the directory (a live
// view of the ledger, so a deleted key fails on every replica), OIDC tokens against the
// configured issuers, and capability tokens against the authority's signing keys.
import { hashOfKey, keyMatches } from './operator-keys.js';
import type { Credential } from './credentials.js';
import type { CapabilityPrincipal, OperatorPrincipal, Role } from './principal.js';

/** Why a credential was refused; every reason is a 401 except `unavailable` (503: cannot tell now). */
export type RefusalReason = 'unknown' | 'expired' | 'revoked' | 'deleted' | 'invalid' | 'unavailable';

export interface Refusal {
  readonly refused: RefusalReason;
  /** Safe to show: never echoes the credential. */
  readonly message: string;
}

export const refusal = (refused: RefusalReason, message: string): Refusal => ({ refused, message });

export function isRefusal(value: unknown): value is Refusal {
  return typeof value === 'object' && value !== null && 'refused' in value;
}

export interface StoredOperatorKey {
  readonly key_id: string;
  readonly tenant_id: string;
  readonly role: Role;
  readonly key_hash: string;
  readonly expires_at_ms?: number;
  readonly deleted: boolean;
}

/** The operator keys the ledger knows, as this replica's live view of it sees them. */
export interface OperatorKeyLookup {
  /** Undefined when the view cannot vouch for being current: keys are then refused (fail closed). */
  lookup(keyId: string): StoredOperatorKey | undefined | 'unavailable';
  /**
   * Read-your-writes for a key the view does not know (ADR 0048): resolves once the view has
   * caught up with what the ledger held when the call arrived, or its bound ran out, so a key
   * created through another replica authenticates here at once.
   */
  awaitCurrent?(): Promise<unknown>;
}

export interface OidcVerifier {
  verify(jwt: string): Promise<OperatorPrincipal | Refusal>;
}

export interface CapabilityVerifier {
  verify(token: string): Promise<CapabilityPrincipal | Refusal>;
}

export interface AuthenticatorOptions {
  /** TALLY_ADMIN_KEY; undefined means there is no bootstrap admin. */
  readonly adminKey?: string;
  readonly operatorKeys: OperatorKeyLookup;
  readonly oidc?: OidcVerifier;
  readonly capabilities: CapabilityVerifier;
  readonly nowMs: () => number;
}

export class Authenticator {
  private readonly adminKeyHash: string | undefined;

  constructor(private readonly options: AuthenticatorOptions) {
    this.adminKeyHash = options.adminKey === undefined ? undefined : hashOfKey(options.adminKey);
  }

  async authenticate(credential: Credential): Promise<OperatorPrincipal | CapabilityPrincipal | Refusal> {
    switch (credential.kind) {
      case 'operator_key':
        return this.operatorKey(credential.key_id, credential.secret);
      case 'capability':
        return this.options.capabilities.verify(credential.token);
      case 'jwt':
        if (!this.options.oidc) return refusal('unknown', 'no OIDC issuer is configured');
        return this.options.oidc.verify(credential.token);
      case 'opaque':
        if (this.adminKeyHash !== undefined && keyMatches(credential.secret, this.adminKeyHash)) return BOOTSTRAP_ADMIN;
        return refusal('unknown', 'the credential is not known');
    }
  }

  private async operatorKey(keyId: string, secret: string): Promise<OperatorPrincipal | Refusal> {
    const keys = this.options.operatorKeys;
    let stored = keys.lookup(keyId);
    // Only an unknown id waits: a known key, even with a wrong secret, is answered from the view.
    if (stored === undefined && keys.awaitCurrent) {
      await keys.awaitCurrent();
      stored = keys.lookup(keyId);
    }
    if (stored === 'unavailable') return refusal('unavailable', 'operator keys cannot be checked right now');
    // An unknown id and a wrong secret look the same to the caller.
    if (stored === undefined || !keyMatches(secret, stored.key_hash)) return refusal('unknown', 'the key is not known');
    if (stored.deleted) return refusal('deleted', 'the key was deleted');
    if (stored.expires_at_ms !== undefined && stored.expires_at_ms <= this.options.nowMs())
      return refusal('expired', 'the key has expired');
    return { kind: 'operator', role: stored.role, tenant_id: stored.tenant_id, subject: keyId, via: 'key' };
  }
}

const BOOTSTRAP_ADMIN: OperatorPrincipal = Object.freeze({
  kind: 'operator',
  role: 'admin',
  tenant_id: 'default',
  subject: 'bootstrap',
  via: 'bootstrap',
});
