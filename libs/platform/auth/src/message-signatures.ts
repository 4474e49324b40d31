// Proof of possession for bound capabilities (ADR 0011): an RFC 9421 HTTP Message Signature
// made with the capability's subject key (Ed25519) over @method, @path and content-digest,
// with a `created` time within a bounded skew, and never used twice. The signature parsing
// and the signature base come from the `http-message-signatures` package; this module adds
// what the package leaves to its caller: the RFC 9530 digest of the body, the skew window,
// the key (the capability's, never one the request names) and the replay ledger.
import {
  createHash,
  createPublicKey,
  randomBytes,
  sign as signEd25519,
  timingSafeEqual,
  verify as verifyEd25519,
  type KeyObject,
} from 'node:crypto';
import { SetMetadata } from '@nestjs/common';
import { httpbis, type SignatureParameters } from 'http-message-signatures';

/** The components every signature must cover. */
export const SIGNED_COMPONENTS = ['@method', '@path', 'content-digest'] as const;

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

  /** Undefined when the request is signed by `subjectPublicKey` (base64url raw Ed25519) as ADR 0011 asks. */
  async verify(req: SignedRequest, subjectPublicKey: string): Promise<SignatureRefusal | undefined> {
    const signature = header(req, 'signature');
    const input = header(req, 'signature-input');
    if (signature === undefined || input === undefined)
      return refused('signature_required', 'this capability is bound to its subject key: sign the request (RFC 9421)');
    const digest = header(req, 'content-digest');
    if (digest === undefined) return refused('signature_required', 'Content-Digest (RFC 9530) is required');
    if ([signature, input, digest].some((h) => h.length > SIGNATURE_HEADER_MAX))
      return refused('signature_invalid', 'a signature header is too long');
    const digestRefusal = checkDigest(digest, req.rawBody ?? Buffer.alloc(0));
    if (digestRefusal) return digestRefusal;
    const key = this.keyOf(subjectPublicKey);
    if (!key) return refused('signature_invalid', 'the capability names no usable subject key');
    const checked = await this.checkSignature(req, input, key);
    if (checked !== undefined) return checked;
    const first = await this.options.replay.firstUse(replayId(signature), this.nowMs() + this.windowMs);
    if (first === 'unavailable')
      return refused('signatures_unavailable', 'signatures cannot be checked for replay now');
    if (!first) return refused('signature_replayed', 'this signature was already used: sign each request anew');
    return undefined;
  }

  private async checkSignature(
    req: SignedRequest,
    input: string,
    key: KeyObject,
  ): Promise<SignatureRefusal | undefined> {
    // One signature per request: with several, the package would accept whichever verifies last.
    if (input.split(',').filter((part) => /^\s*[A-Za-z*][A-Za-z0-9_.*-]*=\(/.test(part)).length !== 1)
      return refused('signature_invalid', 'exactly one signature is expected');
    let skew: SignatureRefusal | undefined;
    const keyLookup = async (params: SignatureParameters) => {
      skew = this.skewOf(params);
      if (skew) return null;
      return {
        algs: ['ed25519'],
        verify: async (data: Buffer, sig: Buffer) => verifyEd25519(null, data, key, sig),
      };
    };
    const path = req.originalUrl ?? req.url ?? '/';
    let verified: boolean | null;
    try {
      verified = await httpbis.verifyMessage(
        {
          keyLookup,
          requiredParams: ['created'],
          requiredFields: [...SIGNED_COMPONENTS],
          // The skew is checked in keyLookup, both ways, against this replica's clock.
          tolerance: this.options.skewSeconds,
          notAfter: Math.floor(this.nowMs() / 1000) + this.options.skewSeconds,
        },
        { method: req.method, url: new URL(path, 'http://tally.invalid'), headers: plainHeaders(req) },
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

/** The ledger's id of a signature: a digest of the signature header, never the header itself. */
function replayId(signature: string): string {
  return createHash('sha256').update(signature.trim()).digest('base64url');
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

export interface SigningInput {
  readonly method: string;
  /** Path and query, as the server will see them. */
  readonly path: string;
  readonly body?: Buffer | string;
  /** The subject's Ed25519 private key. */
  readonly privateKey: KeyObject;
  readonly keyId?: string;
  /** Defaults to now; tests move it to prove the skew bound. */
  readonly createdMs?: number;
}

/**
 * The headers a client adds to sign a request as ADR 0011 asks: Content-Digest of the
 * body, and Signature / Signature-Input covering @method, @path and content-digest with
 * `created` and a random nonce (two identical requests in one second still differ).
 */
export async function subjectSignatureHeaders(input: SigningInput): Promise<Record<string, string>> {
  const digest = contentDigestOf(input.body ?? '');
  const headers: Record<string, string> = { 'content-digest': digest };
  const signed = await httpbis.signMessage(
    {
      key: {
        id: input.keyId ?? 'subject',
        alg: 'ed25519',
        sign: async (data: Buffer) => signEd25519(null, data, input.privateKey),
      },
      fields: [...SIGNED_COMPONENTS],
      params: ['created', 'keyid', 'alg', 'nonce'],
      paramValues: {
        created: new Date(input.createdMs ?? Date.now()),
        nonce: randomBytes(12).toString('base64url'),
      },
    },
    { method: input.method, url: new URL(input.path, 'http://tally.invalid'), headers },
  );
  // Lower-case names, as Node and Express present headers to the server.
  return Object.fromEntries(Object.entries(signed.headers).map(([name, value]) => [name.toLowerCase(), String(value)]));
}
