// Multi-row INSERT and upsert for projections. One statement per chunk instead of one
// per row is what lets a rebuild keep up with the raw replay. The SQL is built here from
// the entity metadata rather than by TypeORM's InsertQueryBuilder, whose per-parameter
// bookkeeping costs more than the database work at a few thousand rows per statement;
// values still go through the driver (transformers, dates, booleans), and a full chunk
// always has the same SQL text, so SQLite reuses its prepared statement.
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

export async function bulkInsert<T extends ObjectLiteral>(manager: EntityManager, entity: EntityTarget<T>, rows: readonly T[], options: BulkWriteOptions): Promise<void> {
  await writeChunks(manager, entity, rows, options.rowsPerStatementMax, '');
}

export async function bulkUpsert<T extends ObjectLiteral>(manager: EntityManager, entity: EntityTarget<T>, rows: readonly T[], options: BulkUpsertOptions): Promise<void> {
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
  const suffix = update ? ` ON CONFLICT (${conflict}) DO UPDATE SET ${update}` : ` ON CONFLICT (${conflict}) DO NOTHING`;
  await writeChunks(manager, entity, rows, options.rowsPerStatementMax, suffix);
}

async function writeChunks<T extends ObjectLiteral>(manager: EntityManager, entity: EntityTarget<T>, rows: readonly T[], rowsMax: number, suffix: string): Promise<void> {
  if (rows.length === 0) return;
  const dataSource = manager.connection;
  const metadata = dataSource.getMetadata(entity);
  const columns = metadata.columns.filter((c) => c.isInsert && !c.isVirtual);
  const table = metadata.tablePath.split('.').map((part) => dataSource.driver.escape(part)).join('.');
  const head = `INSERT INTO ${table} (${columns.map((c) => dataSource.driver.escape(c.databaseName)).join(', ')}) VALUES `;
  const postgres = databaseKind(dataSource) === 'postgres';
  const size = Math.max(1, Math.min(rowsMax, Math.floor(PARAMETERS_MAX / columns.length)));
  for (let start = 0; start < rows.length; start += size) {
    const chunk = rows.slice(start, start + size);
    const params: unknown[] = [];
    const tuples: string[] = [];
    for (const row of chunk) {
      const marks: string[] = [];
      for (const column of columns) {
        params.push(dataSource.driver.preparePersistentValue(column.getEntityValue(row), column));
        marks.push(postgres ? `$${params.length}` : '?');
      }
      tuples.push(`(${marks.join(', ')})`);
    }
    await manager.query(head + tuples.join(', ') + suffix, params);
  }
}
