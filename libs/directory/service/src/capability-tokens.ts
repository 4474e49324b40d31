// Capability tokens as bearer credentials, checked the same way in both services: the
// signature against the published key named in the claims, then expiry, then revocation as
// this replica's revocation view knows it (ADR 0049), so a revoked token stops at the door of
// either service. The ledger still decides every spend: a revocation the view has not heard
// of yet is refused there, as before.
import {
  DEFAULT_TENANT,
  refusal,
  type CapabilityPrincipal,
  type CapabilityVerifier,
  type Refusal,
} from '@tally/platform-auth';
import type { PublishedKeys } from './published-keys.js';
import type { RevocationLookup } from './revocation-view.js';

/** The claims a capability token carries (see the authority's token sealing). */
export interface CapabilityTokenClaims {
  readonly id: string;
  readonly root_id: string;
  readonly parent_id?: string;
  readonly tenant_id?: string;
  readonly subject_public_key: string;
  readonly issued_at_ms: number;
  readonly expires_at_ms: number;
  readonly key_id: string;
  readonly bind?: 'subject_key';
}

/** Verified tokens by string: an Ed25519 verify costs more than the rest of a request's checks. */
const VERIFIED_MAX = 10_000;

export class CapabilityTokenVerifier implements CapabilityVerifier {
  private readonly verified = new Map<string, CapabilityTokenClaims>();

  constructor(
    private readonly keys: PublishedKeys,
    private readonly nowMs: () => number,
    private readonly revocations?: RevocationLookup,
  ) {}

  async verify(token: string): Promise<CapabilityPrincipal | Refusal> {
    const claims = this.claimsOf(token);
    if (!claims) return refusal('invalid', 'the capability token does not verify');
    if (claims.expires_at_ms <= this.nowMs()) return refusal('expired', 'the capability token has expired');
    if (this.revoked(claims)) return refusal('revoked', `capability ${claims.id} was revoked`);
    return {
      kind: 'capability',
      capability_id: claims.id,
      root_id: claims.root_id,
      tenant_id: claims.tenant_id ?? DEFAULT_TENANT,
      subject_public_key: claims.subject_public_key,
      expires_at_ms: claims.expires_at_ms,
      bound_to_subject_key: claims.bind === 'subject_key',
      token,
    };
  }

  /**
   * A revocation names the capability and every descendant, so its own id would do; its parent
   * and root are asked too, which costs two lookups and covers a descendant whose own entry is
   * still being written (a large tree is written in rounds, the revoked capability first).
   */
  private revoked(claims: CapabilityTokenClaims): boolean {
    const view = this.revocations;
    if (!view) return false;
    return (
      view.isRevoked(claims.id) ||
      (claims.parent_id !== undefined && view.isRevoked(claims.parent_id)) ||
      view.isRevoked(claims.root_id)
    );
  }

  /** The verified claims of a token, or undefined when it is malformed or its signature fails. */
  claimsOf(token: string): CapabilityTokenClaims | undefined {
    const hit = this.verified.get(token);
    // A remembered token ends with its key: once the key is retired, the token no longer verifies.
    if (hit && this.keys.accepts(hit.key_id)) return hit;
    if (hit) this.verified.delete(token);
    const parts = token.split('.');
    if (parts.length !== 3 || parts[0] !== 'c1') return undefined;
    let claims: CapabilityTokenClaims;
    try {
      claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as CapabilityTokenClaims;
    } catch {
      return undefined;
    }
    if (!isClaims(claims) || !this.keys.verify(claims, parts[2]!, claims.key_id)) return undefined;
    this.verified.set(token, claims);
    if (this.verified.size > VERIFIED_MAX) this.verified.delete(this.verified.keys().next().value!);
    return claims;
  }
}

function isClaims(value: unknown): value is CapabilityTokenClaims {
  const c = value as Partial<CapabilityTokenClaims> | null;
  return (
    typeof c === 'object' &&
    c !== null &&
    typeof c.id === 'string' &&
    typeof c.root_id === 'string' &&
    typeof c.key_id === 'string' &&
    typeof c.subject_public_key === 'string' &&
    Number.isSafeInteger(c.expires_at_ms) &&
    (c.tenant_id === undefined || typeof c.tenant_id === 'string')
  );
}
