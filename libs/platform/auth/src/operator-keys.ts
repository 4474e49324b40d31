// Operator keys: `tally_key_<key id>_<secret>`, 256 random bits shown once. Tally keeps only
// the SHA-256 of the whole key: a key this random cannot be guessed from its hash, so a slow
// password hash would add latency to every call and no safety. The key id inside the key
// makes the lookup one map read and the comparison constant-time.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const KEY_PATTERN = /^tally_key_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;
/** The bootstrap admin key is chosen by the operator; shorter ones are refused at boot. */
export const ADMIN_KEY_LENGTH_MIN = 32;
export const ADMIN_KEY_LENGTH_MAX = 512;

export interface NewOperatorKey {
  readonly key_id: string;
  /** The secret to show once; never stored, logged or put in an event. */
  readonly key: string;
  readonly key_hash: string;
}

export function newOperatorKey(): NewOperatorKey {
  const id = randomBytes(8).toString('hex');
  const key = `tally_key_${id}_${randomBytes(32).toString('base64url')}`;
  return { key_id: `key_${id}`, key, key_hash: hashOfKey(key) };
}

/** The key id of a string shaped like an operator key, else undefined. */
export function operatorKeyId(candidate: string): string | undefined {
  const match = KEY_PATTERN.exec(candidate);
  return match ? `key_${match[1]}` : undefined;
}

export function hashOfKey(key: string): string {
  return `sha256:${createHash('sha256').update(key, 'utf8').digest('hex')}`;
}

/** Constant-time comparison of a presented key with a stored hash. */
export function keyMatches(key: string, storedHash: string): boolean {
  const a = Buffer.from(hashOfKey(key));
  const b = Buffer.from(storedHash);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A fresh bootstrap admin key for the local stack (`npm start`). */
export function newAdminKey(): string {
  return `tally_admin_${randomBytes(32).toString('base64url')}`;
}
