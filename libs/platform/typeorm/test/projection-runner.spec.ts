// Proves the projection runner's guarantees against real NATS and real databases: rows
// and checkpoint commit together (exactly-once across a real process kill), redelivery
// is a no-op, a rebuild reproduces the live rows, and a failure that is not an event's own
// halts the runner with nothing of its batch committed (quarantine.spec.ts: ADR 0045).
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { sharedNatsUrl, uniqueNamespace } from '@tally/testing';
import {
  CHECKPOINT_TABLE,
  CheckpointMoved,
  EventBatchReader,
  ProjectionHalted,
  listQuarantine,
  projectionDigest,
  qualifiedTable,
} from '../src/index.js';
import { counterProjection, counterRegistry, COUNTER_TABLE, TestCounter } from './counter.projection.js';
import {
  counterRows,
  counterRunner,
  databasesUnderTest,
  openTestDatabase,
  runnerLimits,
  streamFixture,
  type DatabaseKindUnderTest,
  type StreamFixture,
  type TestDatabase,
} from './fixtures.js';

const repoRoot = fileURLToPath(new URL('../../../../', import.meta.url));

describe.each(databasesUnderTest())('projection runner on %s', (kind: DatabaseKindUnderTest) => {
  let nats: StreamFixture;
  const databases: TestDatabase[] = [];
  const database = async (label: string) => {
    const db = await openTestDatabase(kind, uniqueNamespace(label));
    databases.push(db);
    return db;
  };

  beforeAll(async () => {
    nats = await streamFixture(sharedNatsUrl(), uniqueNamespace('proj'));
  });
  afterEach(async () => {
    for (const db of databases.splice(0)) await db.dispose();
  });
  afterAll(async () => nats.dispose());

  it('exactly-once projection: a projector SIGKILLed mid-batch, restarted, ends with the rows of a clean rebuild', async () => {
    const lastSequence = await nats.publish(2000, 17, uniqueNamespace('kill'));
    const live = await database('live');
    const childArgs = {
      natsUrl: sharedNatsUrl(),
      stream: nats.stream,
      filterSubject: nats.filterSubject,
      database: live.location,
      batchSizeMax: 150,
    };

    const stalled = runChild({ ...childArgs, stallAtBatch: 4 });
    const line = await stalled.waitFor(/^MID-BATCH (\d+)-(\d+)$/);
    const [, first] = line.match(/^MID-BATCH (\d+)-(\d+)$/)!;
    const committedBeforeKill = await counterRunner(nats.js, live.dataSource, projectionFor(nats)).checkpoint();
    // Three batches committed; the fourth has written its rows inside an open transaction.
    expect(committedBeforeKill).toBe(Number(first) - 1);
    stalled.child.kill('SIGKILL');
    expect(await stalled.exited).toEqual({ code: null, signal: 'SIGKILL' });

    const liveRunner = counterRunner(nats.js, live.dataSource, projectionFor(nats));
    expect(await liveRunner.checkpoint()).toBe(committedBeforeKill);
    const rowsAfterKill = await counterRows(live.dataSource);
    expect(rowsAfterKill.reduce((sum, row) => sum + row.events, 0)).toBe(committedBeforeKill);

    const resumed = runChild(childArgs);
    expect(await resumed.waitFor(/^DONE \d+$/)).toBe(`DONE ${lastSequence}`);
    expect(await resumed.exited).toEqual({ code: 0, signal: null });

    const clean = await database('clean');
    const rebuilt = await counterRunner(nats.js, clean.dataSource, projectionFor(nats)).rebuild();
    expect(rebuilt).toMatchObject({ events: 2000, checkpoint: lastSequence });
    expect(await counterRows(live.dataSource)).toEqual(await counterRows(clean.dataSource));
    expect(await projectionDigest(live.dataSource, [COUNTER_TABLE])).toBe(
      await projectionDigest(clean.dataSource, [COUNTER_TABLE]),
    );
    const rows = await counterRows(live.dataSource);
    expect(rows.reduce((sum, row) => sum + row.events, 0)).toBe(2000);
    // Totals pass 2^53 and come back exact, as bigint, on both databases.
    expect(
      rows.every((row) => typeof row.totalMinor === 'bigint' && row.totalMinor > BigInt(Number.MAX_SAFE_INTEGER)),
    ).toBe(true);
  }, 120_000);

  it('a redelivered (already checkpointed) batch is a no-op, and an overlapping one applies only the new events', async () => {
    const db = await database('redeliver');
    const calls: number[] = [];
    const projection = counterProjection(nats.stream, nats.filterSubject, {
      afterWrite: async (events) => void calls.push(events.length),
    });
    const runner = counterRunner(nats.js, db.dataSource, projection);
    await runner.catchUp();
    const checkpoint = await runner.checkpoint();
    const before = await projectionDigest(db.dataSource, [COUNTER_TABLE]);
    const applyCalls = calls.length;

    const redelivered = await readRange(nats, Math.max(1, checkpoint - 99), 100);
    expect(redelivered[redelivered.length - 1]!.sequence).toBe(checkpoint);
    expect(await runner.applyBatch(redelivered)).toEqual({
      applied: 0,
      ignored: redelivered.length,
      skipped: 0,
      checkpoint,
    });
    expect(calls.length).toBe(applyCalls);
    expect(await projectionDigest(db.dataSource, [COUNTER_TABLE])).toBe(before);

    const newLast = await nats.publish(30, 5, uniqueNamespace('more'));
    const overlapping = await readRange(nats, checkpoint - 19, 50);
    expect(await runner.applyBatch(overlapping)).toEqual({ applied: 30, ignored: 20, skipped: 0, checkpoint: newLast });
    expect(calls[calls.length - 1]).toBe(30);

    const clean = await database('redeliver-clean');
    await counterRunner(nats.js, clean.dataSource, projectionFor(nats)).rebuild();
    expect(await projectionDigest(db.dataSource, [COUNTER_TABLE])).toBe(
      await projectionDigest(clean.dataSource, [COUNTER_TABLE]),
    );
  });

  it('read-your-writes: a waiter for a sequence is woken by the batch that commits it, and times out while it is not committed', async () => {
    const db = await database('wait');
    const runner = counterRunner(nats.js, db.dataSource, projectionFor(nats));
    await runner.catchUp();
    const checkpoint = await runner.checkpoint();
    expect(await runner.waitCommitted(checkpoint, 1)).toBe(true);
    const newLast = await nats.publish(10, 2, uniqueNamespace('wait'));
    expect(await runner.waitCommitted(newLast, 50)).toBe(false);
    const waiting = runner.waitCommitted(newLast, 10_000);
    const batch = await readRange(nats, checkpoint + 1, newLast - checkpoint);
    await runner.applyBatch(batch);
    expect(await waiting).toBe(true);
    expect(await runner.checkpoint()).toBe(newLast);
  });

  it('rebuild replays into empty tables and gives the same digest as the live projection', async () => {
    const db = await database('rebuild');
    const runner = counterRunner(nats.js, db.dataSource, projectionFor(nats));
    const following = runner.start();
    const last = await nats.publish(700, 9, uniqueNamespace('live'));
    await waitUntil(async () => (await runner.checkpoint()) === last, 20_000);
    await runner.stop();
    await expect(following).resolves.toBeUndefined();
    const liveDigest = await projectionDigest(db.dataSource, [COUNTER_TABLE]);
    const liveRows = await counterRows(db.dataSource);

    const progress: Array<[number, number]> = [];
    const result = await runner.rebuild({ onProgress: (done, total) => progress.push([done, total]) });
    const total = progress[0]![1];
    expect(result.checkpoint).toBe(last);
    expect(result.events).toBe(total);
    expect(progress[progress.length - 1]).toEqual([total, total]);
    expect(progress.map(([done]) => done)).toEqual([...progress.map(([done]) => done)].sort((a, b) => a - b));
    expect(await projectionDigest(db.dataSource, [COUNTER_TABLE])).toBe(liveDigest);
    expect(await counterRows(db.dataSource)).toEqual(liveRows);

    // The digest notices a single changed value.
    await db.dataSource.manager.increment(TestCounter, { aggregateId: liveRows[0]!.aggregateId }, 'events', 1);
    expect(await projectionDigest(db.dataSource, [COUNTER_TABLE])).not.toBe(liveDigest);
  });

  it('a checkpoint moved by another runner during the batch halts this runner, commits nothing of its batch and quarantines nothing', async () => {
    const db = await database('moved');
    const ok = counterRunner(nats.js, db.dataSource, projectionFor(nats));
    await ok.catchUp();
    const checkpoint = await ok.checkpoint();
    const before = await projectionDigest(db.dataSource, [COUNTER_TABLE]);
    await nats.publish(10, 3, uniqueNamespace('race'));
    // The checkpoint moves under the open batch, as when another runner of the projection commits first.
    const racing = counterProjection(nats.stream, nats.filterSubject, {
      afterWrite: async (_events, manager) => {
        await manager.query(
          `UPDATE ${qualifiedTable(db.dataSource, CHECKPOINT_TABLE)} SET sequence = sequence + 1000 WHERE projection = 'test-counter'`,
        );
      },
    });
    const error = await counterRunner(nats.js, db.dataSource, racing)
      .catchUp()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProjectionHalted);
    expect((error as ProjectionHalted).cause).toBeInstanceOf(CheckpointMoved);
    expect((error as ProjectionHalted).checkpoint).toBe(checkpoint);
    expect(await ok.checkpoint()).toBe(checkpoint);
    expect(await projectionDigest(db.dataSource, [COUNTER_TABLE])).toBe(before);
    expect(await listQuarantine(db.dataSource.manager)).toEqual([]);
  });
});

function projectionFor(nats: StreamFixture) {
  return counterProjection(nats.stream, nats.filterSubject);
}

async function readRange(nats: StreamFixture, from: number, count: number) {
  const reader = await EventBatchReader.open(nats.js, {
    stream: nats.stream,
    filterSubject: nats.filterSubject,
    startSequence: from,
    registry: counterRegistry(),
    ...runnerLimits,
  });
  try {
    return await reader.read({
      limit: count,
      batchWaitMs: 2000,
      firstWaitMs: 5000,
      stop: new Promise(() => undefined),
      stopAtEnd: true,
    });
  } finally {
    await reader.close();
  }
}

async function waitUntil(condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function runChild(args: object) {
  const child = spawn(
    process.execPath,
    ['--import', './tools/register.mjs', 'libs/platform/typeorm/test/projector-child.ts', JSON.stringify(args)],
    {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  const waiters: Array<{ pattern: RegExp; resolve: (line: string) => void }> = [];
  const check = () => {
    for (const waiter of [...waiters]) {
      const line = stdout.split('\n').find((l) => waiter.pattern.test(l));
      if (line === undefined) continue;
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve(line);
    }
  };
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
    check();
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    exited,
    waitFor(pattern: RegExp): Promise<string> {
      return new Promise((resolve, reject) => {
        waiters.push({ pattern, resolve });
        check();
        void exited.then(({ code, signal }) =>
          reject(new Error(`projector child exited (${code ?? signal}) before ${pattern}: ${stderr}`)),
        );
      });
    },
  };
}
