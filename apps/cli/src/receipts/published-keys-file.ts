// The published signing keys an offline check trusts: a JWKS (GET /.well-known/jwks.json)
// or Tally's own list (GET /v1/keys), read from a file or, without one, from the authority.
import { createPublicKey, type KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { CliError, ExitCode, usageError } from '../cli/exit-codes.js';
import type { TallyHttp } from '../cli/http.js';

/** Key id -> public key. */
export type KeyRing = ReadonlyMap<string, KeyObject>;

export async function keysFromFile(path: string): Promise<KeyRing> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new CliError(`cannot read the keys file ${path}: ${(error as Error).message}`, ExitCode.usage);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw usageError(`the keys file ${path} is not JSON`, KEYS_HINT);
  }
  return keyRingOf(parsed, path);
}

export async function keysFromAuthority(http: TallyHttp): Promise<KeyRing> {
  return keyRingOf(await http.get('authority', '/v1/keys'), 'GET /v1/keys');
}

const KEYS_HINT = 'Pass the output of GET /v1/keys or GET /.well-known/jwks.json, saved to a file, as --keys FILE.';

/** Accepts `{keys:[{key_id, algorithm:"ed25519", public_key}]}` and `{keys:[{kty:"OKP", crv:"Ed25519", kid, x}]}`. */
export function keyRingOf(document: unknown, source: string): KeyRing {
  const keys = (document as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys)) throw usageError(`${source} has no "keys" list`, KEYS_HINT);
  const ring = new Map<string, KeyObject>();
  keys.forEach((key: Record<string, unknown>, index) => {
    const jwk = key['kty'] === 'OKP' && key['crv'] === 'Ed25519';
    const tally = key['algorithm'] === 'ed25519';
    const id = jwk ? key['kid'] : key['key_id'];
    const x = jwk ? key['x'] : key['public_key'];
    if ((!jwk && !tally) || typeof id !== 'string' || typeof x !== 'string')
      throw usageError(`${source}: keys[${index}] is neither an Ed25519 JWK nor a Tally key`, KEYS_HINT);
    try {
      ring.set(id, createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x }, format: 'jwk' }));
    } catch {
      throw usageError(`${source}: keys[${index}] (${id}) is not a valid Ed25519 public key`, KEYS_HINT);
    }
  });
  return ring;
}
