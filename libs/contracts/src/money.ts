// Money on the wire: integer minor units, as a JSON number up to 2^53-1 and as a
// decimal string above it (http-api.md). Inside Tally amounts are bigint.

export function moneyToWire(amountMinor: bigint): number | string {
  return amountMinor <= BigInt(Number.MAX_SAFE_INTEGER) && amountMinor >= -BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(amountMinor)
    : amountMinor.toString();
}

/** Returns undefined when the value is not an integer number of minor units. */
export function moneyFromWire(value: unknown): bigint | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? BigInt(value) : undefined;
  if (typeof value === 'string' && /^-?[0-9]{1,30}$/.test(value)) return BigInt(value);
  if (typeof value === 'bigint') return value;
  return undefined;
}

/** The JSON Schema of a non-negative amount on the wire, for the OpenAPI documents. */
export const MONEY_JSON_SCHEMA = {
  oneOf: [
    { type: 'integer', minimum: 0, maximum: 9007199254740991 },
    { type: 'string', pattern: '^[0-9]{1,30}$' },
  ],
  description: 'Integer minor units: a JSON number up to 2^53-1, else a decimal string',
} as const;
