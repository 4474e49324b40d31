// Reads a work projection database back for the replay tests: a digest of its rows and how
// far along the namespace's work stream it has projected, so a live database and one rebuilt
// by replay can be compared byte for byte.
import {
  PROJECTION_WARNING_TABLE,
  SESSION_ENTRY_TABLE,
  SESSION_MESSAGE_TABLE,
  WORK_PROJECTION_ENTITIES,
  WORK_PROJECTION_MIGRATIONS,
  WORK_UNITS_PROJECTION,
  WORK_UNIT_TABLE,
} from '@tally/orchestrator-projections';
import { openDataSource, projectionDigest, readCheckpoint } from '@tally/platform-typeorm';
import type { TestDatabase } from './orchestrator.harness.js';

const TABLES = [WORK_UNIT_TABLE, SESSION_ENTRY_TABLE, SESSION_MESSAGE_TABLE, PROJECTION_WARNING_TABLE];

/** The digest of the work projection's rows in `db` and its checkpoint on `namespace`'s work stream. */
export async function workProjectionDigest(
  db: TestDatabase,
  namespace: string,
): Promise<{ digest: string; checkpoint: number }> {
  const ds = await openDataSource({
    ...db.open,
    entities: WORK_PROJECTION_ENTITIES,
    migrations: WORK_PROJECTION_MIGRATIONS,
    sqliteBusyTimeoutMs: 10_000,
    postgresPoolSize: 1,
    postgresConnectTimeoutMs: 5_000,
    postgresStatementTimeoutMs: 30_000,
  });
  try {
    const stream = `${namespace.toUpperCase().replace(/-/g, '_')}_WORK_EVENTS`;
    return {
      digest: await projectionDigest(ds, TABLES),
      checkpoint: await readCheckpoint(ds.manager, WORK_UNITS_PROJECTION, stream),
    };
  } finally {
    await ds.destroy();
  }
}
