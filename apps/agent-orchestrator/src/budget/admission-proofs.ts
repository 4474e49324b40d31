// The orchestrator's check of an admission proof before a paid call: the authority's
// signature over the proof's claims, made with one of its published keys, for the hold the
// admission names. The keys come from the directory stream (every replica folds it, ADR
// 0010); a key id the view does not know yet (a rotation whose event is still on its way)
// is looked up in the authority's GET /v1/keys when its URL is configured, cached, and
// fetched again at most once per cooldown, so unknown key ids cannot hammer the authority.
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { canonicalJson } from '@tally/budget-infrastructure';
import type { AdmissionProofWire } from '@tally/orchestrator-application';
import type { AdmissionProofCheck } from './jetstream-budget.port.js';

/** The keys the directory publishes (PublishedKeys fits). */
export interface KnownKeys {
  verify(value: unknown, signature: string, keyId: string): boolean;
  list(): readonly { readonly key_id: string }[];
}

export interface AuthorityKeysOptions {
  /** The authority's base URL, e.g. http://127.0.0.1:7401; without it only the directory's keys count. */
  readonly authorityUrl?: string;
  /** Least time between two fetches of GET /v1/keys. */
  readonly cooldownMs: number;
  readonly timeoutMs: number;
  readonly nowMs: () => number;
}

/** Keys fetched from GET /v1/keys; bounded like the authority's own list. */
const FETCHED_KEYS_MAX = 256;

export class AdmissionProofVerifier implements AdmissionProofCheck {
  private fetched = new Map<string, KeyObject>();
  private lastFetchMs = Number.NEGATIVE_INFINITY;
  private fetching: Promise<void> | undefined;

  constructor(
    private readonly known: KnownKeys,
    private readonly options: AuthorityKeysOptions,
  ) {}

  async verify(proof: AdmissionProofWire, holdId: string): Promise<boolean> {
    if (!isProof(proof) || proof.claims['hold_id'] !== holdId) return false;
    if (this.known.list().some((k) => k.key_id === proof.key_id))
      return this.known.verify(proof.claims, proof.signature, proof.key_id);
    if (!this.fetched.has(proof.key_id)) await this.refetch();
    const key = this.fetched.get(proof.key_id);
    return key !== undefined && verifiesWith(key, proof);
  }

  /** One fetch at a time, and none within the cooldown of the last. */
  private async refetch(): Promise<void> {
    if (this.options.authorityUrl === undefined) return;
    if (this.fetching) return this.fetching;
    if (this.options.nowMs() - this.lastFetchMs < this.options.cooldownMs) return;
    this.lastFetchMs = this.options.nowMs();
    this.fetching = this.fetchKeys(this.options.authorityUrl).finally(() => (this.fetching = undefined));
    return this.fetching;
  }

  private async fetchKeys(base: string): Promise<void> {
    try {
      const response = await fetch(new URL('/v1/keys', base), { signal: AbortSignal.timeout(this.options.timeoutMs) });
      if (!response.ok) return;
      const body = (await response.json()) as { keys?: unknown };
      const next = new Map<string, KeyObject>();
      for (const key of Array.isArray(body.keys) ? body.keys.slice(0, FETCHED_KEYS_MAX) : []) {
        const k = key as { key_id?: unknown; algorithm?: unknown; public_key?: unknown };
        if (typeof k.key_id !== 'string' || k.algorithm !== 'ed25519' || typeof k.public_key !== 'string') continue;
        try {
          next.set(k.key_id, createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: k.public_key }, format: 'jwk' }));
        } catch {
          // A key that does not parse verifies nothing; the others still count.
        }
      }
      this.fetched = next;
    } catch {
      // Unreachable: the proof stays unverified, and the call is not made (fail closed).
    }
  }
}

function isProof(proof: AdmissionProofWire | undefined): proof is AdmissionProofWire {
  return (
    typeof proof === 'object' &&
    proof !== null &&
    typeof proof.claims === 'object' &&
    proof.claims !== null &&
    typeof proof.key_id === 'string' &&
    typeof proof.signature === 'string'
  );
}

function verifiesWith(key: KeyObject, proof: AdmissionProofWire): boolean {
  try {
    return verify(null, Buffer.from(canonicalJson(proof.claims)), key, Buffer.from(proof.signature, 'base64url'));
  } catch {
    return false;
  }
}
