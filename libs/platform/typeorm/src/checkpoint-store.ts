// Reads and advances checkpoints inside the batch transaction. The advance is
// conditional on the sequence it read, so two runners of one projection cannot both
// commit the same batch: the loser's statement matches no row and its batch rolls back.
import type { DataSource, EntityManager } from 'typeorm';
import { CHECKPOINT_TABLE, ProjectionCheckpoint } from './checkpoint.entity.js';
import { databaseKind, qualifiedTable } from './data-source.js';

export class CheckpointMoved extends Error {
  override readonly name = 'CheckpointMoved';
  constructor(
    readonly projection: string,
    readonly expectedSequence: number,
  ) {
    super(
      `checkpoint of ${projection} moved away from ${expectedSequence} during the batch: is another runner of it active?`,
    );
  }
}

/** The committed sequence (0 before the first batch); refuses a checkpoint recorded for another stream. */
export async function readCheckpoint(manager: EntityManager, projection: string, stream: string): Promise<number> {
  const row = await manager.findOneBy(ProjectionCheckpoint, { projection });
  if (!row) return 0;
  if (row.stream !== stream) {
    throw new Error(
      `checkpoint of ${projection} belongs to stream ${row.stream}, not ${stream}; rebuild it or rename the projection`,
    );
  }
  return row.sequence;
}

export async function advanceCheckpoint(
  manager: EntityManager,
  projection: string,
  stream: string,
  from: number,
  to: number,
): Promise<void> {
  if (!(to > from)) throw new Error(`checkpoint of ${projection} must advance: ${from} -> ${to}`);
  const runner = manager.queryRunner;
  if (!runner) throw new Error('advanceCheckpoint must run inside a transaction');
  const table = qualifiedTable(manager.connection, CHECKPOINT_TABLE);
  const p = placeholders(manager.connection);
  if (from === 0) {
    // A concurrent first batch fails here on the primary key, which rolls it back.
    await runner.query(
      `INSERT INTO ${table} (projection, stream, sequence, updated_at) VALUES (${p(1)}, ${p(2)}, ${p(3)}, CURRENT_TIMESTAMP)`,
      [projection, stream, to],
    );
    return;
  }
  const result = await runner.query(
    `UPDATE ${table} SET sequence = ${p(1)}, updated_at = CURRENT_TIMESTAMP WHERE projection = ${p(2)} AND sequence = ${p(3)}`,
    [to, projection, from],
    true,
  );
  if (result.affected !== 1) throw new CheckpointMoved(projection, from);
}

export async function deleteCheckpoint(manager: EntityManager, projection: string): Promise<void> {
  await manager.delete(ProjectionCheckpoint, { projection });
}

/** Positional parameter markers: $n on PostgreSQL, ? on SQLite. */
export function placeholders(dataSource: DataSource): (n: number) => string {
  return databaseKind(dataSource) === 'postgres' ? (n) => `$${n}` : () => '?';
}
