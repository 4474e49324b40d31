// Proof of possession for bound capabilities (ADR 0011, ADR 0049): an RFC 9421 HTTP Message
// Signature made with the capability's subject key (Ed25519) over @method, @path,
// content-digest and whatever else of the request the route reads, with a `created` time
// within a bounded skew, and never used twice. The signature parsing and the signature base
// come from the `http-message-signatures` package; this module adds what the package leaves to
// its caller: the RFC 9530 digest of the body, the skew window, the key (the capability's,
// never one the request names), the one-member rule and the replay ledger.
import { createHash, createPublicKey, timingSafeEqual, verify as verifyEd25519, type KeyObject } from 'node:crypto';
import { SetMetadata } from '@nestjs/common';
import { httpbis, type SignatureParameters } from 'http-message-signatures';
import { replayIdOf, requiredComponents, singleSignature, uncovered } from './signature-coverage.js';

const SUBJECT_SIGNED_METADATA = 'tally:subject-signed';

/**
 * Marks a route where a capability bound to its subject key must prove possession of it:
 * admissions, work submissions and the drop-in endpoints. Unbound capabilities, operators
 * and the route's other rules are unaffected.
 */
export function SubjectSigned(): MethodDecorator {
  return SetMetadata(SUBJECT_SIGNED_METADATA, true);
}

export function isSubjectSigned(handler: object): boolean {
  return Reflect.getMetadata(SUBJECT_SIGNED_METADATA, handler) === true;
}

/** What the verifier reads of a request; Express's request fits. */
export interface SignedRequest {
  readonly method: string;
  /** Path and query as received (Express: originalUrl). */
  readonly originalUrl?: string;
  readonly url?: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The body's bytes as received; undefined for a request without a body. */
  readonly rawBody?: Buffer;
}

export type SignatureRefusalCode =
  | 'signature_required'
  | 'signature_invalid'
  | 'signature_expired'
  | 'signature_replayed'
  | 'content_digest_mismatch'
  | 'signatures_unavailable';

export interface SignatureRefusal {
  readonly code: SignatureRefusalCode;
  /** Safe to show: names what is wrong, never echoes a secret. */
  readonly message: string;
  /** The components this request's signature must cover, for `Accept-Signature`. */
  readonly components?: readonly string[];
}

/**
 * Remembers signatures already spent. `firstUse` answers true the first time an id is seen
 * before `untilMs`, false for a replay, and 'unavailable' when it cannot tell (fail closed).
 */
export interface ReplayLedger {
  firstUse(id: string, untilMs: number): Promise<boolean | 'unavailable'>;
}

/** Bounded in-process memory of spent signatures, each kept until its window closes. */
export class MemoryReplayLedger implements ReplayLedger {
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly entriesMax: number,
    private readonly nowMs: () => number = Date.now,
  ) {}

  get size(): number {
    return this.seen.size;
  }

  async firstUse(id: string, untilMs: number): Promise<boolean | 'unavailable'> {
    return this.note(id, untilMs);
  }

  /** Synchronous form, for a ledger that fronts another. */
  note(id: string, untilMs: number): boolean | 'unavailable' {
    const now = this.nowMs();
    const known = this.seen.get(id);
    if (known !== undefined && known > now) return false;
    if (this.seen.size >= this.entriesMax) this.sweep(now);
    // Forgetting a live entry would let its signature be replayed: refuse new ones instead.
    if (this.seen.size >= this.entriesMax) return 'unavailable';
    this.seen.set(id, untilMs);
    return true;
  }

  /** Entries are inserted in time order, so the expired ones are at the front. */
  private sweep(now: number): void {
    for (const [id, until] of this.seen) {
      if (until > now) break;
      this.seen.delete(id);
    }
  }
}

/** A process-local ledger in front of a shared one: a replay at this replica costs no round trip. */
export class LayeredReplayLedger implements ReplayLedger {
  constructor(
    private readonly local: MemoryReplayLedger,
    private readonly shared: ReplayLedger,
  ) {}

  async firstUse(id: string, untilMs: number): Promise<boolean | 'unavailable'> {
    const local = this.local.note(id, untilMs);
    if (local !== true) return local;
    return this.shared.firstUse(id, untilMs);
  }
}

export interface SubjectSignatureOptions {
  /** How far `created` may lie from this replica's clock, either way. */
  readonly skewSeconds: number;
  readonly replay: ReplayLedger;
  readonly nowMs?: () => number;
}

/** Longest Signature / Signature-Input / Content-Digest header read; a longer one is refused unparsed. */
const SIGNATURE_HEADER_MAX = 4_096;
/** Subject keys parsed into key objects, by their base64url text. */
const KEYS_MAX = 10_000;

export class SubjectSignatures {
  private readonly keys = new Map<string, KeyObject>();
  private readonly nowMs: () => number;

  constructor(private readonly options: SubjectSignatureOptions) {
    if (!(Number.isInteger(options.skewSeconds) && options.skewSeconds > 0))
      throw new Error('signature skewSeconds must be a positive integer');
    this.nowMs = options.nowMs ?? Date.now;
  }

  get windowMs(): number {
    return signatureWindowMs(this.options.skewSeconds);
  }

  /** Undefined when the request is signed by `subjectPublicKey` (base64url raw Ed25519) as ADR 0011 and 0049 ask. */
  async verify(req: SignedRequest, subjectPublicKey: string): Promise<SignatureRefusal | undefined> {
    const target = req.originalUrl ?? req.url ?? '/';
    const components = requiredComponents(target, req.headers);
    const refusal = await this.refusalOf(req, target, components, subjectPublicKey);
    return refusal && { ...refusal, components };
  }

  private async refusalOf(
    req: SignedRequest,
    target: string,
    components: readonly string[],
    subjectPublicKey: string,
  ): Promise<SignatureRefusal | undefined> {
    const signature = header(req, 'signature');
    const input = header(req, 'signature-input');
    if (signature === undefined || input === undefined)
      return refused('signature_required', 'this capability is bound to its subject key: sign the request (RFC 9421)');
    const digest = header(req, 'content-digest');
    if (digest === undefined) return refused('signature_required', 'Content-Digest (RFC 9530) is required');
    if ([signature, input, digest].some((h) => h.length > SIGNATURE_HEADER_MAX))
      return refused('signature_invalid', 'a signature header is too long');
    // One member each, one label: the package would accept whichever of several verifies last,
    // and neither the label nor the other members are covered by the signature.
    const single = singleSignature(signature, input);
    if (typeof single === 'string') return refused('signature_invalid', single);
    const missing = uncovered(components, single.covered);
    if (missing.length > 0) return refused('signature_invalid', `the signature must cover ${missing.join(', ')}`);
    const digestRefusal = checkDigest(digest, req.rawBody ?? Buffer.alloc(0));
    if (digestRefusal) return digestRefusal;
    const key = this.keyOf(subjectPublicKey);
    if (!key) return refused('signature_invalid', 'the capability names no usable subject key');
    const checked = await this.checkSignature(req, target, components, key);
    if (checked !== undefined) return checked;
    // Keyed on the signature's bytes: relabelling it or adding members never makes it new.
    const first = await this.options.replay.firstUse(replayIdOf(single.bytes), this.nowMs() + this.windowMs);
    if (first === 'unavailable')
      return refused('signatures_unavailable', 'signatures cannot be checked for replay now');
    if (!first) return refused('signature_replayed', 'this signature was already used: sign each request anew');
    return undefined;
  }

  private async checkSignature(
    req: SignedRequest,
    target: string,
    components: readonly string[],
    key: KeyObject,
  ): Promise<SignatureRefusal | undefined> {
    let skew: SignatureRefusal | undefined;
    const keyLookup = async (params: SignatureParameters) => {
      skew = this.skewOf(params);
      if (skew) return null;
      return {
        algs: ['ed25519'],
        verify: async (data: Buffer, sig: Buffer) => verifyEd25519(null, data, key, sig),
      };
    };
    let verified: boolean | null;
    try {
      verified = await httpbis.verifyMessage(
        {
          keyLookup,
          requiredParams: ['created'],
          // Everything the route reads, so a captured request cannot be replayed with another
          // query, Idempotency-Key, fallback list or session (ADR 0049).
          requiredFields: [...components],
          // The skew is checked in keyLookup, both ways, against this replica's clock.
          tolerance: this.options.skewSeconds,
          notAfter: Math.floor(this.nowMs() / 1000) + this.options.skewSeconds,
        },
        { method: req.method, url: new URL(target, 'http://tally.invalid'), headers: plainHeaders(req) },
      );
    } catch (error) {
      return refused('signature_invalid', `the signature does not verify: ${(error as Error).message}`);
    }
    if (skew) return skew;
    if (verified !== true) return refused('signature_invalid', 'the signature does not verify with the subject key');
    return undefined;
  }

  private skewOf(params: SignatureParameters): SignatureRefusal | undefined {
    if (params.alg !== undefined && params.alg !== 'ed25519')
      return refused('signature_invalid', 'the signature algorithm must be ed25519');
    const created = params.created;
    if (!(created instanceof Date) || Number.isNaN(created.getTime()))
      return refused('signature_invalid', 'the signature needs a created time');
    if (Math.abs(created.getTime() - this.nowMs()) > this.options.skewSeconds * 1000)
      return refused('signature_expired', `created must be within ${this.options.skewSeconds} s of now`);
    return undefined;
  }

  private keyOf(x: string): KeyObject | undefined {
    const hit = this.keys.get(x);
    if (hit) return hit;
    if (!/^[A-Za-z0-9_-]{43}$/.test(x)) return undefined;
    let key: KeyObject;
    try {
      key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x }, format: 'jwk' });
    } catch {
      return undefined;
    }
    if (this.keys.size >= KEYS_MAX) this.keys.delete(this.keys.keys().next().value!);
    this.keys.set(x, key);
    return key;
  }
}

/** How long a spent signature must be remembered: its `created` is acceptable for twice the skew. */
export function signatureWindowMs(skewSeconds: number): number {
  return 2 * skewSeconds * 1000 + 1000;
}

const DIGESTS: Record<string, string> = { 'sha-256': 'sha256', 'sha-512': 'sha512' };

/**
 * RFC 9530 Content-Digest: a dictionary of algorithm = :base64:. At least one known
 * algorithm must be present and every known one must match the body's bytes.
 */
export function checkDigest(value: string, body: Buffer): SignatureRefusal | undefined {
  let known = 0;
  for (const member of value.split(',')) {
    const match = /^\s*([a-z0-9-]+)\s*=\s*:([A-Za-z0-9+/]*={0,2}):\s*$/.exec(member);
    if (!match) return refused('content_digest_mismatch', 'Content-Digest is malformed');
    const algorithm = DIGESTS[match[1]!];
    if (algorithm === undefined) continue;
    known++;
    const expected = createHash(algorithm).update(body).digest();
    const given = Buffer.from(match[2]!, 'base64');
    if (given.length !== expected.length || !timingSafeEqual(given, expected))
      return refused('content_digest_mismatch', `Content-Digest ${match[1]} does not match the body`);
  }
  if (known === 0) return refused('content_digest_mismatch', 'Content-Digest needs sha-256 or sha-512');
  return undefined;
}

/** The Content-Digest header value for a body, as a client sends it. */
export function contentDigestOf(body: Buffer | string): string {
  return `sha-256=:${createHash('sha256').update(body).digest('base64')}:`;
}

function header(req: SignedRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

function plainHeaders(req: SignedRequest): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(req.headers)) if (value !== undefined) out[name] = value;
  return out;
}

function refused(code: SignatureRefusalCode, message: string): SignatureRefusal {
  return { code, message };
}
