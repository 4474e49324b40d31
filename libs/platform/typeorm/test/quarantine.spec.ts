// Proves ADR 0045 on the runner, with real NATS and real databases: an event its projection
// cannot apply stops only its own aggregate (recorded, stepped over, its later events skipped,
// every other aggregate applied), a transient database failure quarantines nothing, and a
// runner whose projection now applies the event retries the aggregate until it is current.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { sharedNatsUrl, uniqueNamespace } from '@tally/testing';
import Database from 'better-sqlite3';
import pg from 'pg';
import {
  isTransientFailure,
  listQuarantine,
  openDataSource,
  projectionDigest,
  ProjectionHalted,
  type Projection,
} from '../src/index.js';
import { counterProjection, counterRegistry, COUNTER_TABLE, type AmountRecorded } from './counter.projection.js';
import {
  counterRows,
  counterRunner,
  databasesUnderTest,
  dataSourceOptions,
  openTestDatabase,
  streamFixture,
  type DatabaseKindUnderTest,
  type StreamFixture,
  type TestDatabase,
} from './fixtures.js';

const registry = counterRegistry();
/** Text a projection's error might quote: it must never reach the quarantine row. */
const CONTENT = 'customer-content-7f3a';

describe.each(databasesUnderTest())('ADR 0045 quarantine on %s', (kind: DatabaseKindUnderTest) => {
  let nats: StreamFixture;
  const databases: TestDatabase[] = [];
  const streams: StreamFixture[] = [];
  const database = async (label: string) => {
    const db = await openTestDatabase(kind, uniqueNamespace(label));
    databases.push(db);
    return db;
  };
  const publishOne = (aggregateId: string, amountMinor: number, writer = 'w') =>
    publishTo(nats, aggregateId, amountMinor, writer);

  // Each test has a stream of its own, so that every aggregate holds exactly the events it published.
  beforeEach(async () => {
    nats = await streamFixture(sharedNatsUrl(), uniqueNamespace('quar'));
    streams.push(nats);
  });
  afterEach(async () => {
    for (const db of databases.splice(0)) await db.dispose();
    for (const stream of streams.splice(0)) await stream.dispose();
  });

  it('ADR 0045 an amount past what the column holds quarantines only its aggregate: its later events are skipped, every other aggregate of the same batch applies, and a rebuild reproduces rows and quarantine', async () => {
    await nats.publish(4, 2, uniqueNamespace('before'));
    const good = await publishOne('agg-x', 10);
    const bad = await publishOne('agg-x', 2 ** 63, CONTENT);
    await publishOne('agg-x', 5);
    const lastOfX = await publishOne('agg-x', 5);
    await publishOne('agg-y', 7);
    const last = await nats.publish(4, 2, uniqueNamespace('after'));

    const db = await database('over');
    const result = await counterRunner(nats.js, db.dataSource, projectionFor(nats)).catchUp();
    expect(result).toMatchObject({ checkpoint: last });
    const rows = new Map((await counterRows(db.dataSource)).map((r) => [r.aggregateId, r]));
    // X stays as of before the bad event; Y and the others, before and after it, are current.
    expect(rows.get('agg-x')).toMatchObject({ events: 1, totalMinor: 10n, lastSequence: good });
    expect(rows.get('agg-y')).toMatchObject({ events: 1, totalMinor: 7n });
    expect(rows.get('agg-0')?.events).toBe(4);
    expect(rows.get('agg-1')?.lastSequence).toBe(last);

    const [row, ...others] = await listQuarantine(db.dataSource.manager);
    expect(others).toEqual([]);
    expect(row).toMatchObject({
      projection: 'test-counter',
      subject: nats.subject('agg-x'),
      aggregateId: 'agg-x',
      sequence: bad,
      eventType: 'AmountRecorded',
      skippedEvents: 2,
      lastSequence: lastOfX,
      resumeSequence: bad,
    });
    expect(row!.reason.length).toBeGreaterThan(5);
    expect(row!.reason).not.toContain(CONTENT);
    expect(Date.now() - row!.firstSeenAtMs).toBeLessThan(120_000);

    // Replays stay exact: the same code quarantines the same event and builds the same rows.
    const clean = await database('over-clean');
    await counterRunner(nats.js, clean.dataSource, projectionFor(nats)).rebuild();
    expect(await projectionDigest(clean.dataSource, [COUNTER_TABLE])).toBe(
      await projectionDigest(db.dataSource, [COUNTER_TABLE]),
    );
    const [rebuilt] = await listQuarantine(clean.dataSource.manager);
    const { firstSeenAtMs: _a, ...live } = row!;
    const { firstSeenAtMs: _b, ...again } = rebuilt!;
    expect(again).toEqual(live);
  }, 120_000);

  it('ADR 0045 an event that does not decode quarantines its aggregate, naming its fields and never its content; the events around it apply', async () => {
    const db = await database('undecodable');
    const runner = counterRunner(nats.js, db.dataSource, counterProjection(nats.stream, nats.filterSubject));
    await nats.publish(5, 2, uniqueNamespace('before-bad'));
    const payload = { type: 'AmountRecorded', payload: { writer: CONTENT } };
    const bad = await nats.js.publish(nats.subject('agg-bad'), JSON.stringify(payload), { timeout: 5000 });
    await publishOne('agg-bad', 3);
    const last = await nats.publish(5, 2, uniqueNamespace('after-bad'));
    for (let attempt = 0; attempt < 2; attempt++) {
      expect(await runner.catchUp()).toMatchObject({ checkpoint: last });
      const [row] = await listQuarantine(db.dataSource.manager);
      expect(row).toMatchObject({ aggregateId: 'agg-bad', sequence: bad.seq, eventType: 'AmountRecorded' });
      expect(row!.skippedEvents).toBe(1);
      expect(row!.reason).toMatch(/^UndecodableEvent: fields /);
      expect(row!.reason).not.toContain(CONTENT);
    }
    expect((await counterRows(db.dataSource)).find((r) => r.aggregateId === 'agg-bad')).toBeUndefined();
    expect(Math.max(...(await counterRows(db.dataSource)).map((r) => r.lastSequence))).toBe(last);
  });

  it('ADR 0045 a transient database failure (a lock held past the timeout) halts the runner and quarantines nothing; the batch commits once the lock is gone', async () => {
    const db = await database('transient');
    const impatient = await openDataSource({
      ...dataSourceOptions(db.location),
      sqliteBusyTimeoutMs: 200,
      postgresStatementTimeoutMs: 500,
    });
    const lock = await holdWriteLock(kind, db);
    try {
      const before = await counterRunner(nats.js, impatient, projectionFor(nats)).checkpoint();
      await nats.publish(6, 3, uniqueNamespace('locked'));
      const error = await counterRunner(nats.js, impatient, projectionFor(nats))
        .catchUp()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ProjectionHalted);
      expect(isTransientFailure((error as ProjectionHalted).cause)).toBe(true);
      await lock.release();
      expect(await listQuarantine(impatient.manager)).toEqual([]);
      expect(await counterRunner(nats.js, impatient, projectionFor(nats)).checkpoint()).toBe(before);
      const last = await nats.publish(1, 1, uniqueNamespace('unlocked'));
      expect(await counterRunner(nats.js, impatient, projectionFor(nats)).catchUp()).toMatchObject({
        checkpoint: last,
      });
      expect(await listQuarantine(impatient.manager)).toEqual([]);
    } finally {
      await lock.release();
      await impatient.destroy();
    }
  });

  it('ADR 0045 a runner restarted with a projection that now applies the event retries the aggregate in order: it leaves quarantine, its rows equal a clean rebuild, and its new events apply live', async () => {
    const db = await database('retry');
    await nats.publish(3, 3, uniqueNamespace('r-before'));
    await publishOne('agg-r', 1);
    const bad = await publishOne('agg-r', 2, CONTENT);
    await publishOne('agg-r', 3);
    await publishOne('agg-r', 4);
    await publishOne('agg-s', 5);
    // A bug: the projection throws on that event, quoting its content in the message.
    const broken = throwingFor(projectionFor(nats), (sequence) => sequence === bad);
    await counterRunner(nats.js, db.dataSource, broken).catchUp();
    const [row] = await listQuarantine(db.dataSource.manager);
    expect(row).toMatchObject({ aggregateId: 'agg-r', sequence: bad, skippedEvents: 2 });
    expect(row!.reason).toMatch(/^Error: cannot apply writer …/);
    expect(row!.reason).not.toContain(CONTENT);

    // The same bug after a restart: still quarantined, at the same event.
    expect(await counterRunner(nats.js, db.dataSource, broken).retryQuarantined()).toMatchObject([
      { aggregateId: 'agg-r', result: 'quarantined', applied: 0 },
    ]);
    expect(await listQuarantine(db.dataSource.manager)).toMatchObject([{ sequence: bad, resumeSequence: bad }]);

    // The fixed release, retrying one event per transaction so the retry resumes across chunks.
    const fixed = counterRunner(nats.js, db.dataSource, projectionFor(nats), { batchSizeMax: 1 });
    const following = fixed.start();
    await waitUntil(async () => (await listQuarantine(db.dataSource.manager)).length === 0, 20_000);
    const last = await publishOne('agg-r', 6);
    await waitUntil(async () => (await fixed.checkpoint()) === last, 20_000);
    await fixed.stop();
    await expect(following).resolves.toBeUndefined();
    expect((await counterRows(db.dataSource)).find((r) => r.aggregateId === 'agg-r')).toMatchObject({
      events: 5,
      totalMinor: 16n,
      lastSequence: last,
    });
    const clean = await database('retry-clean');
    await counterRunner(nats.js, clean.dataSource, projectionFor(nats)).rebuild();
    expect(await projectionDigest(db.dataSource, [COUNTER_TABLE])).toBe(
      await projectionDigest(clean.dataSource, [COUNTER_TABLE]),
    );
    expect(await listQuarantine(clean.dataSource.manager)).toEqual([]);
  }, 120_000);

  it('ADR 0045 a rebuild starts from an empty quarantine', async () => {
    const db = await database('rebuild');
    const bad = await publishOne('agg-q', 9);
    await counterRunner(
      nats.js,
      db.dataSource,
      throwingFor(projectionFor(nats), (s) => s === bad),
    ).catchUp();
    expect(await listQuarantine(db.dataSource.manager)).toHaveLength(1);
    await counterRunner(nats.js, db.dataSource, projectionFor(nats)).rebuild();
    expect(await listQuarantine(db.dataSource.manager)).toEqual([]);
    expect((await counterRows(db.dataSource)).find((r) => r.aggregateId === 'agg-q')?.lastSequence).toBe(bad);
  });
});

let published = 0;

/** One AmountRecorded on one aggregate's subject; returns its stream sequence. */
async function publishTo(nats: StreamFixture, aggregateId: string, amountMinor: number, writer = 'w'): Promise<number> {
  const eventId = `one-${++published}-${uniqueNamespace('e')}`;
  const data = registry.encode({
    eventId,
    type: 'AmountRecorded',
    aggregateId,
    occurredAt: '2026-01-01T00:00:00.000Z',
    payload: { amountMinor, writer },
  });
  return (await nats.js.publish(nats.subject(aggregateId), data, { msgID: eventId, timeout: 10_000 })).seq;
}

function projectionFor(nats: StreamFixture): Projection {
  return counterProjection(nats.stream, nats.filterSubject);
}

/** The projection with a bug: it throws on the events `bad` picks, quoting their writer. */
function throwingFor(projection: Projection, bad: (sequence: number) => boolean): Projection {
  return {
    ...projection,
    async apply(manager, events) {
      const hit = events.find((e) => bad(e.sequence));
      if (hit) throw new Error(`cannot apply writer "${(hit.event.payload as unknown as AmountRecorded).writer}"`);
      await projection.apply(manager, events);
    },
  };
}

/** Another connection holds the write lock (SQLite) or an exclusive lock on the counter table (PostgreSQL). */
async function holdWriteLock(kind: DatabaseKindUnderTest, db: TestDatabase): Promise<{ release(): Promise<void> }> {
  if (kind === 'sqlite') {
    const other = new Database((db.location as { sqlitePath: string }).sqlitePath);
    other.exec('BEGIN IMMEDIATE');
    let open = true;
    return {
      release: async () => {
        if (!open) return;
        open = false;
        other.exec('ROLLBACK');
        other.close();
      },
    };
  }
  const { databaseUrl, schema } = db.location as { databaseUrl: string; schema: string };
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  await client.query('BEGIN');
  await client.query(`LOCK TABLE "${schema}".${COUNTER_TABLE} IN ACCESS EXCLUSIVE MODE`);
  let open = true;
  return {
    release: async () => {
      if (!open) return;
      open = false;
      await client.query('ROLLBACK');
      await client.end();
    },
  };
}

async function waitUntil(condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
