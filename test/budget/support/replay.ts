// Audit is a replay: rebuilds the budget projections from the stream into an empty
// database and compares them with the live database the authority processes wrote.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstream } from '@nats-io/jetstream';
import { Ed25519Signer } from '@tally/budget-infrastructure';
import {
  BUDGET_ENTITIES,
  BUDGET_LEDGER_PROJECTION,
  BUDGET_TABLES,
  ReceiptRow,
  UsageRow,
} from '@tally/budget-projections';
import { connectNats } from '@tally/platform-jetstream';
import { runnerFor } from '@tally/platform-app';
import { openDataSource, pollCheckpoint, projectionDigest, type TallyDataSourceOptions } from '@tally/platform-typeorm';
import { sharedNatsUrl } from '@tally/testing';
import type { DataSource } from 'typeorm';
import { BUDGET_MIGRATIONS, budgetProjectionSpecs } from '@tally/budget-projections';
import type { AuthorityStack } from './authority-stack.js';

const common = {
  entities: BUDGET_ENTITIES,
  migrations: BUDGET_MIGRATIONS,
  sqliteBusyTimeoutMs: 10_000,
  postgresPoolSize: 4,
  postgresConnectTimeoutMs: 5_000,
  postgresStatementTimeoutMs: 60_000,
};

export function liveDatabase(stack: AuthorityStack): Promise<DataSource> {
  const url = stack.env['DATABASE_URL'];
  const options: TallyDataSourceOptions = url
    ? { ...common, databaseUrl: url }
    : { ...common, sqlitePath: stack.env['TALLY_SQLITE_PATH']! };
  return openDataSource(options);
}

export interface Replayed {
  readonly dataSource: DataSource;
  readonly checkpoint: number;
  dispose(): Promise<void>;
}

/** Rebuilds every budget projection from the stream into a fresh database (SQLite, or a fresh PostgreSQL schema). */
export async function rebuildIntoEmptyDatabase(stack: AuthorityStack): Promise<Replayed> {
  const url = stack.env['DATABASE_URL'];
  const dir = mkdtempSync(join(tmpdir(), 'tally-replay-'));
  const schema = `replay_${stack.names.namespace}`
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .slice(0, 60);
  if (url) {
    const admin = await openDataSource({ ...common, databaseUrl: url, entities: [], migrations: [] });
    await admin.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await admin.destroy();
  }
  const dataSource = await openDataSource(
    url ? { ...common, databaseUrl: url, schema } : { ...common, sqlitePath: join(dir, 'replay.sqlite') },
  );
  const nc = await connectNats({
    url: sharedNatsUrl(),
    name: 'replay-test',
    connectTimeoutMs: 5_000,
    maxReconnectAttempts: 5,
    reconnectTimeWaitMs: 100,
  });
  try {
    const signer = Ed25519Signer.fromSeed(stack.env['TALLY_SIGNING_KEY']!);
    let checkpoint = 0;
    for (const spec of budgetProjectionSpecs(stack.names, signer)) {
      const runner = runnerFor(jetstream(nc), dataSource, spec);
      await runner.rebuild();
      checkpoint = await runner.checkpoint();
      await runner.stop();
    }
    return {
      dataSource,
      checkpoint,
      async dispose() {
        if (url) await dataSource.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await dataSource.destroy();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } finally {
    await nc.drain();
  }
}

/** Waits until the live projection has applied `sequence`. */
export async function waitForLiveCheckpoint(
  live: DataSource,
  stream: string,
  sequence: number,
  timeoutMs: number,
): Promise<void> {
  if (!(await pollCheckpoint(live, { name: BUDGET_LEDGER_PROJECTION, stream }, sequence, timeoutMs, 200)))
    throw new Error(`live projection did not reach ${sequence} within ${timeoutMs} ms`);
}

export interface Comparison {
  readonly usageEqual: boolean;
  readonly receiptsEqual: boolean;
  readonly digestEqual: boolean;
  readonly receipts: number;
  readonly resigned: number;
  /** Receipts whose hash chain the rebuild re-checked as linked (issue 12 item 2). */
  readonly linked: number;
}

export async function compareWithLive(live: DataSource, rebuilt: DataSource): Promise<Comparison> {
  const usage = async (ds: DataSource) =>
    JSON.stringify(await ds.manager.find(UsageRow, { order: { capabilityId: 'ASC', grantIndex: 'ASC' } }), (_, v) =>
      typeof v === 'bigint' ? v.toString() : v,
    );
  const receipts = async (ds: DataSource) => ds.manager.find(ReceiptRow, { order: { receiptId: 'ASC' } });
  const [liveReceipts, rebuiltReceipts] = [await receipts(live), await receipts(rebuilt)];
  const tables = Object.values(BUDGET_TABLES);
  return {
    usageEqual: (await usage(live)) === (await usage(rebuilt)),
    receiptsEqual: JSON.stringify(liveReceipts) === JSON.stringify(rebuiltReceipts),
    digestEqual: (await projectionDigest(live, tables)) === (await projectionDigest(rebuilt, tables)),
    receipts: rebuiltReceipts.length,
    resigned: rebuiltReceipts.filter((r) => r.signatureCheck === 'resigned').length,
    linked: rebuiltReceipts.filter((r) => r.chainCheck === 'linked').length,
  };
}
