// Capability tokens as bearer credentials, checked the same way in both services: the
// signature against the published key named in the claims, then expiry. Revocation is a
// fact of the budget ledger, which the authority checks where it decides; the orchestrator
// cannot see it, and every spend it makes is admitted by the authority first.
import {
  DEFAULT_TENANT,
  refusal,
  type CapabilityPrincipal,
  type CapabilityVerifier,
  type Refusal,
} from '@tally/platform-auth';
import type { PublishedKeys } from './published-keys.js';

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
  ) {}

  async verify(token: string): Promise<CapabilityPrincipal | Refusal> {
    const claims = this.claimsOf(token);
    if (!claims) return refusal('invalid', 'the capability token does not verify');
    if (claims.expires_at_ms <= this.nowMs()) return refusal('expired', 'the capability token has expired');
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
