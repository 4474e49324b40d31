// The authority's signing keys as the ledger publishes them: every registered, unretired
// key by id, for verifying tokens, admission proofs and receipts in either service, and the
// same set as GET /v1/keys and as a JWKS (RFC 7517, OKP/Ed25519). Following rotation needs
// nothing extra: a newly registered key is in the view as soon as its event is.
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { canonicalJson } from '@tally/budget-infrastructure';
import type { SigningKeyRecord } from '@tally/directory-domain';
import type { DirectoryView } from './directory-view.js';

export interface PublishedKey {
  readonly key_id: string;
  readonly algorithm: 'ed25519';
  readonly public_key: string;
  readonly status: 'active' | 'previous' | 'registered';
}

export interface Jwk {
  readonly kty: 'OKP';
  readonly crv: 'Ed25519';
  readonly x: string;
  readonly kid: string;
  readonly alg: 'EdDSA';
  readonly use: 'sig';
}

export class PublishedKeys {
  private readonly keyObjects = new Map<string, KeyObject>();

  constructor(private readonly view: DirectoryView) {}

  /** Every key that is not retired, the active one first. */
  list(): PublishedKey[] {
    return this.view
      .signingKeys()
      .filter((k): k is SigningKeyRecord & { status: PublishedKey['status'] } => k.status !== 'retired')
      .sort((a, b) => rank(a) - rank(b) || a.registered_at_ms - b.registered_at_ms)
      .map((k) => ({ key_id: k.key_id, algorithm: k.algorithm, public_key: k.public_key, status: k.status }));
  }

  jwks(): { keys: Jwk[] } {
    return {
      keys: this.list().map((k) => ({
        kty: 'OKP',
        crv: 'Ed25519',
        x: k.public_key,
        kid: k.key_id,
        alg: 'EdDSA',
        use: 'sig',
      })),
    };
  }

  /** Whether `signature` over the canonical JSON of `value` was made by the published, unretired key `keyId`. */
  verify(value: unknown, signature: string, keyId: string): boolean {
    const key = this.keyObject(keyId);
    if (!key) return false;
    try {
      return verify(null, Buffer.from(canonicalJson(value)), key, Buffer.from(signature, 'base64url'));
    } catch {
      return false;
    }
  }

  /** Whether `keyId` is published and not retired. */
  accepts(keyId: string): boolean {
    const record = this.view.signingKey(keyId);
    return record !== undefined && record.status !== 'retired';
  }

  private keyObject(keyId: string): KeyObject | undefined {
    const record = this.view.signingKey(keyId);
    if (!record || record.status === 'retired') return undefined;
    let key = this.keyObjects.get(keyId);
    if (!key) {
      key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: record.public_key }, format: 'jwk' });
      this.keyObjects.set(keyId, key);
    }
    return key;
  }
}

function rank(key: SigningKeyRecord): number {
  return key.status === 'active' ? 0 : key.status === 'previous' ? 1 : 2;
}
