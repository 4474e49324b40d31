// Proves ADR 0020 (issue 9 item 5): on SQLite every transaction takes the write lock when it
// begins, so a projection batch that reads its checkpoint and then writes can never fail with
// SQLITE_BUSY because another connection wrote in between; the other writer waits its turn.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import Database from 'better-sqlite3';
import { advanceCheckpoint, readCheckpoint, SQLITE_BEGIN_IMMEDIATE } from '../src/index.js';
import { openTestDatabase, type TestDatabase } from './fixtures.js';

let db: TestDatabase;
let other: Database.Database;
beforeEach(async () => {
  db = await openTestDatabase('sqlite', 'write-lock');
  // Another connection to the same file that never waits: it shows who holds the lock right now.
  other = new Database((db.location as { sqlitePath: string }).sqlitePath, { timeout: 0 });
});
afterEach(async () => {
  other.close();
  await db.dispose();
});

describe('SQLite write transactions begin immediate (ADR 0020)', () => {
  it('9.5 a transaction holds the write lock from its first statement, before it has written anything', async () => {
    let busyInside: unknown;
    await db.dataSource.transaction(async (manager) => {
      await readCheckpoint(manager, 'p', 's');
      busyInside = catchError(() => other.exec('BEGIN IMMEDIATE'));
    });
    expect(String(busyInside)).toMatch(/database is locked/);
    // Once it has committed, the lock is free again.
    other.exec('BEGIN IMMEDIATE');
    other.exec('ROLLBACK');
    expect(SQLITE_BEGIN_IMMEDIATE).toBe('BEGIN IMMEDIATE TRANSACTION');
  });

  it('9.5 a read-then-write batch commits although another connection tries to write in between; the other writer is the one that waits', async () => {
    other.exec(`INSERT INTO test_counter (aggregate_id, total_minor, events, last_sequence) VALUES ('x', 0, 0, 0)`);
    let otherWrite: unknown;
    await db.dataSource.transaction(async (manager) => {
      const from = await readCheckpoint(manager, 'p', 's');
      // With a deferred BEGIN this write would commit, and the batch's write below would then
      // fail with SQLITE_BUSY (a stale snapshot cannot be upgraded, whatever the busy timeout).
      otherWrite = catchError(() => other.exec(`UPDATE test_counter SET events = events + 1`));
      await advanceCheckpoint(manager, 'p', 's', from, 7);
    });
    expect(String(otherWrite)).toMatch(/database is locked/);
    expect(await readCheckpoint(db.dataSource.manager, 'p', 's')).toBe(7);
    other.exec(`UPDATE test_counter SET events = events + 1`);
  });
});

function catchError(step: () => unknown): unknown {
  try {
    step();
    return undefined;
  } catch (error) {
    return error;
  }
}
