// The projection database a service opens at boot (under the namespace's migration lock),
// and the names of the leases that coordinate replicas. Free of Nest, so the projection
// worker thread can use it too.
import { openDataSource, type TallyDataSourceOptions } from '@tally/platform-typeorm';
import type { DataSource } from 'typeorm';
import { DependencyUnavailable } from './boot.js';
import type { TallyConfig } from './config.schema.js';
import type { NatsRuntime } from './nats-runtime.js';
import { ProjectionLease } from './projection-lease.js';

/** The database part of a service: its entities and migrations. */
export type ServiceDatabase = Pick<TallyDataSourceOptions, 'entities' | 'migrations'>;

/** The bucket that holds a namespace's leases: projection leadership and the migration lock. */
export function leaseBucketName(namespace: string): string {
  return `${namespace.toUpperCase().replace(/-/g, '_')}_LEASES`;
}

/** The lease whose holder runs a service's projections. */
export function projectorLeaseKey(service: string): string {
  return `projector.${service}`;
}

/** The lease whose holder migrates the projection database. */
export const MIGRATIONS_LEASE_KEY = 'migrations';

/** How long a projection lease lives without renewal: a holder that dies frees it this much later. */
export const PROJECTOR_LEASE_TTL_MS = 10_000;

export async function openServiceDatabase(config: TallyConfig, database: ServiceDatabase): Promise<DataSource> {
  try {
    return await openDataSource({
      databaseUrl: config.database.url,
      sqlitePath: config.database.sqlite_path,
      entities: database.entities,
      migrations: database.migrations,
      sqliteBusyTimeoutMs: 10_000,
      postgresPoolSize: 10,
      postgresConnectTimeoutMs: 5_000,
      postgresStatementTimeoutMs: 30_000,
    });
  } catch (error) {
    const where = config.database.url ? 'PostgreSQL at DATABASE_URL' : `SQLite at ${config.database.sqlite_path}`;
    throw new DependencyUnavailable(where, `Check the database setting. ${(error as Error).message}`, error);
  }
}

export function leaseBucketOf(nats: NatsRuntime): string {
  return leaseBucketName(nats.names.namespace);
}

/**
 * Opens the database under the namespace's migration lock. Both services (and every
 * replica) migrate the same database at boot; TypeORM's runner is not safe when two
 * processes run it at once ("table tally_migrations already exists"), so they take
 * turns. The lock is a lease in NATS KV: a holder that dies frees it after its TTL.
 */
export async function openServiceDatabaseLocked(
  config: TallyConfig,
  database: ServiceDatabase,
  nats: NatsRuntime,
  holderId: string,
): Promise<DataSource> {
  const lock = await ProjectionLease.open({
    js: nats.js,
    bucket: leaseBucketOf(nats),
    key: MIGRATIONS_LEASE_KEY,
    holderId,
    // One bucket holds every lease, so they share its TTL.
    ttlMs: PROJECTOR_LEASE_TTL_MS,
    replicas: config.streams.replicas,
  });
  const deadline = Date.now() + MIGRATION_LOCK_WAIT_MS;
  while (!(await lock.tryAcquire())) {
    if (Date.now() > deadline)
      throw new DependencyUnavailable(
        'The migration lock',
        `Another process has held it for over ${MIGRATION_LOCK_WAIT_MS} ms.`,
      );
    await new Promise((r) => setTimeout(r, 250));
  }
  const renew = setInterval(() => void lock.tryAcquire(), 3_000);
  try {
    return await openServiceDatabase(config, database);
  } finally {
    clearInterval(renew);
    await lock.release();
  }
}

const MIGRATION_LOCK_WAIT_MS = 120_000;
