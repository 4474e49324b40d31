// The composition shared by both services: typed config, JSON logs, NATS with verified
// streams, the projection database, projections under a lease, the HTTP API with
// health/readiness/metrics/OpenAPI and problem+json errors, durable command handlers,
// background loops, and a graceful shutdown on SIGTERM/SIGINT.
import { Controller, Get, Inject, Module, type DynamicModule, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { CustomTransportStrategy } from '@nestjs/microservices';
import { randomUUID } from 'node:crypto';
import { publishDeadLetter } from '@tally/platform-jetstream';
import { openDataSource, type TallyDataSourceOptions } from '@tally/platform-typeorm';
import type { DataSource } from 'typeorm';
import { DependencyUnavailable } from './boot.js';
import type { TallyConfig } from './config.schema.js';
import { HealthController, MetricsRegistry, ReadinessRegistry } from './health.js';
import { JsonLogger } from './json-logger.js';
import { startNatsRuntime, type NatsRuntime } from './nats-runtime.js';
import { problemValidationPipe, ProblemFilter, type RejectedRequest } from './problem.js';
import { ProjectionHost, type ProjectionSpec } from './projection-host.js';
import { ProjectionLease } from './projection-lease.js';

export const HOST_CONTEXT = Symbol('HOST_CONTEXT');
export const OPENAPI_DOCUMENT = Symbol('OPENAPI_DOCUMENT');

export interface HostContext {
  readonly service: string;
  readonly instanceId: string;
  readonly config: TallyConfig;
  readonly logger: JsonLogger;
  readonly nats: NatsRuntime;
  readonly dataSource: DataSource;
  readonly metrics: MetricsRegistry;
  readonly readiness: ReadinessRegistry;
  readonly projections: ProjectionHost;
}

export interface BackgroundTask {
  readonly name: string;
  stop(): Promise<void>;
}

export interface ServiceDefinition {
  readonly service: string;
  readonly httpPort: number;
  readonly database: Pick<TallyDataSourceOptions, 'entities' | 'migrations'>;
  readonly projections: (ctx: Omit<HostContext, 'projections'>) => ProjectionSpec[];
  readonly openapi: Record<string, unknown>;
  readonly module: (ctx: HostContext) => DynamicModule;
  readonly transports?: (ctx: HostContext) => Promise<CustomTransportStrategy[]>;
  readonly background?: (ctx: HostContext) => Promise<BackgroundTask[]>;
}

@Controller()
class OpenApiController {
  constructor(@Inject(OPENAPI_DOCUMENT) private readonly document: Record<string, unknown>) {}

  @Get('openapi.json')
  openapi() {
    return this.document;
  }
}

@Module({})
class HostModule {}

export async function openServiceDatabase(config: TallyConfig, database: ServiceDefinition['database']): Promise<DataSource> {
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

/** The bucket that holds the namespace's leases: projection leadership and the migration lock. */
export function leaseBucketOf(nats: NatsRuntime): string {
  return `${nats.names.namespace.toUpperCase().replace(/-/g, '_')}_LEASES`;
}

/**
 * Opens the database under the namespace's migration lock. Both services (and every
 * replica) migrate the same database at boot; TypeORM's runner is not safe when two
 * processes run it at once ("table tally_migrations already exists"), so they take
 * turns. The lock is a lease in NATS KV: a holder that dies frees it after its TTL.
 */
export async function openServiceDatabaseLocked(config: TallyConfig, database: ServiceDefinition['database'], nats: NatsRuntime, holderId: string): Promise<DataSource> {
  const lock = await ProjectionLease.open({ js: nats.js, bucket: leaseBucketOf(nats), key: 'migrations', holderId, ttlMs: 10_000, replicas: config.streams.replicas });
  const deadline = Date.now() + MIGRATION_LOCK_WAIT_MS;
  while (!(await lock.tryAcquire())) {
    if (Date.now() > deadline) throw new DependencyUnavailable('The migration lock', `Another process has held it for over ${MIGRATION_LOCK_WAIT_MS} ms.`);
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

export async function runService(definition: ServiceDefinition, config: TallyConfig): Promise<void> {
  const logger = new JsonLogger(definition.service, config.log_level);
  const nats = await startNatsRuntime(config, definition.service);
  logger.event(nats.durability.acks_backed_by_fsync ? 'info' : 'warn', 'NATS durability', { durability: nats.durability });
  const instanceId = `${definition.service}-${randomUUID().slice(0, 8)}`;
  const dataSource = await openServiceDatabaseLocked(config, definition.database, nats, instanceId);
  const metrics = new MetricsRegistry();
  const readiness = new ReadinessRegistry();
  const base = { service: definition.service, instanceId, config, logger, nats, dataSource, metrics, readiness };
  const lease = await ProjectionLease.open({
    js: nats.js,
    bucket: leaseBucketOf(nats),
    key: `projector.${definition.service}`,
    holderId: instanceId,
    ttlMs: 10_000,
    replicas: config.streams.replicas,
  });
  const projections = new ProjectionHost({ js: nats.js, dataSource, specs: definition.projections(base), lease, logger, leaseRenewMs: 3_000, restartDelayMaxMs: 30_000, batchSizeMax: 500, batchWaitMs: 5, waitPollMs: 5 });
  const ctx: HostContext = { ...base, projections };
  readiness.add(nats.readiness);
  readiness.add({ name: 'database', check: async () => (await dataSource.query('SELECT 1'), { ok: true, details: { kind: dataSource.options.type } }) });
  readiness.add(projections.readiness());
  await projections.start();

  const app = await createHttpApp(definition, ctx);
  // Command handlers bring their own pipes (commandValidationPipe): the HTTP pipe and problem+json filter must not apply to them.
  for (const strategy of (await definition.transports?.(ctx)) ?? []) app.connectMicroservice({ strategy }, { inheritAppConfig: false });
  await app.startAllMicroservices();
  const background = (await definition.background?.(ctx)) ?? [];
  await app.listen(definition.httpPort, '0.0.0.0');
  logger.event('info', `${definition.service} listening`, { http: `http://127.0.0.1:${definition.httpPort}`, instance: instanceId });
  onShutdown(async () => {
    logger.event('info', `${definition.service} stopping`);
    for (const task of background) await task.stop();
    await app.close();
    await projections.stop();
    await dataSource.destroy();
    await nats.close();
  });
}

async function createHttpApp(definition: ServiceDefinition, ctx: HostContext): Promise<INestApplication> {
  const root: DynamicModule = {
    module: HostModule,
    global: true,
    imports: [definition.module(ctx)],
    controllers: [HealthController, OpenApiController],
    providers: [
      { provide: HOST_CONTEXT, useValue: ctx },
      { provide: ReadinessRegistry, useValue: ctx.readiness },
      { provide: MetricsRegistry, useValue: ctx.metrics },
      { provide: OPENAPI_DOCUMENT, useValue: definition.openapi },
    ],
    exports: [HOST_CONTEXT, ReadinessRegistry, MetricsRegistry],
  };
  const app = await NestFactory.create<NestExpressApplication>(root, { logger: ctx.logger, bodyParser: false });
  app.useBodyParser('json', { limit: '1mb' });
  app.useGlobalPipes(problemValidationPipe());
  app.useGlobalFilters(new ProblemFilter((rejected) => deadLetterRequest(ctx, rejected), (error) => ctx.logger.error(error)));
  return app;
}

/** Rejected HTTP input lands in the dead-letter stream with its reason, like a bad message. */
async function deadLetterRequest(ctx: HostContext, rejected: RejectedRequest): Promise<void> {
  await publishDeadLetter(
    ctx.nats.js,
    ctx.nats.names,
    {
      source: `http-${ctx.service}`,
      reason: 'validation_failed',
      detail: `${rejected.method} ${rejected.path}`,
      errors: rejected.errors,
      originalSubject: `http:${rejected.method}:${rejected.path}`,
      data: Buffer.from(JSON.stringify(rejected.body ?? null)),
    },
    ctx.config.nats.publish_timeout_ms,
  );
}

function onShutdown(stop: () => Promise<void>): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    const timer = setTimeout(() => process.exit(1), 30_000);
    stop().then(
      () => (clearTimeout(timer), process.exit(0)),
      () => process.exit(1),
    );
    void signal;
  };
  process.once('SIGTERM', handler);
  process.once('SIGINT', handler);
}
