// Shared set-up for the projection tests: a real NATS stream per test, and a real
// database per test (an SQLite file in a temp dir, or a PostgreSQL schema that is dropped).
import { testEventStreamSpec } from '@tally/testing';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { tallyNames } from '@tally/contracts';
import { connectNats, ensureStream } from '@tally/platform-jetstream';
import type { DataSource } from 'typeorm';
import {
  openDataSource,
  ProjectionRunner,
  type Projection,
  type ProjectionRunnerOptions,
  type TallyDataSourceOptions,
} from '../src/index.js';
import { counterRegistry, CreateTestCounter1767225600100, TestCounter } from './counter.projection.js';

export type DatabaseKindUnderTest = 'sqlite' | 'postgres';

/** SQLite always; PostgreSQL only when DATABASE_URL is set. */
export function databasesUnderTest(): DatabaseKindUnderTest[] {
  return process.env['DATABASE_URL'] ? ['sqlite', 'postgres'] : ['sqlite'];
}

/** Where a database lives, in a form a child process can take on its command line. */
export type DatabaseLocation =
  { readonly sqlitePath: string } | { readonly databaseUrl: string; readonly schema: string };

export function dataSourceOptions(location: DatabaseLocation): TallyDataSourceOptions {
  return {
    ...location,
    entities: [TestCounter],
    migrations: [CreateTestCounter1767225600100],
    sqliteBusyTimeoutMs: 5000,
    postgresPoolSize: 4,
    postgresConnectTimeoutMs: 5000,
    postgresStatementTimeoutMs: 30_000,
  };
}

export interface TestDatabase {
  readonly location: DatabaseLocation;
  readonly dataSource: DataSource;
  dispose(): Promise<void>;
}

export async function openTestDatabase(kind: DatabaseKindUnderTest, label: string): Promise<TestDatabase> {
  if (kind === 'postgres') {
    const schema = `t_${label}`
      .toLowerCase()
      .replace(/[^a-z0-9_]/g, '_')
      .slice(0, 60);
    const location = { databaseUrl: process.env['DATABASE_URL']!, schema };
    const dataSource = await openDataSource(dataSourceOptions(location));
    return {
      location,
      dataSource,
      async dispose() {
        await dataSource.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await dataSource.destroy();
      },
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'tally-projection-'));
  const location = { sqlitePath: join(dir, 'projections.sqlite') };
  const dataSource = await openDataSource(dataSourceOptions(location));
  return {
    location,
    dataSource,
    async dispose() {
      if (dataSource.isInitialized) await dataSource.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface StreamFixture {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly stream: string;
  readonly filterSubject: string;
  subject(aggregateId: string): string;
  /** Publishes `count` AmountRecorded events spread round-robin over `aggregates` aggregates. */
  publish(count: number, aggregates: number, idPrefix: string): Promise<number>;
  dispose(): Promise<void>;
}

/** `deletable` leaves deny_delete off, so a test can take events out of the stream as a limit would. */
export async function streamFixture(url: string, namespace: string, deletable = false): Promise<StreamFixture> {
  const nc = await connectNats({
    url,
    name: `test-${namespace}`,
    connectTimeoutMs: 5000,
    maxReconnectAttempts: -1,
    reconnectTimeWaitMs: 100,
  });
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const names = tallyNames(namespace);
  const stream = names.workEventsStream;
  await ensureStream(jsm, testEventStreamSpec(stream, [names.workEventsWildcard], 256 * 1024 * 1024, !deletable));
  const registry = counterRegistry();
  return {
    nc,
    js,
    jsm,
    stream,
    filterSubject: names.workEventsWildcard,
    subject: (id) => names.workEventSubject(id),
    async publish(count, aggregates, idPrefix) {
      let last = 0;
      const windowSize = 256;
      for (let start = 0; start < count; start += windowSize) {
        const acks = [];
        for (let i = start; i < Math.min(count, start + windowSize); i++) {
          const aggregateId = `agg-${i % aggregates}`;
          // Large amounts, so the per-aggregate totals pass 2^53 and must stay exact.
          const amountMinor = 2 ** 50 + i;
          const data = registry.encode({
            eventId: `${idPrefix}-${i}`,
            type: 'AmountRecorded',
            aggregateId,
            occurredAt: '2026-01-01T00:00:00.000Z',
            payload: { amountMinor, writer: idPrefix },
          });
          acks.push(
            js.publish(names.workEventSubject(aggregateId), data, { msgID: `${idPrefix}-${i}`, timeout: 10_000 }),
          );
        }
        for (const ack of await Promise.all(acks)) last = Math.max(last, ack.seq);
      }
      return last;
    },
    async dispose() {
      await jsm.streams.delete(stream).catch(() => undefined);
      await nc.drain();
    },
  };
}

export const runnerLimits = {
  batchSizeMax: 100,
  batchWaitMs: 20,
  prefetchMessagesMax: 512,
  idleHeartbeatMs: 1000,
  pullExpiresMs: 10_000,
  catchUpStallMs: 10_000,
  isolatedAttemptsMax: 2,
  isolatedRetryDelayMs: 10,
} as const;

export function counterRunner(
  js: JetStreamClient,
  dataSource: DataSource,
  projection: Projection,
  overrides: Partial<ProjectionRunnerOptions> = {},
): ProjectionRunner {
  return new ProjectionRunner({
    js,
    dataSource,
    registry: counterRegistry(),
    projection,
    ...runnerLimits,
    ...overrides,
  });
}

export async function counterRows(dataSource: DataSource): Promise<TestCounter[]> {
  return dataSource.manager.find(TestCounter, { order: { aggregateId: 'ASC' } });
}
