// Where a credential travels and what kind it is. One request carries at most one
// credential: `Authorization: Bearer`, else `x-api-key`, else (on routes that take a
// capability) the body's `token` field, as before tokens could be bearers.
import { operatorKeyId } from './operator-keys.js';

export type Credential =
  | { readonly kind: 'operator_key'; readonly key_id: string; readonly secret: string }
  | { readonly kind: 'capability'; readonly token: string }
  | { readonly kind: 'jwt'; readonly token: string }
  /** Anything else: only the bootstrap admin key can match it. */
  | { readonly kind: 'opaque'; readonly secret: string };

/** Longer than any credential Tally issues or accepts; a bigger header is refused unread. */
export const CREDENTIAL_LENGTH_MAX = 16_384;

export interface RequestLike {
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body?: unknown;
}

export type Presented = { readonly credential: Credential } | { readonly malformed: string } | undefined;

export function presentedCredential(req: RequestLike, bodyTokenAllowed: boolean): Presented {
  const authorization = header(req, 'authorization');
  if (authorization !== undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match) return { malformed: 'Authorization must be "Bearer <credential>"' };
    return classified(match[1]!);
  }
  const apiKey = header(req, 'x-api-key');
  if (apiKey !== undefined) return classified(apiKey.trim());
  if (bodyTokenAllowed) {
    const token = (req.body as { token?: unknown } | undefined)?.token;
    if (typeof token === 'string' && token.length > 0) return classified(token);
  }
  return undefined;
}

function header(req: RequestLike, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function classified(value: string): Presented {
  if (value.length === 0) return { malformed: 'the credential is empty' };
  if (value.length > CREDENTIAL_LENGTH_MAX) return { malformed: 'the credential is too long' };
  const keyId = operatorKeyId(value);
  if (keyId !== undefined) return { credential: { kind: 'operator_key', key_id: keyId, secret: value } };
  if (value.startsWith('c1.')) return { credential: { kind: 'capability', token: value } };
  if (looksLikeJwt(value)) return { credential: { kind: 'jwt', token: value } };
  return { credential: { kind: 'opaque', secret: value } };
}

function looksLikeJwt(value: string): boolean {
  const parts = value.split('.');
  if (parts.length !== 3 || !parts.every((p) => /^[A-Za-z0-9_-]+$/.test(p))) return false;
  try {
    const header = JSON.parse(Buffer.from(parts[0]!, 'base64url').toString('utf8')) as { alg?: unknown };
    return typeof header.alg === 'string';
  } catch {
    return false;
  }
}
