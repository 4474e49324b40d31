// Multi-row INSERT and upsert for projections. One statement per chunk instead of one
// per row is what makes a rebuild keep up with the raw replay; the chunk bound keeps
// each statement under the databases' parameter limits (SQLite 32766, PostgreSQL 65535).
import type { EntityManager, EntityTarget, ObjectLiteral } from 'typeorm';

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
  for (const chunk of chunks(manager, entity, rows, options.rowsPerStatementMax)) {
    await manager.createQueryBuilder().insert().into(entity).values(chunk).updateEntity(false).execute();
  }
}

export async function bulkUpsert<T extends ObjectLiteral>(manager: EntityManager, entity: EntityTarget<T>, rows: readonly T[], options: BulkUpsertOptions): Promise<void> {
  const metadata = manager.connection.getMetadata(entity);
  const columnName = (property: string) => {
    const column = metadata.findColumnWithPropertyPath(property);
    if (!column) throw new Error(`${metadata.name} has no property ${property}`);
    return column.databaseName;
  };
  const conflict = options.conflictColumns.map(columnName);
  const update = options.updateColumns.map(columnName);
  for (const chunk of chunks(manager, entity, rows, options.rowsPerStatementMax)) {
    await manager.createQueryBuilder().insert().into(entity).values(chunk).orUpdate(update, conflict).updateEntity(false).execute();
  }
}

function* chunks<T extends ObjectLiteral>(manager: EntityManager, entity: EntityTarget<T>, rows: readonly T[], rowsMax: number): Generator<T[]> {
  const columns = manager.connection.getMetadata(entity).columns.length;
  const size = Math.max(1, Math.min(rowsMax, Math.floor(PARAMETERS_MAX / Math.max(1, columns))));
  for (let i = 0; i < rows.length; i += size) yield rows.slice(i, i + size) as T[];
}
