// The projection database: PostgreSQL when a URL is configured, otherwise an embedded
// SQLite file. Schema changes are always migrations (synchronize is off everywhere), so
// the tables a test sees are the tables production gets.
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { DataSource, type DataSourceOptions, type EntitySchema, type MixedList, type QueryRunner } from 'typeorm';
import { ProjectionCheckpoint } from './checkpoint.entity.js';
import { CreateProjectionCheckpoint1767225600000 } from './migrations/1767225600000-create-projection-checkpoint.js';
import { CreateProjectionQuarantine1767226545000 } from './migrations/1767226545000-create-projection-quarantine.js';
import { QuarantinedAggregate } from './quarantine.entity.js';

/** The embedded default: relative to the working directory, like the rest of `.tally/`. */
export const DEFAULT_SQLITE_PATH = '.tally/projections.sqlite';
export const MIGRATIONS_TABLE = 'tally_migrations';

type EntityClass = abstract new (...args: never[]) => object;
type MigrationClass = new () => object;

export interface TallyDataSourceOptions {
  /** PostgreSQL connection URL. When set, PostgreSQL is used; otherwise SQLite. */
  readonly databaseUrl?: string | undefined;
  /** PostgreSQL schema that holds every Tally table (isolation per install or per test). */
  readonly schema?: string | undefined;
  /** SQLite file; defaults to DEFAULT_SQLITE_PATH. Ignored when databaseUrl is set. */
  readonly sqlitePath?: string | undefined;
  /** Projection entities; the checkpoint and quarantine entities are always added. */
  readonly entities: readonly (EntityClass | EntitySchema)[];
  /** Projection migrations; the checkpoint and quarantine migrations are always added. */
  readonly migrations: readonly MigrationClass[];
  /** How long SQLite waits on a lock held by another process before SQLITE_BUSY. */
  readonly sqliteBusyTimeoutMs: number;
  readonly postgresPoolSize: number;
  readonly postgresConnectTimeoutMs: number;
  /** Server-side bound on any one statement, so a stuck query fails instead of hanging a batch. */
  readonly postgresStatementTimeoutMs: number;
  readonly logging?: boolean;
}

export type DatabaseKind = 'postgres' | 'sqlite';

export function databaseKind(dataSource: DataSource): DatabaseKind {
  return dataSource.options.type === 'postgres' ? 'postgres' : 'sqlite';
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export function createTallyDataSource(options: TallyDataSourceOptions): DataSource {
  const entities: MixedList<EntityClass | EntitySchema> = [
    ProjectionCheckpoint,
    QuarantinedAggregate,
    ...options.entities,
  ];
  const migrations: MixedList<MigrationClass> = [
    CreateProjectionCheckpoint1767225600000,
    CreateProjectionQuarantine1767226545000,
    ...options.migrations,
  ];
  const common = {
    entities: entities as DataSourceOptions['entities'],
    migrations: migrations as DataSourceOptions['migrations'],
    migrationsTableName: MIGRATIONS_TABLE,
    // Each migration commits on its own, so a failure leaves the earlier ones applied and visible.
    migrationsTransactionMode: 'each' as const,
    synchronize: false,
    migrationsRun: false,
    logging: options.logging ?? false,
  };
  if (options.databaseUrl) {
    const schema = options.schema ?? 'public';
    if (!SCHEMA_NAME.test(schema))
      throw new Error(`schema must match ${SCHEMA_NAME.source}, got ${JSON.stringify(schema)}`);
    return new DataSource({
      ...common,
      type: 'postgres',
      url: options.databaseUrl,
      schema,
      poolSize: options.postgresPoolSize,
      connectTimeoutMS: options.postgresConnectTimeoutMs,
      extra: { statement_timeout: options.postgresStatementTimeoutMs },
    });
  }
  const path = sqliteFile(options);
  const dataSource = new DataSource({
    ...common,
    type: 'better-sqlite3',
    database: path,
    timeout: options.sqliteBusyTimeoutMs,
    // WAL lets readers (the HTTP API, `tally verify`) run while the projector writes.
    enableWAL: true,
    prepareDatabase: (db: { defaultSafeIntegers(on: boolean): void; pragma(sql: string): unknown }) => {
      // Integers come back as bigint, never as a silently rounded number (see integer-columns.ts).
      db.defaultSafeIntegers(true);
      // With WAL, NORMAL can lose the last commits on power loss but never tears one; rows and
      // checkpoint commit together, so a lost commit is simply replayed from the stream.
      db.pragma('synchronous = NORMAL');
    },
  });
  beginTransactionsImmediate(dataSource);
  return dataSource;
}

/** What TypeORM's SQLite query runner sends to open a transaction, and what Tally sends instead. */
export const SQLITE_BEGIN_DEFERRED = 'BEGIN TRANSACTION';
export const SQLITE_BEGIN_IMMEDIATE = 'BEGIN IMMEDIATE TRANSACTION';

/**
 * Every SQLite transaction takes the write lock when it begins (ADR 0020). A deferred
 * transaction that has read and then writes gets SQLITE_BUSY at once in WAL mode, whatever
 * the busy timeout, when another connection (the other service, another replica, or this
 * service's other thread) wrote in between; an immediate one waits for the lock under the
 * busy timeout instead. TypeORM has no setting for this, so its one BEGIN statement is
 * rewritten on the driver's single query runner; a test proves the lock is taken up front.
 */
function beginTransactionsImmediate(dataSource: DataSource): void {
  const driver = dataSource.driver as unknown as { createQueryRunner(mode: string): QueryRunner };
  const create = driver.createQueryRunner.bind(driver);
  const rewritten = new WeakSet<QueryRunner>();
  driver.createQueryRunner = (mode: string) => {
    const runner = create(mode);
    if (rewritten.has(runner)) return runner;
    const query = runner.query.bind(runner) as (sql: string, ...rest: unknown[]) => Promise<unknown>;
    (runner as { query: unknown }).query = (sql: string, ...rest: unknown[]) =>
      query(sql === SQLITE_BEGIN_DEFERRED ? SQLITE_BEGIN_IMMEDIATE : sql, ...rest);
    rewritten.add(runner);
    return runner;
  };
}

/**
 * Initializes the data source, creates the SQLite directory or the PostgreSQL schema if
 * missing, and runs pending migrations (each in its own transaction).
 */
export async function openDataSource(options: TallyDataSourceOptions): Promise<DataSource> {
  const dataSource = createTallyDataSource(options);
  if (databaseKind(dataSource) === 'sqlite') mkdirSync(dirname(sqliteFile(options)), { recursive: true });
  await dataSource.initialize();
  try {
    if (databaseKind(dataSource) === 'postgres') {
      await dataSource.query(`CREATE SCHEMA IF NOT EXISTS ${dataSource.driver.escape(postgresSchema(dataSource))}`);
    }
    await dataSource.runMigrations({ transaction: 'each' });
  } catch (error) {
    await dataSource.destroy();
    throw error;
  }
  return dataSource;
}

function sqliteFile(options: TallyDataSourceOptions): string {
  return resolve(options.sqlitePath ?? DEFAULT_SQLITE_PATH);
}

export function postgresSchema(dataSource: DataSource): string {
  const options = dataSource.options as { schema?: string };
  return options.schema ?? 'public';
}

/** The table's name as SQL, schema-qualified on PostgreSQL, for the few raw statements. */
export function qualifiedTable(dataSource: DataSource, table: string): string {
  const escaped = dataSource.driver.escape(table);
  return databaseKind(dataSource) === 'postgres'
    ? `${dataSource.driver.escape(postgresSchema(dataSource))}.${escaped}`
    : escaped;
}
