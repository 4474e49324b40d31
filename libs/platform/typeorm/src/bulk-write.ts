// Multi-row INSERT and upsert for projections. One statement per chunk instead of one
// per row is what lets a rebuild keep up with the raw replay. The SQL is built here from
// the entity metadata rather than by TypeORM's InsertQueryBuilder, whose per-parameter
// bookkeeping costs more than the database work at a few thousand rows per statement.
// Values still go through the driver (transformers, dates, booleans). On SQLite a full
// chunk always has the same SQL text, so the prepared statement is reused; on PostgreSQL
// the rows travel as one array per column through unnest.
import type { EntityManager, EntityTarget, ObjectLiteral } from 'typeorm';
import type { ColumnMetadata } from 'typeorm/metadata/ColumnMetadata.js';
import { databaseKind } from './data-source.js';

/** Stays under SQLite's 32766 and PostgreSQL's 65535 bound parameters per statement. */
const PARAMETERS_MAX = 30_000;

export interface BulkWriteOptions {
  readonly rowsPerStatementMax: number;
}

export interface BulkUpsertOptions extends BulkWriteOptions {
  /** Property names of the unique key the rows collide on. */
  readonly conflictColumns: readonly string[];
  /** Property names overwritten from the new row on a collision. */
  readonly updateColumns: readonly string[];
}

export async function bulkInsert<T extends ObjectLiteral>(
  manager: EntityManager,
  entity: EntityTarget<T>,
  rows: readonly T[],
  options: BulkWriteOptions,
): Promise<void> {
  await writeChunks(manager, entity, rows, options.rowsPerStatementMax, '');
}

export async function bulkUpsert<T extends ObjectLiteral>(
  manager: EntityManager,
  entity: EntityTarget<T>,
  rows: readonly T[],
  options: BulkUpsertOptions,
): Promise<void> {
  const metadata = manager.connection.getMetadata(entity);
  const escape = (c: ColumnMetadata) => manager.connection.driver.escape(c.databaseName);
  const column = (property: string) => {
    const found = metadata.findColumnWithPropertyPath(property);
    if (!found) throw new Error(`${metadata.name} has no property ${property}`);
    return found;
  };
  if (options.conflictColumns.length === 0) throw new Error('bulkUpsert needs conflictColumns');
  const conflict = options.conflictColumns.map((p) => escape(column(p))).join(', ');
  const update = options.updateColumns.map((p) => `${escape(column(p))} = excluded.${escape(column(p))}`).join(', ');
  const suffix = update
    ? ` ON CONFLICT (${conflict}) DO UPDATE SET ${update}`
    : ` ON CONFLICT (${conflict}) DO NOTHING`;
  await writeChunks(manager, entity, rows, options.rowsPerStatementMax, suffix);
}

async function writeChunks<T extends ObjectLiteral>(
  manager: EntityManager,
  entity: EntityTarget<T>,
  rows: readonly T[],
  rowsMax: number,
  suffix: string,
): Promise<void> {
  if (rows.length === 0) return;
  const dataSource = manager.connection;
  const metadata = dataSource.getMetadata(entity);
  const columns = metadata.columns.filter((c) => c.isInsert && !c.isVirtual);
  const table = metadata.tablePath
    .split('.')
    .map((part) => dataSource.driver.escape(part))
    .join('.');
  const head = `INSERT INTO ${table} (${columns.map((c) => dataSource.driver.escape(c.databaseName)).join(', ')}) `;
  const value = (row: T, column: ColumnMetadata) =>
    dataSource.driver.preparePersistentValue(column.getEntityValue(row), column);
  if (databaseKind(dataSource) === 'postgres') {
    // One array parameter per column: PostgreSQL parses and plans a 3-parameter statement
    // instead of one with thousands of parameters, whatever the chunk size.
    const arrays = columns.map((c, i) => `$${i + 1}::${dataSource.driver.normalizeType(c)}[]`).join(', ');
    const sql = `${head}SELECT * FROM unnest(${arrays})${suffix}`;
    for (let start = 0; start < rows.length; start += rowsMax) {
      const chunk = rows.slice(start, start + rowsMax);
      await manager.query(
        sql,
        columns.map((c) => chunk.map((row) => value(row, c))),
      );
    }
    return;
  }
  const size = Math.max(1, Math.min(rowsMax, Math.floor(PARAMETERS_MAX / columns.length)));
  const tuple = `(${columns.map(() => '?').join(', ')})`;
  for (let start = 0; start < rows.length; start += size) {
    const chunk = rows.slice(start, start + size);
    const params: unknown[] = [];
    for (const row of chunk) for (const column of columns) params.push(value(row, column));
    await manager.query(`${head}VALUES ${new Array<string>(chunk.length).fill(tuple).join(', ')}${suffix}`, params);
  }
}
