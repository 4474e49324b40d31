// Values the CLI takes on its flags, checked before anything is sent: a bad one ends the
// command with exit 2 and a message that names the flag (never a 400 from the service).
import { usageError } from './exit-codes.js';

/** The ledger's amounts are signed 64-bit minor units; the API takes 0..2^63-1 (ADR 0044). */
export const MONEY_MAX = 2n ** 63n - 1n;
/** JSON numbers are exact up to here; a larger amount goes on the wire as a decimal string. */
const SAFE_MAX = BigInt(Number.MAX_SAFE_INTEGER);

/** An amount in minor units, as the wire takes it: a number up to 2^53-1, a decimal string above. */
export function moneyValue(flag: string, text: string): number | string {
  if (!/^\d{1,19}$/.test(text) || BigInt(text) > MONEY_MAX)
    throw usageError(
      `${flag} must be a whole number of minor units from 0 to ${MONEY_MAX}, got ${JSON.stringify(text)}`,
    );
  const n = BigInt(text);
  return n <= SAFE_MAX ? Number(n) : n.toString();
}

/** A whole number in [min, max]. */
export function intValue(flag: string, text: string, min: number, max: number): number {
  const n = /^-?\d{1,16}$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max)
    throw usageError(`${flag} must be a whole number from ${min} to ${max}, got ${JSON.stringify(text)}`);
  return n;
}

/** An id the API returned, safe in a path segment. */
export function idValue(what: string, text: string): string {
  if (!/^[A-Za-z0-9_:.-]{1,256}$/.test(text))
    throw usageError(`${JSON.stringify(text)} is not a ${what} id`, 'Pass the id the API returned.');
  return text;
}

/** Commander's collector for a repeatable flag. */
export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}
