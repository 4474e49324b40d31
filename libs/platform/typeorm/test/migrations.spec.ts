// Proves that the projection database is shaped by real migrations (synchronize is off),
// and that integer columns read back the same way on SQLite and PostgreSQL.
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { uniqueNamespace } from '@tally/testing';
import {
  CHECKPOINT_TABLE,
  MIGRATIONS_TABLE,
  ProjectionCheckpoint,
  QUARANTINE_TABLE,
  createTallyDataSource,
  openDataSource,
  qualifiedTable,
} from '../src/index.js';
import { COUNTER_TABLE, TestCounter } from './counter.projection.js';
import {
  dataSourceOptions,
  databasesUnderTest,
  openTestDatabase,
  type DatabaseKindUnderTest,
  type TestDatabase,
} from './fixtures.js';

describe.each(databasesUnderTest())('projection database on %s', (kind: DatabaseKindUnderTest) => {
  const databases: TestDatabase[] = [];
  afterEach(async () => {
    for (const db of databases.splice(0)) await db.dispose();
  });

  it('migrations are real: a fresh database gets its tables from migrations with synchronize off', async () => {
    const fresh = createTallyDataSource(dataSourceOptions({ sqlitePath: join(tmpdir(), 'never-opened.sqlite') }));
    expect(fresh.options.synchronize).toBe(false);
    const db = await openTestDatabase(kind, uniqueNamespace('mig'));
    databases.push(db);
    expect(db.dataSource.options.synchronize).toBe(false);
    const runner = db.dataSource.createQueryRunner();
    try {
      const prefix = kind === 'postgres' ? `${(db.location as { schema: string }).schema}.` : '';
      const checkpoint = await runner.getTable(`${prefix}${CHECKPOINT_TABLE}`);
      expect(checkpoint?.columns.map((c) => c.name).sort()).toEqual(['projection', 'sequence', 'stream', 'updated_at']);
      expect(checkpoint?.primaryColumns.map((c) => c.name)).toEqual(['projection']);
      expect(checkpoint?.findColumnByName('sequence')?.type).toBe('bigint');
      expect(checkpoint?.findColumnByName('sequence')?.isNullable).toBe(false);
      expect(await runner.hasTable(`${prefix}${COUNTER_TABLE}`)).toBe(true);
      const quarantine = await runner.getTable(`${prefix}${QUARANTINE_TABLE}`);
      expect(quarantine?.primaryColumns.map((c) => c.name)).toEqual(['projection', 'subject']);
    } finally {
      await runner.release();
    }
    const applied: Array<{ name: string }> = await db.dataSource.query(
      `SELECT name FROM ${qualifiedTable(db.dataSource, MIGRATIONS_TABLE)} ORDER BY id`,
    );
    expect(applied.map((m) => m.name)).toEqual([
      'CreateProjectionCheckpoint1767225600000',
      'CreateTestCounter1767225600100',
      'CreateProjectionQuarantine1767226545000',
    ]);
    expect(await db.dataSource.showMigrations()).toBe(false);

    // Opening again runs nothing: the migrations table says all are applied.
    const again = await openDataSource(dataSourceOptions(db.location));
    try {
      const count: Array<{ n: unknown }> = await again.query(
        `SELECT COUNT(*) AS n FROM ${qualifiedTable(again, MIGRATIONS_TABLE)}`,
      );
      expect(Number(count[0]!.n)).toBe(3);
    } finally {
      await again.destroy();
    }
  });

  it('bigint columns read back exactly: money as bigint beyond 2^53, sequences as safe numbers', async () => {
    const db = await openTestDatabase(kind, uniqueNamespace('big'));
    databases.push(db);
    const huge = 2n ** 62n + 7n;
    await db.dataSource.manager.insert(TestCounter, {
      aggregateId: 'a',
      totalMinor: huge,
      events: 3,
      lastSequence: 2 ** 53 - 1,
    });
    await db.dataSource.manager.insert(ProjectionCheckpoint, { projection: 'p', stream: 'S', sequence: 2 ** 40 });
    const row = await db.dataSource.manager.findOneByOrFail(TestCounter, { aggregateId: 'a' });
    expect(row).toEqual({ aggregateId: 'a', totalMinor: huge, events: 3, lastSequence: 2 ** 53 - 1 });
    expect(typeof row.events).toBe('number');
    expect(await db.dataSource.manager.findOneByOrFail(ProjectionCheckpoint, { projection: 'p' })).toEqual({
      projection: 'p',
      stream: 'S',
      sequence: 2 ** 40,
    });

    // A sequence beyond 2^53-1 cannot be a JS number: reading it fails loudly instead of rounding.
    await db.dataSource.query(
      `UPDATE ${qualifiedTable(db.dataSource, COUNTER_TABLE)} SET last_sequence = ${2n ** 60n}`,
    );
    await expect(db.dataSource.manager.findOneBy(TestCounter, { aggregateId: 'a' })).rejects.toThrow(
      /does not fit a JS number/,
    );
  });
});
