// A digest of a projection's rows, so `tally replay --verify` can prove that a rebuild
// equals the live tables. Rows are read in primary-key order (all columns when a table
// has no key), columns in name order, and each value is written in a canonical form:
// integers as decimal text whatever the driver returned (number, string or bigint).
//
// The digest is stable for one database kind. Integer and text columns hash the same on
// SQLite and PostgreSQL (text keys are ordered bytewise on both: COLLATE "C"); timestamp
// and boolean columns do not, because the two databases store them differently.
import { createHash, type Hash } from 'node:crypto';
import type { DataSource, TableColumn } from 'typeorm';
import { databaseKind, postgresSchema, qualifiedTable } from './data-source.js';

export interface DigestOptions {
  /** Rows fetched per query, so a large table never sits in memory whole. */
  readonly pageRowsMax: number;
}

const INTEGER_TYPES = /^(int|integer|int2|int4|int8|smallint|bigint|tinyint|mediumint)$/i;
const TEXT_TYPES = /(char|text|clob|string)/i;

export async function projectionDigest(
  dataSource: DataSource,
  tables: readonly string[],
  options: DigestOptions = { pageRowsMax: 5000 },
): Promise<string> {
  const hash = createHash('sha256');
  for (const table of [...tables].sort()) await hashTable(dataSource, table, hash, options.pageRowsMax);
  return hash.digest('hex');
}

async function hashTable(dataSource: DataSource, name: string, hash: Hash, pageRowsMax: number): Promise<void> {
  const table = await describeTable(dataSource, name);
  const columns = [...table.columns].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const keys = table.columns.filter((c) => c.isPrimary);
  const order = (keys.length > 0 ? keys : columns).map((c) => orderTerm(dataSource, c)).join(', ');
  const select = columns.map((c) => dataSource.driver.escape(c.name)).join(', ');
  hash.update(`table ${name} [${columns.map((c) => c.name).join(',')}]\n`);
  let rows = 0;
  for (let offset = 0; ; offset += pageRowsMax) {
    const page: Record<string, unknown>[] = await dataSource.query(
      `SELECT ${select} FROM ${qualifiedTable(dataSource, name)} ORDER BY ${order} LIMIT ${pageRowsMax} OFFSET ${offset}`,
    );
    for (const row of page) hash.update(JSON.stringify(columns.map((c) => canonical(row[c.name], c))) + '\n');
    rows += page.length;
    if (page.length < pageRowsMax) break;
  }
  hash.update(`rows ${rows}\n`);
}

async function describeTable(dataSource: DataSource, name: string) {
  const runner = dataSource.createQueryRunner();
  try {
    const path = databaseKind(dataSource) === 'postgres' ? `${postgresSchema(dataSource)}.${name}` : name;
    const table = await runner.getTable(path);
    if (!table) throw new Error(`cannot digest ${name}: no such table`);
    return table;
  } finally {
    await runner.release();
  }
}

function orderTerm(dataSource: DataSource, column: TableColumn): string {
  const escaped = dataSource.driver.escape(column.name);
  return databaseKind(dataSource) === 'postgres' && TEXT_TYPES.test(column.type) ? `${escaped} COLLATE "C"` : escaped;
}

function canonical(value: unknown, column: TableColumn): unknown {
  if (value === null || value === undefined) return null;
  if (INTEGER_TYPES.test(column.type)) return { i: BigInt(value as string | number | bigint).toString() };
  if (typeof value === 'bigint') return { i: value.toString() };
  if (value instanceof Date) return { t: value.toISOString() };
  if (Buffer.isBuffer(value)) return { b: value.toString('base64') };
  if (typeof value === 'object') return { j: stableJson(value) };
  return value;
}

function stableJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(',')}}`;
}
