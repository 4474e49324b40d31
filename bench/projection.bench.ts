// Projection suite: how fast a projection rebuild replays a stream into the database,
// against a raw ordered-consumer replay of the same events in the same run. The rebuild
// decodes and validates every event, writes one row per event plus per-aggregate totals
// with multi-row statements, and commits rows + checkpoint per batch. Target (reported,
// not asserted): rebuild >= 0.25x raw replay.
import { testEventStreamSpec } from '@tally/testing';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { DeliverPolicy, jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import { EventRegistry, tallyNames, type TallyNames } from '@tally/contracts';
import type { StoredEvent } from '@tally/eventing';
import { connectNats, ensureStream } from '@tally/platform-jetstream';
import {
  bulkInsert,
  bulkUpsert,
  countColumn,
  moneyColumn,
  openDataSource,
  ProjectionRunner,
  QUARANTINE_LIMITS,
  sequenceColumn,
  type Projection,
  type TallyDataSourceOptions,
} from '@tally/platform-typeorm';
import { IsInt, IsString, Length, Min } from 'class-validator';
import {
  Column,
  Entity,
  In,
  PrimaryColumn,
  Table,
  type DataSource,
  type EntityManager,
  type MigrationInterface,
  type QueryRunner,
} from 'typeorm';
import type { BenchContext, BenchRow, BenchSuite } from './lib.js';

const SUITE = 'projection';
const RAW_CASE = 'raw ordered replay (projection)';
const AGGREGATES = 1000;
const PUBLISH_IN_FLIGHT = 512;
const ROUNDS = 3;
const READ_LIMITS = { prefetchMessagesMax: 8192, idleHeartbeatMs: 5000, pullExpiresMs: 30_000 } as const;
const BATCH = { batchSizeMax: 5000, batchWaitMs: 50, catchUpStallMs: 30_000 } as const;

class BenchUsageRecorded {
  @IsString() @Length(1, 64) capability_id!: string;
  @IsInt() @Min(0) amount_minor!: number;
}

const registry = new EventRegistry([{ type: 'BenchUsageRecorded', version: 1, payload: BenchUsageRecorded }]);

@Entity({ name: 'bench_usage_event' })
class BenchUsageEvent {
  @PrimaryColumn(sequenceColumn()) sequence!: number;
  @Column({ name: 'capability_id', type: 'varchar', length: 64 }) capabilityId!: string;
  @Column(moneyColumn({ name: 'amount_minor' })) amountMinor!: bigint;
}

@Entity({ name: 'bench_usage_total' })
class BenchUsageTotal {
  @PrimaryColumn({ name: 'capability_id', type: 'varchar', length: 64 }) capabilityId!: string;
  @Column(moneyColumn({ name: 'total_minor' })) totalMinor!: bigint;
  @Column(countColumn()) events!: number;
}

class CreateBenchUsage1767225600900 implements MigrationInterface {
  name = 'CreateBenchUsage1767225600900';
  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createTable(
      new Table({
        name: 'bench_usage_event',
        columns: [
          { name: 'sequence', type: 'bigint', isPrimary: true },
          { name: 'capability_id', type: 'varchar', length: '64' },
          { name: 'amount_minor', type: 'bigint' },
        ],
      }),
    );
    await queryRunner.createTable(
      new Table({
        name: 'bench_usage_total',
        columns: [
          { name: 'capability_id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'total_minor', type: 'bigint' },
          { name: 'events', type: 'integer' },
        ],
      }),
    );
  }
  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('bench_usage_total');
    await queryRunner.dropTable('bench_usage_event');
  }
}

function usageProjection(names: TallyNames): Projection {
  return {
    name: 'bench-usage',
    stream: names.workEventsStream,
    filterSubject: names.workEventsWildcard,
    tables: ['bench_usage_event', 'bench_usage_total'],
    async apply(manager: EntityManager, events: readonly StoredEvent[]): Promise<void> {
      const rows: BenchUsageEvent[] = [];
      const totals = new Map<string, BenchUsageTotal>();
      for (const { sequence, event } of events) {
        const payload = event.payload as unknown as BenchUsageRecorded;
        rows.push({ sequence, capabilityId: payload.capability_id, amountMinor: BigInt(payload.amount_minor) });
        const total = totals.get(payload.capability_id) ?? {
          capabilityId: payload.capability_id,
          totalMinor: 0n,
          events: 0,
        };
        total.totalMinor += BigInt(payload.amount_minor);
        total.events += 1;
        totals.set(payload.capability_id, total);
      }
      const existing = await manager.findBy(BenchUsageTotal, { capabilityId: In([...totals.keys()]) });
      for (const row of existing) {
        const total = totals.get(row.capabilityId)!;
        total.totalMinor += row.totalMinor;
        total.events += row.events;
      }
      await bulkInsert(manager, BenchUsageEvent, rows, { rowsPerStatementMax: 2000 });
      await bulkUpsert(manager, BenchUsageTotal, [...totals.values()], {
        conflictColumns: ['capabilityId'],
        updateColumns: ['totalMinor', 'events'],
        rowsPerStatementMax: 2000,
      });
    },
  };
}

async function publishEvents(js: JetStreamClient, names: TallyNames, count: number): Promise<void> {
  for (let start = 0; start < count; start += PUBLISH_IN_FLIGHT) {
    const acks = [];
    for (let i = start; i < Math.min(count, start + PUBLISH_IN_FLIGHT); i++) {
      const capability = `cap-${i % AGGREGATES}`;
      const data = registry.encode({
        eventId: `u-${i}`,
        type: 'BenchUsageRecorded',
        aggregateId: capability,
        occurredAt: '2026-01-01T00:00:00.000Z',
        payload: { capability_id: capability, amount_minor: 100 + (i % 997) },
      });
      acks.push(js.publish(names.workEventSubject(capability), data, { msgID: `u-${i}`, timeout: 30_000 }));
    }
    await Promise.all(acks);
  }
}

/** The raw twin: same ordered consumer settings, JSON.parse only, no validation, no database. */
async function rawReplay(js: JetStreamClient, names: TallyNames, count: number): Promise<number> {
  const started = performance.now();
  const consumer = await js.consumers.get(names.workEventsStream, {
    filter_subjects: names.workEventsWildcard,
    deliver_policy: DeliverPolicy.All,
  });
  const messages = await consumer.consume({
    max_messages: READ_LIMITS.prefetchMessagesMax,
    idle_heartbeat: READ_LIMITS.idleHeartbeatMs,
    expires: READ_LIMITS.pullExpiresMs,
  });
  let seen = 0;
  for await (const msg of messages) {
    JSON.parse(new TextDecoder().decode(msg.data));
    if (++seen >= count) break;
  }
  await messages.close();
  return count / ((performance.now() - started) / 1000);
}

interface BenchDatabase {
  readonly label: 'SQLite' | 'PostgreSQL';
  open(round: number): Promise<{ dataSource: DataSource; dispose(): Promise<void> }>;
}

function databaseOptions(
  location: Pick<TallyDataSourceOptions, 'databaseUrl' | 'schema' | 'sqlitePath'>,
): TallyDataSourceOptions {
  return {
    ...location,
    entities: [BenchUsageEvent, BenchUsageTotal],
    migrations: [CreateBenchUsage1767225600900],
    sqliteBusyTimeoutMs: 5000,
    postgresPoolSize: 4,
    postgresConnectTimeoutMs: 5000,
    postgresStatementTimeoutMs: 60_000,
  };
}

function benchDatabases(ctx: BenchContext, runId: string): BenchDatabase[] {
  const sqlite: BenchDatabase = {
    label: 'SQLite',
    async open() {
      const dir = mkdtempSync(join(tmpdir(), 'tally-bench-projection-'));
      const dataSource = await openDataSource(databaseOptions({ sqlitePath: join(dir, 'projections.sqlite') }));
      return {
        dataSource,
        dispose: async () => (await dataSource.destroy(), rmSync(dir, { recursive: true, force: true })),
      };
    },
  };
  const databaseUrl = ctx.databaseUrl;
  if (!databaseUrl) return [sqlite];
  const postgres: BenchDatabase = {
    label: 'PostgreSQL',
    async open(round) {
      const schema = `bench_${runId}_${round}`;
      const dataSource = await openDataSource(databaseOptions({ databaseUrl, schema }));
      return {
        dataSource,
        dispose: async () => (
          await dataSource.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`),
          await dataSource.destroy()
        ),
      };
    },
  };
  return [sqlite, postgres];
}

/** One rebuild into a fresh database; checks the rows before it reports a number. */
async function rebuildOnce(
  js: JetStreamClient,
  names: TallyNames,
  db: BenchDatabase,
  round: number,
  count: number,
): Promise<number> {
  const { dataSource, dispose } = await db.open(round);
  try {
    const runner = new ProjectionRunner({
      js,
      dataSource,
      registry,
      projection: usageProjection(names),
      ...READ_LIMITS,
      ...BATCH,
      ...QUARANTINE_LIMITS,
    });
    const started = performance.now();
    const result = await runner.rebuild();
    const seconds = (performance.now() - started) / 1000;
    const rows = await dataSource.manager.count(BenchUsageEvent);
    if (result.events !== count || rows !== count)
      throw new Error(`${db.label} rebuild applied ${result.events} events, ${rows} rows; expected ${count}`);
    return count / seconds;
  } finally {
    await dispose();
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

export const projectionSuite: BenchSuite = {
  name: SUITE,
  async run(ctx: BenchContext): Promise<BenchRow[]> {
    const nc = await connectNats({
      url: ctx.natsUrl,
      name: 'bench-projection',
      connectTimeoutMs: 5000,
      maxReconnectAttempts: 10,
      reconnectTimeWaitMs: 200,
    });
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const runId = Date.now().toString(36);
    const names = tallyNames(`benchproj${runId}`);
    const count = Math.max(1000, Math.round(100_000 * ctx.scale));
    try {
      await ensureStream(
        jsm,
        testEventStreamSpec(names.workEventsStream, [names.workEventsWildcard], 1024 * 1024 * 1024, false),
      );
      ctx.log(`projection: publishing ${count} events over ${AGGREGATES} aggregates`);
      await publishEvents(js, names, count);
      const databases = benchDatabases(ctx, runId);
      const raw: number[] = [];
      const rebuilds = databases.map(() => [] as number[]);
      for (let round = 0; round < ROUNDS; round++) {
        ctx.log(
          `projection: round ${round + 1}/${ROUNDS}: raw replay, then rebuild into ${databases.map((d) => d.label).join(' and ')}`,
        );
        raw.push(await rawReplay(js, names, count));
        for (const [k, db] of databases.entries()) rebuilds[k]!.push(await rebuildOnce(js, names, db, round, count));
      }
      const note = `median of ${ROUNDS}; batch ${BATCH.batchSizeMax}; ${count} events, 2 tables (row per event + totals); target ratio >= 0.25`;
      return [
        {
          suite: SUITE,
          case: RAW_CASE,
          metric: 'events/s',
          value: median(raw),
          note: `median of ${ROUNDS}; JSON.parse only`,
        },
        ...databases.map((db, k): BenchRow => ({
          suite: SUITE,
          case: `projection rebuild (${db.label})`,
          metric: 'events/s',
          value: median(rebuilds[k]!),
          baselineCase: RAW_CASE,
          note,
        })),
      ];
    } finally {
      await jsm.streams.delete(names.workEventsStream).catch(() => undefined);
      await nc.drain();
    }
  },
};
