// The client side of subject signatures (ADR 0011, ADR 0049), used by the tests, the bench and
// any TypeScript client: the headers that sign one request with the subject's key, covering
// everything the server will require of that request.
import { randomBytes, sign as signEd25519, type KeyObject } from 'node:crypto';
import { httpbis } from 'http-message-signatures';
import { contentDigestOf } from './message-signatures.js';
import { COVERED_WHEN_PRESENT, requiredComponents } from './signature-coverage.js';

export interface SigningInput {
  readonly method: string;
  /** Path and query, as the server will see them. */
  readonly path: string;
  readonly body?: Buffer | string;
  /**
   * The request's other headers, any case. Those a signed route reads (Idempotency-Key,
   * x-tally-fallbacks, …) are signed too; the rest are ignored.
   */
  readonly headers?: Readonly<Record<string, string>>;
  /** The subject's Ed25519 private key. */
  readonly privateKey: KeyObject;
  readonly keyId?: string;
  /** Defaults to now; tests move it to prove the skew bound. */
  readonly createdMs?: number;
}

/** Only the headers this module adds are returned, so they can be spread beside the caller's own. */
const ADDED = new Set(['content-digest', 'signature', 'signature-input']);

/**
 * The headers a client adds to sign a request: Content-Digest of the body, and Signature /
 * Signature-Input covering @method, @path, content-digest, @query when the path has a query,
 * and each covered header the request carries, with `created` and a random nonce (two
 * identical requests in one second still differ).
 */
export async function subjectSignatureHeaders(input: SigningInput): Promise<Record<string, string>> {
  const headers: Record<string, string> = { 'content-digest': contentDigestOf(input.body ?? '') };
  const covered = new Set<string>(COVERED_WHEN_PRESENT);
  for (const [name, value] of Object.entries(input.headers ?? {}))
    if (covered.has(name.toLowerCase())) headers[name.toLowerCase()] = value;
  const signed = await httpbis.signMessage(
    {
      key: {
        id: input.keyId ?? 'subject',
        alg: 'ed25519',
        sign: async (data: Buffer) => signEd25519(null, data, input.privateKey),
      },
      fields: requiredComponents(input.path, headers),
      params: ['created', 'keyid', 'alg', 'nonce'],
      paramValues: {
        created: new Date(input.createdMs ?? Date.now()),
        nonce: randomBytes(12).toString('base64url'),
      },
    },
    { method: input.method, url: new URL(input.path, 'http://tally.invalid'), headers },
  );
  // Lower-case names, as Node and Express present headers to the server.
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(signed.headers))
    if (ADDED.has(name.toLowerCase())) out[name.toLowerCase()] = String(value);
  return out;
}
