// Integer columns read back the same way on SQLite and PostgreSQL.
//
// Why transformers: node-postgres returns int8 as a decimal string (it cannot know that
// the value fits a JS number), and better-sqlite3 is opened with safe integers on, so it
// returns every INTEGER as a bigint (a ledger must not round money above 2^53 silently).
// The column options below turn both shapes into one:
// - stream sequences and counts come back as `number`, asserted to be safe integers
//   (JetStream sequences are uint64 on the wire but the client already hands out numbers);
// - money (minor units) comes back as `bigint`, exact on both databases.
import type { ColumnOptions, ValueTransformer } from 'typeorm';

type RawInteger = number | string | bigint | null | undefined;
/** Column options other than type and transformer (name, nullable, …); works for @Column and @PrimaryColumn. */
type ColumnExtras = Omit<ColumnOptions, 'type' | 'transformer'>;

function toBigint(value: RawInteger, column: string): bigint | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new Error(`${column}: ${value} is not a safe integer`);
    return BigInt(value);
  }
  if (!/^-?[0-9]+$/.test(value)) throw new Error(`${column}: ${JSON.stringify(value)} is not an integer`);
  return BigInt(value);
}

/** Reads any integer shape as a number; a value beyond 2^53-1 is a bug, not something to round. */
export function integerToNumber(value: RawInteger, column = 'integer column'): number | null {
  const big = toBigint(value, column);
  if (big === null) return null;
  if (big > BigInt(Number.MAX_SAFE_INTEGER) || big < -BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new Error(`${column}: ${big} does not fit a JS number`);
  }
  return Number(big);
}

/** Reads any integer shape as an exact bigint. */
export function integerToBigint(value: RawInteger, column = 'integer column'): bigint | null {
  return toBigint(value, column);
}

export const numberTransformer: ValueTransformer = {
  to: (value: number | null | undefined) => value,
  from: (value: RawInteger) => integerToNumber(value),
};

export const bigintTransformer: ValueTransformer = {
  // Both drivers bind a bigint parameter exactly (pg sends its decimal text).
  to: (value: bigint | null | undefined) => value,
  from: (value: RawInteger) => integerToBigint(value),
};

type Typed<T extends string> = { type: T; transformer: ValueTransformer };

/** A bigint column that holds a stream sequence and reads back as a safe `number`. Works with @PrimaryColumn too. */
export function sequenceColumn(): Typed<'bigint'>;
export function sequenceColumn<O extends ColumnExtras>(options: O): O & Typed<'bigint'>;
export function sequenceColumn(options: ColumnExtras = {}): ColumnOptions {
  return { ...options, type: 'bigint', transformer: numberTransformer };
}

/** A 32-bit integer column (counts); SQLite still returns bigint, so it is normalized too. */
export function countColumn(): Typed<'integer'>;
export function countColumn<O extends ColumnExtras>(options: O): O & Typed<'integer'>;
export function countColumn(options: ColumnExtras = {}): ColumnOptions {
  return { ...options, type: 'integer', transformer: numberTransformer };
}

/** A bigint column of money in minor units that reads back as an exact `bigint`. */
export function moneyColumn(): Typed<'bigint'>;
export function moneyColumn<O extends ColumnExtras>(options: O): O & Typed<'bigint'>;
export function moneyColumn(options: ColumnExtras = {}): ColumnOptions {
  return { ...options, type: 'bigint', transformer: bigintTransformer };
}
