// Money on the wire: integer minor units, as a JSON number up to 2^53-1 and as a decimal
// string above it (http-api.md). Inside Tally amounts are bigint, and every amount, count
// and token figure is an integer in [0, 2^63-1] (ADR 0044): the range of the signed 64-bit
// columns the projections write, so a value that passes a boundary can always be stored.

/** The largest amount Tally accepts or books: 2^63-1 minor units. */
export const AMOUNT_MAX_UNITS = 9_223_372_036_854_775_807n;
/** The largest count or token figure a JSON number carries exactly: 2^53-1. */
export const COUNT_MAX = Number.MAX_SAFE_INTEGER;

/** A canonical decimal amount: no sign, space or leading zero, at most the 19 digits of 2^63-1. */
const DECIMAL_AMOUNT = /^(0|[1-9][0-9]{0,18})$/;
/** A canonical decimal integer of any size and sign, for telling "out of range" from "not a number". */
const DECIMAL_INTEGER = /^-?(0|[1-9][0-9]*)$/;
const AMOUNT_MAX_TEXT = AMOUNT_MAX_UNITS.toString();

export function moneyToWire(amountMinor: bigint): number | string {
  return amountMinor <= BigInt(Number.MAX_SAFE_INTEGER) && amountMinor >= -BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(amountMinor)
    : amountMinor.toString();
}

/** Returns undefined unless the value is an amount: an integer number of minor units in [0, 2^63-1]. */
export function moneyFromWire(value: unknown): bigint | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? BigInt(value) : undefined;
  if (typeof value === 'string') return DECIMAL_AMOUNT.test(value) ? inAmountRange(BigInt(value)) : undefined;
  if (typeof value === 'bigint') return inAmountRange(value);
  return undefined;
}

function inAmountRange(amount: bigint): bigint | undefined {
  return amount >= 0n && amount <= AMOUNT_MAX_UNITS ? amount : undefined;
}

/**
 * Whether a value is a well-formed integer that lies outside [0, 2^63-1]: a negative or too
 * wide amount or count (answered 422), as opposed to something that is not an integer at
 * all (400). Strings are compared by their digits, so a huge one costs no bigint parse.
 */
export function outsideAmountRange(value: unknown): boolean {
  if (typeof value === 'number') return Number.isInteger(value) && (value < 0 || BigInt(value) > AMOUNT_MAX_UNITS);
  if (typeof value === 'bigint') return value < 0n || value > AMOUNT_MAX_UNITS;
  if (typeof value !== 'string' || !DECIMAL_INTEGER.test(value)) return false;
  if (value.startsWith('-')) return value !== '-0';
  return value.length > AMOUNT_MAX_TEXT.length || (value.length === AMOUNT_MAX_TEXT.length && value > AMOUNT_MAX_TEXT);
}

/** What a validator says of a value that is not an amount (after the field's name). */
export const MONEY_MESSAGE =
  'must be an integer number of minor units from 0 to 2^63-1 (9223372036854775807): a JSON number up to 2^53-1, else a decimal string without sign or leading zeros';

/** The JSON Schema of an amount on the wire, for the OpenAPI documents. */
export const MONEY_JSON_SCHEMA = {
  oneOf: [
    { type: 'integer', minimum: 0, maximum: 9007199254740991 },
    { type: 'string', pattern: '^(0|[1-9][0-9]{0,18})$', maxLength: 19 },
  ],
  description:
    'Integer minor units from 0 to 2^63-1 (9223372036854775807): a JSON number up to 2^53-1, else a decimal string. A wider value is refused with 422.',
} as const;
